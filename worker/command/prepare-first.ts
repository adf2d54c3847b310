/**
 * The first blocks' host phase, run by the host's build job (worker/builds/build-job-processor.ts)
 * once the experiment's builds are made and before any card of this host is leased to it
 * (orchestrator/scheduler/build-phase.ts preparesBeforeLease): one resident rank process per card
 * the job names, started as the rank that holds a card starts the next block's (ORCH_HOST_PHASE=1,
 * no device visible, no card lock), left in the card's prepared slot; a card the job names twice
 * (more blocks than cards) gets a second, for the block after its first, in its spare slot: the
 * first block is the spec's own size and may end before a prepare() started at its start would
 * (card-time3: 31.8 s of block against 34.9 s of prepare()). The job ends when each has
 * answered `prepared` or ended, so the scheduler grants the first block a card only then: its
 * prepare() — imports, weights read into host memory — is never paid inside a lease. Whichever
 * card the block gets, its rank adopts one of them (prepared-slots.ts take) and opens it on that
 * card; a process that failed its prepare() leaves its reason, and the rank starts inside its
 * lease saying why.
 */
import type { Logger } from 'pino';
import type { BuildJob } from '../../jobs/build-job.ts';
import type { Card } from '../../jobs/card.ts';
import { OrchError } from '../../jobs/errors.ts';
import type { BuildCache } from '../builds/build-cache.ts';
import type { RunAs } from '../run-as.ts';
import { type PreparedSlots, preparedKeepMs, preparedKey, preparedWithin, unadoptedSink } from './prepared-slots.ts';
import { rankCaches } from './rank-caches.ts';
import { DEFAULT_HELLO_TIMEOUT_S, spawnResidentProgram } from './spawn-resident.ts';

export interface PrepareFirstContext {
  cache: BuildCache;
  /** this worker's cards by id */
  cards: ReadonlyMap<string, Card>;
  slots: PreparedSlots;
  injectLib: string | null;
  runAs: RunAs | null;
  log: Logger;
}

/** What the host phase of the first blocks came to: per card, prepare()'s own time or why it did not finish. */
export interface FirstPrepared {
  card: string;
  prepare_ms: number | null;
  why?: string;
}

export async function prepareFirstBlocks(
  job: Pick<BuildJob, 'experiment' | 'workload' | 'own' | 'prepare'>,
  ctx: PrepareFirstContext,
): Promise<FirstPrepared[]> {
  const ids = job.prepare ?? [];
  const w = job.workload;
  if (ids.length === 0) return [];
  if (w.runtime !== 'command' || w.run.mode !== 'resident')
    throw new OrchError(
      'BUILD_JOB_INVALID',
      `build job of ${job.experiment}: prepare names cards, its workload is not a resident command`,
    );
  const cards = ids.map((id) => {
    const card = ctx.cards.get(id);
    if (card === undefined)
      throw new OrchError(
        'BLOCK_WRONG_HOST',
        `build job of ${job.experiment}: card ${id} to prepare is not this worker's`,
      );
    return card;
  });
  // the rank path's build (command-builds.ts prepareCommandBuilds): the one this job just made, from the cache
  const build =
    job.own && w.build !== undefined ? await ctx.cache.ensure({ build: w.build, experiment: job.experiment }) : null;
  const artifactDir = build?.dir ?? null;
  const caches = rankCaches(ctx.cache.root, build?.key ?? null, ctx.runAs);
  const helloMs = (w.run.hello_timeout_s ?? DEFAULT_HELLO_TIMEOUT_S) * 1000;
  const key = preparedKey(job.experiment, artifactDir);
  const seen = new Set<string>();
  const started = cards.map((card) => {
    // a card named twice (more blocks than cards): its second process waits in the spare slot for the block after the first
    const kind = seen.has(card.id) ? 'spare' : 'own';
    seen.add(card.id);
    const sink = unadoptedSink();
    const log = ctx.log.child({ card: card.id, host_phase: true });
    const proto = spawnResidentProgram(
      {
        rank: 0,
        world: 1,
        card,
        workload: w,
        artifactDir,
        caches,
        traceProbe: false,
        injectLib: ctx.injectLib,
        runAs: ctx.runAs,
        log,
        devices: null,
      },
      sink,
    );
    ctx.slots.put(card.id, { key, experiment: job.experiment, proto, sink }, preparedKeepMs(helloMs), kind);
    return { card: card.id, proto };
  });
  return Promise.all(
    started.map(async ({ card, proto }): Promise<FirstPrepared> => {
      const line = await preparedWithin(proto, helloMs);
      if (!(line instanceof Error)) return { card, prepare_ms: line.prepare_ms };
      // ended, its reason left in its slot: the rank that comes for it starts inside its lease and says why
      ctx.slots.fail(card, proto, line.message);
      return { card, prepare_ms: null, why: line.message };
    }),
  );
}
