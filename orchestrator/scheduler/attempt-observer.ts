/**
 * Follows one granted block attempt until it ends: dispatches its host jobs (a no-op for those
 * that exist: re-attaching), and wakes on their ends (the dispatcher's QueueEvents) or on the
 * slow safety poll, which also notices a cancel that revoked no lease of this attempt.
 */
import type { AttemptEnd } from '../dispatch/block-dispatcher.ts';
import { BlockDispatcher } from '../dispatch/block-dispatcher.ts';
import type { BlockState, ExperimentRecord, GangPart } from '../../store/experiment-store.ts';
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

/** How long revoked ranks get to end their jobs after a cancel before the attempt is given up. */
const CANCEL_GRACE_MS = 5000;

export async function observeAttempt(ctx: SchedulerContext, exp: ExperimentRecord, st: BlockState, term: Term): Promise<Outcome> {
  const { dispatcher, store, leases } = ctx;
  const ends: (AttemptEnd | null)[] = st.gang.map(() => null);
  let signalled = false;
  let wake: () => void = () => undefined;
  const settle = () => {
    signalled = true;
    wake();
  };
  void term.ended.then(settle);
  for (const [i, part] of st.gang.entries()) {
    const ref = { experiment: exp.id, block: st.block, attempt: st.attempt, host: part.host, cards: part.cards, epoch: part.epoch };
    const held = await heldUnder(ctx, part);
    const exists = await dispatcher.queue(part.host).getJob(part.job);
    if (!exists && !held) {
      ends[i] = { state: 'lost', jobId: part.job, reason: `attempt ${st.attempt}: its leases on ${part.cards.join(',')} ended before the host job was dispatched` };
      continue;
    }
    if (!exists) await dispatcher.dispatch(buildBlockJob(exp, st.block, st.attempt, part));
    void dispatcher.waitEnd(ref).then(
      (end) => ((ends[i] = end), settle()),
      (err: unknown) => ((ends[i] = { state: 'lost', jobId: part.job, reason: `cannot follow the host job: ${String(err)}` }), settle()),
    );
  }
  const committed = async () => (await ctx.results.committedAttempt(exp.id, st.block)) === st.attempt;
  let cancelledAt: number | null = null;
  for (;;) {
    if (term.aborted) return { kind: 'deposed' };
    signalled = false;
    const state = await store.state(exp.id);
    if ((state === 'cancelling' || state === 'cancelled') && cancelledAt === null) {
      cancelledAt = Date.now();
      await revokeGang(leases, st.gang, 'experiment cancelled');
    }
    const all = ends.every((e) => e !== null);
    if (cancelledAt !== null) {
      // Revoked ranks die at once and their worker fails the job; a dead worker never does.
      if (all || Date.now() - cancelledAt > CANCEL_GRACE_MS) {
        for (const p of st.gang) await dispatcher.queue(p.host).getJob(p.job).then((j) => j?.remove()).catch(() => undefined);
        if (await committed()) return { kind: 'committed' };
        const why = (await store.get(exp.id))?.reason;
        return { kind: 'cancelled', reason: why ?? 'cancelled by orch cancel' };
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
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ctx.tuning.safetyPollMs);
      wake = () => (clearTimeout(timer), resolve());
    });
    wake = () => undefined;
  }
}

async function heldUnder(ctx: SchedulerContext, part: Omit<GangPart, 'job'>): Promise<boolean> {
  const held = await ctx.leases.held(part.cards);
  return held.length === part.cards.length && held.every((l) => l.epoch === part.epoch);
}

/** The gang parts of a granted attempt, each with its host job's deterministic id. */
export function gangWithJobs(experiment: string, block: number, attempt: number, gang: Omit<GangPart, 'job'>[]): GangPart[] {
  return gang.map((p) => ({ ...p, job: BlockDispatcher.jobId({ experiment, block, attempt, host: p.host }) }));
}
