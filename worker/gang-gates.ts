/**
 * The identity gates of a block attempt: for each arm that needs one, an `identity` op on every
 * rank; the gang passes when every rank passes, its first bad replay the earliest of any rank's.
 */
import { armsNeedingIdentity, type BlockArm } from '../jobs/block-job.ts';
import { type BlockedArm, CaptureBlockedError } from '../jobs/capture-blocker.ts';
import { indexAt } from '../jobs/index-at.ts';
import type { CommitGate } from '../store/result-store.ts';
import type { GangContext } from './gang-context.ts';
import type { GangRanks } from './gang-ranks.ts';
import { opId } from './rank-runner.ts';

export class GangGates {
  constructor(
    private readonly gang: GangContext,
    private readonly ranks: GangRanks,
  ) {}

  /** arms whose capture failed at their gate (jobs/capture-blocker.ts): no gate, and their reps are not sent */
  readonly blocked = new Map<string, BlockedArm>();

  /** Every gate the job's arms need, one after another; an arm whose capture fails has none. */
  async run(): Promise<CommitGate[]> {
    const gates: CommitGate[] = [];
    for (const [i, arm] of armsNeedingIdentity(this.gang.job).entries()) {
      try {
        gates.push(await this.gate(arm, i));
      } catch (err) {
        if (!(err instanceof CaptureBlockedError)) throw err;
        this.blocked.set(arm.name, err.blocker);
        this.gang.log.warn(
          { arm: arm.name, reason: err.message },
          'capture failed at the identity gate: the arm is not measured, the block goes on',
        );
      }
    }
    return gates;
  }

  private async gate(arm: BlockArm, i: number): Promise<CommitGate> {
    const { job } = this.gang;
    const lines = await this.ranks.all({ id: opId(job, 'identity', i), op: 'identity', arm }, 'gate');
    const bad = lines.map((l) => l.first_bad_replay).filter((x): x is number => x !== null);
    return {
      block: job.block,
      arm: arm.name,
      result: {
        block: job.block,
        arm: arm.name,
        name: 'identity',
        pass: lines.every((l) => l.pass),
        first_bad_replay: bad.length > 0 ? Math.min(...bad) : null,
        detail: lines.map((l, r) => ({
          rank: this.gang.rankOf(r),
          card: indexAt(job.cards, r, 'card'),
          pass: l.pass,
          replays: l.replays,
          first_bad_replay: l.first_bad_replay,
          eager_hashes: l.eager_hashes,
          graph_hashes: l.graph_hashes,
          nodes: l.nodes,
          launches_per_step: l.launches_per_step,
          ...('first_bad_output' in l ? { first_bad_output: l.first_bad_output } : {}),
        })),
      },
    };
  }
}
