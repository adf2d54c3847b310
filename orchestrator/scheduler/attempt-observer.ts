/**
 * Follows one granted block attempt until it ends: dispatches its host jobs (a no-op for those
 * that exist: re-attaching; none, and the attempt failed, for a record whose submit signature does
 * not verify), and wakes on their ends (the dispatcher's QueueEvents) or on the
 * slow safety poll, which also notices a cancel. A cancel is graceful: the gang is told (a
 * cancel notice), its workers commit what they measured and end their jobs, and only then — or
 * after CANCEL_GRACE_MS, whichever comes first — are its leases revoked.
 */

import { plannedReps, repKey } from '../../jobs/rep-ref.ts';
import { publishCancel } from '../../store/cancel-notice.ts';
import type { BlockState, ExperimentRecord, GangPart } from '../../store/experiment-store.ts';
import type { AttemptEnd } from '../dispatch/block-dispatcher.ts';
import { BlockDispatcher } from '../dispatch/block-dispatcher.ts';
import { buildBlockJob } from './build-block-job.ts';
import type { UnsuccessfulEnd } from './retry-decision.ts';
import { revokeGang, type SchedulerContext, type Term } from './scheduler-context.ts';

export type Outcome =
  | { kind: 'committed' }
  | { kind: 'cancelled'; reason: string }
  /** ended for good, never retried */
  | { kind: 'failed'; reason: string }
  /** a part ended without committing: retry-decision.ts says what follows */
  | { kind: 'unsuccessful'; end: UnsuccessfulEnd }
  | { kind: 'deposed' };

/**
 * After a cancel, how long the workers get to stop gracefully (abort the rep in flight, commit
 * what they measured, release the leases) before the gang is revoked anyway: a dead or hung
 * worker never holds cards longer.
 */
const CANCEL_GRACE_MS = 5000;

export interface ObserveOptions {
  /**
   * This processor recorded the attempt just now (block-begin-attempt.lua): no host job of it
   * can exist and its leases were granted a moment ago, so it dispatches without first looking
   * for a job to re-attach to (two reads per part on the path from grant to host start).
   */
  recorded?: boolean;
  /** called when a part's host job ended (its cards are free again) */
  partEnded?: () => void;
}

export async function observeAttempt(
  ctx: SchedulerContext,
  exp: ExperimentRecord,
  st: BlockState,
  term: Term,
  opts: ObserveOptions = {},
): Promise<Outcome> {
  const { dispatcher, store, leases } = ctx;
  const ends: (AttemptEnd | null)[] = st.gang.map(() => null);
  let signalled = false;
  let wake: () => void = () => undefined;
  const settle = () => {
    signalled = true;
    wake();
  };
  void term.ended.then(settle);
  const partEnded = (i: number, end: AttemptEnd) => {
    ends[i] = end;
    opts.partEnded?.();
    settle();
  };
  // Never a host job from a record the scheduler refuses: a record read again since admission (a
  // later block's sized plan, block-lifecycle.ts; a re-attach after a failover) is checked as it
  // now is in Redis, where anyone may have rewritten its spec (submit-admission.ts).
  const refused = ctx.refusal(exp);
  if (refused !== null) {
    await revokeGang(leases, st.gang, refused);
    return { kind: 'failed', reason: refused };
  }
  await dispatchParts(ctx, exp, st, opts, ends, partEnded);
  const committed = async () => (await ctx.results.committedAttempt(exp.id, st.block)) === st.attempt;
  let cancelledAt: number | null = null;
  for (;;) {
    if (term.aborted) return { kind: 'deposed' };
    signalled = false;
    const state = await store.state(exp.id);
    if ((state === 'cancelling' || state === 'cancelled') && cancelledAt === null) {
      cancelledAt = Date.now();
      // The notice first, the revocation after: a revoked gang could no longer commit the reps it
      // measured. orch cancel sent one already; this one reaches an attempt granted since.
      const why = (await store.get(exp.id))?.reason ?? 'cancelled by orch cancel';
      for (const p of st.gang)
        await publishCancel(ctx.redis, ctx.prefix, p, why).catch((err: unknown) =>
          ctx.log.warn({ err }, 'cancel notice not published; the gang is revoked after the grace'),
        );
    }
    const all = ends.every((e) => e !== null);
    if (cancelledAt !== null) {
      // The workers commit what they measured and end their jobs; a dead or hung one never does.
      if (all || Date.now() - cancelledAt > CANCEL_GRACE_MS) {
        await revokeGang(leases, st.gang, 'experiment cancelled');
        for (const p of st.gang)
          await dispatcher
            .queue(p.host)
            .getJob(p.job)
            .then((j) => j?.remove())
            .catch(() => undefined);
        const why = (await store.get(exp.id))?.reason ?? 'cancelled by orch cancel';
        // a block that committed all its reps before the cancel is done; one cut short is cancelled
        if (await committed())
          return (await fullyMeasured(ctx, exp, st.block)) ? { kind: 'committed' } : { kind: 'cancelled', reason: why };
        return { kind: 'cancelled', reason: why };
      }
    } else {
      const bad = ends.find((e): e is UnsuccessfulEnd => e !== null && e.state !== 'completed');
      if (bad) {
        // One failed part fails the gang: revoke the other hosts' parts (KillOnBadExit).
        await revokeGang(leases, st.gang, `another part of block ${st.block} attempt ${st.attempt} ended ${bad.state}`);
        if (await committed()) return { kind: 'committed' };
        return { kind: 'unsuccessful', end: bad };
      }
      if (all) {
        if (await committed()) return { kind: 'committed' };
        return { kind: 'failed', reason: `attempt ${st.attempt} ended without committing its results` };
      }
    }
    if (signalled) continue;
    // after a cancel, wake by the end of the grace at the latest
    const sleepMs =
      cancelledAt === null
        ? ctx.tuning.safetyPollMs
        : Math.min(ctx.tuning.safetyPollMs, Math.max(0, cancelledAt + CANCEL_GRACE_MS + 1 - Date.now()));
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, sleepMs);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    wake = () => undefined;
  }
}

