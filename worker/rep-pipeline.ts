/**
 * The rep loop of a block attempt: the planned reps in order, one-deep pipelined, each followed by
 * a foreign-process look, until the plan ends, the worker stops, or a cancel notice arrives.
 *
 * One-deep pipeline: the rep after the one being answered is already written to every rank, so
 * the rank starts it the moment it has written the answer before it; the worker's turnaround (the
 * answer parsed and streamed, the result kept, the look started: a fork and exec of nvidia-smi on
 * a GPU host) falls inside a rep, not between two. Only where every rank's process serves both in
 * order (RankHandle.queues), never for probes (their lines are gathered per request).
 *
 * The look after a rep runs while the next rep measures (on a GPU host 0.1-0.5 s of card time
 * otherwise idle between every two reps); its verdict is read once that rep has answered. A rep
 * that ran while a look found a foreign process is not kept: `fail` fails the block, `wait` waits
 * for it to go and runs the rep again — except in a spread gang's part, whose other hosts saw
 * nothing and go on: there the attempt fails with the transient FOREIGN_PROCESS, and the whole
 * gang runs again.
 *
 * hygiene: discard: a pair with a throttled rep runs again at the block's end, within the block
 * job's budget (worker/hygiene-reruns.ts), through the same loop.
 *
 * A spread gang's hosts must run the same reps (their collectives meet): no early stop. A rep
 * already sent is in flight: it runs to its end and is kept — except on cancel, which kills the
 * ranks mid-rep (a half rep is not measured) and keeps neither it nor the one behind it.
 */

import { type BlockedArm, CaptureBlockedError } from '../jobs/capture-blocker.ts';
import { OrchError } from '../jobs/errors.ts';
import type { ProbeRecord } from '../jobs/probe-record.ts';
import type { RepRef } from '../jobs/rep-ref.ts';
import type { CommitRep } from '../store/result-store.ts';
import type { ForeignGuard } from './foreign-guard.ts';
import type { GangContext } from './gang-context.ts';
import type { GangFate } from './gang-fate.ts';
import type { GangRanks } from './gang-ranks.ts';
import { rerunThrottled } from './hygiene-reruns.ts';
import type { LiveProgress } from './live-progress.ts';
import { armOf, type RankOp } from './rank-runner.ts';
import { type Measured, type RepMeasure, repOpId } from './rep-measure.ts';

export interface MeasuredReps {
  reps: CommitRep[];
  probes: ProbeRecord[];
  /** the position of the first planned rep not run (the worker stopped, or a cancel), else null */
  stoppedAt: number | null;
  /** reps of arms whose capture failed (jobs/capture-blocker.ts): not measured, the block went on */
  blocked: { p: RepRef; blocker: BlockedArm }[];
}

type Answer = Measured | { blocked: BlockedArm };

interface Sent {
  p: RepRef;
  measuring: Promise<Answer>;
}

export class RepPipeline {
  constructor(
    private readonly gang: GangContext,
    private readonly ranks: GangRanks,
    private readonly measure: RepMeasure,
    private readonly foreign: ForeignGuard,
    private readonly fate: GangFate,
    private readonly progress: LiveProgress,
    private readonly opts: { spread: boolean; stopping: () => boolean },
  ) {}

  /** arms whose capture failed in this attempt: their later reps are not sent */
  private readonly blockedArms = new Map<string, BlockedArm>();

  /** `blocked`: arms whose capture already failed (at their identity gate): their reps are not sent */
  async run(planned: RepRef[], blocked: ReadonlyMap<string, BlockedArm> = new Map()): Promise<MeasuredReps> {
    for (const [arm, b] of blocked) this.blockedArms.set(arm, b);
    const out = await this.measureList(planned, 0);
    const hygiene = this.gang.job.hygiene;
    // a spread gang's hosts would each re-run what their own cards saw: their collectives would not meet
    if (out.stoppedAt !== null || this.opts.spread || hygiene?.policy !== 'discard' || hygiene.reruns === 0) return out;
    const again = (list: RepRef[], round: number) =>
      this.measureList(list, round).then((m) => (m.stoppedAt === null ? m.reps : null));
    return { ...out, reps: await rerunThrottled(out.reps, planned, hygiene.reruns, again) };
  }

  /** `list` measured in order (re-run `round` of it, 0 the planned run); stoppedAt says where it stopped. */
  private async measureList(planned: RepRef[], round: number): Promise<MeasuredReps> {
    const out: MeasuredReps = { reps: [], probes: [], stoppedAt: null, blocked: [] };
    let look: Promise<string[]> | null = null;
    // `inFlight` is planned[i], sent; `behind` is planned[i + 1]
    let inFlight: Sent | null = null;
    let behind: Sent | null = null;
    this.fate.measuring = true;
    for (let i = 0; i < planned.length; ) {
      const p = planned[i] as RepRef;
      if (inFlight === null) {
        if (this.mayStop()) {
          out.stoppedAt = p.position;
          break;
        }
        inFlight = this.send(p, round);
      }
      const next = planned[i + 1];
      if (
        behind === null &&
        next !== undefined &&
        !this.measure.probing &&
        !this.mayStop() &&
        this.queues(p, next, round)
      )
        behind = this.send(next, round);
      const measured = await Promise.race([inFlight.measuring, this.fate.cancelled]);
      if (measured === null) {
        // cancelled mid-rep: its ranks die, the rep is not kept (nor the one behind it), nor the look at the rep before
        this.fate.abortRanks();
        look = null;
        out.stoppedAt = p.position;
        break;
      }
      const found = look === null ? [] : await this.fate.race(look);
      look = null;
      if (found.length > 0) {
        // a spread gang's other hosts never saw it: reps run again here alone would meet their
        // collectives reps apart, so the whole gang runs again (its start waits for the card)
        if (this.opts.spread) throw this.foreignInSpread(found);
        // this rep ran beside a foreign process, and the one behind it ran after it before
        // anyone looked again: neither is kept; both run again once the card is ours
        await this.foreign.guard(this.ranks.pids(), found);
        if (behind !== null) await this.fate.race(behind.measuring);
        inFlight = behind = null;
        continue;
      }
      if ('blocked' in measured) out.blocked.push({ p, blocker: measured.blocked });
      else {
        out.reps.push(measured.rep);
        if (round === 0) this.progress.rep(measured.rep);
        if (measured.record !== null) out.probes.push(measured.record);
      }
      i++;
      inFlight = behind;
      behind = null;
      look = this.foreign.look(this.ranks.pids());
      look.catch(() => {});
    }
    if (look !== null) await this.foreign.guard(this.ranks.pids(), await this.fate.race(look));
    return out;
  }

  private send(p: RepRef, round: number): Sent {
    const known = this.blockedArms.get(p.arm);
    const measuring: Promise<Answer> =
      known !== undefined
        ? Promise.resolve({ blocked: known })
        : this.measure.measure(p, round).catch((err: unknown) => {
            if (!(err instanceof CaptureBlockedError)) throw err;
            this.blockedArms.set(p.arm, err.blocker);
            this.gang.log.warn(
              { arm: p.arm, reason: err.message },
              'capture failed: the arm is not measured, the block goes on',
            );
            return { blocked: err.blocker };
          });
    // a rep sent behind one that fails is never awaited: the block fails with the first
    measuring.catch(() => {});
    return { p, measuring };
  }

  /** A foreign process seen while a spread gang's part measured: the attempt fails, transient (with `fail`, as the guard would). */
  private foreignInSpread(found: string[]): OrchError {
    const j = this.gang.job;
    const how =
      j.foreign_process === 'wait'
        ? `; block ${j.block} attempt ${j.attempt} is a gang across hosts, whose reps cannot run again on host ${this.gang.host} alone (foreign_process: wait): the whole gang runs again`
        : '';
    return new OrchError('FOREIGN_PROCESS', `${found.join('; ')}${how}`);
  }

  private mayStop(): boolean {
    return !this.opts.spread && (this.opts.stopping() || this.fate.cancelReason !== null);
  }

  /** Whether the rep `next` may be sent to every rank while `current` is answered. */
  private queues(current: RepRef, next: RepRef, round: number): boolean {
    const job = this.gang.job;
    const op = (q: RepRef): RankOp => ({ id: repOpId(job, q.position, round), op: 'rep', arm: armOf(job, q.arm) });
    return this.ranks.queues(op(current), op(next));
  }
}