/**
 * Each part's host job, every part at once (a spread gang's parts go out together): dispatched
 * unless it is already queued, and followed to its end. A part whose leases ended before its job
 * was ever dispatched is lost at once.
 */
async function dispatchParts(
  ctx: SchedulerContext,
  exp: ExperimentRecord,
  st: BlockState,
  opts: ObserveOptions,
  ends: (AttemptEnd | null)[],
  partEnded: (i: number, end: AttemptEnd) => void,
): Promise<void> {
  const { dispatcher } = ctx;
  await Promise.all(
    st.gang.map(async (part, i) => {
      const ref = {
        experiment: exp.id,
        block: st.block,
        attempt: st.attempt,
        host: part.host,
        cards: part.cards,
        epoch: part.epoch,
      };
      if (!opts.recorded) {
        const [held, exists] = await Promise.all([heldUnder(ctx, part), dispatcher.queue(part.host).getJob(part.job)]);
        if (!exists && !held) {
          ends[i] = {
            state: 'lost',
            jobId: part.job,
            reason: `attempt ${st.attempt}: its leases on ${part.cards.join(',')} ended before the host job was dispatched`,
          };
          return;
        }
        if (!exists) await dispatcher.dispatch(buildBlockJob(exp, st.block, st.attempt, part));
      } else {
        await dispatcher.dispatch(buildBlockJob(exp, st.block, st.attempt, part));
      }
      void dispatcher.waitEnd(ref).then(
        (end) => partEnded(i, end),
        (err: unknown) =>
          partEnded(i, { state: 'lost', jobId: part.job, reason: `cannot follow the host job: ${String(err)}` }),
      );
    }),
  );
}

async function fullyMeasured(ctx: SchedulerContext, exp: ExperimentRecord, block: number): Promise<boolean> {
  const measured = await ctx.results.measuredFields(exp.id);
  return plannedReps(exp.plan, block).every((r) => measured.has(repKey(r)));
}

async function heldUnder(ctx: SchedulerContext, part: Omit<GangPart, 'job'>): Promise<boolean> {
  const held = await ctx.leases.held(part.cards);
  return held.length === part.cards.length && held.every((l) => l.epoch === part.epoch);
}

/** The gang parts of a granted attempt, each with its host job's deterministic id. */
export function gangWithJobs(
  experiment: string,
  block: number,
  attempt: number,
  gang: Omit<GangPart, 'job'>[],
): GangPart[] {
  return gang.map((p) => ({ ...p, job: BlockDispatcher.jobId({ experiment, block, attempt, host: p.host }) }));
}
