/**
 * The leader's view of the queue (the active experiments), read so that a grant pass costs about
 * the same with 10 000 queued experiments as with 10: at 10 000 queued every pass read every
 * active id, each one's state and its cached record, drove a processor for every block and
 * planned over all of them, and `orch serve` finished about 5 experiments/s at a full core.
 *
 * - Records are read once per term (spec and plan are immutable after submit), and only the
 *   experiments registered since the last pass are read from the queue (by seq, in bounded steps).
 * - A pass looks at a window: the head of the queue, in queue order, until its experiments hold
 *   `blockBudget` blocks, plus every experiment the pass must keep acting on (one whose blocks
 *   this term drives, one running, being cancelled or ended). A block behind the window could be
 *   granted only by backfill past that many blocks; it waits until the head moves up to it.
 * - The window's states are read on every pass (one script), the rest of the queue's at most every
 *   `tailEveryMs`: a cancel of a queued experiment far behind the head is seen that much later.
 *   The reads of a pass go out together: the new experiments, the states of the window as the
 *   last pass left it (a new experiment is queued until its state is read on the next pass).
 */

import { codeOf } from '../../jobs/error-codes.ts';
import { messageOf } from '../../jobs/message-of.ts';
import type { ExperimentRecord, ExperimentState, ExperimentStore } from '../../store/experiment-store.ts';
import { compareQueued } from './grant-planner.ts';

/** New active experiments read per pass: a term's first passes over a long queue catch up in steps of this. */
const NEW_PER_PASS = 500;

export interface WindowEntry {
  id: string;
  exp: ExperimentRecord;
  /** read by this pass; null when the experiment is gone */
  state: ExperimentState | null;
}

export class QueueWindow {
  private readonly records = new Map<string, Promise<ExperimentRecord | null>>();
  /** the active experiments whose record was read, in queue order once `sorted` */
  private ordered: ExperimentRecord[] = [];
  private sorted = true;
  /** the highest seq read from the queue this term (seqs start at 1) */
  private lastSeq = 0;
  /** each known experiment's state at its last read */
  private readonly states = new Map<string, ExperimentState | null>();
  private tailReadAt = 0;

  constructor(
    private readonly store: ExperimentStore,
    private readonly tailEveryMs: number,
    /** an experiment whose stored record does not parse: it is failed, the queue goes on */
    private readonly onRefused: (id: string, err: unknown) => void = () => undefined,
  ) {}

  /** The registered experiment (spec and plan; not a fresh state), read once per term. */
  record(id: string): Promise<ExperimentRecord | null> {
    let exp = this.records.get(id);
    if (!exp) {
      exp = this.store.get(id);
      this.records.set(id, exp);
      // a failed or missing read is not remembered: the next caller reads again
      exp.then(
        (e) => e ?? this.records.delete(id),
        () => this.records.delete(id),
      );
    }
    return exp;
  }

  /**
   * The window from what is known now, in queue order: the head until its experiments hold
   * `blockBudget` blocks, and every one `keep` names or not queued at its last read.
   */
  pick(blockBudget: number, keep: (id: string) => boolean): ExperimentRecord[] {
    if (!this.sorted) {
      this.ordered.sort((a, b) =>
        compareQueued({ priority: a.priority, seq: a.seq, block: 0 }, { priority: b.priority, seq: b.seq, block: 0 }),
      );
      this.sorted = true;
    }
    const picked: ExperimentRecord[] = [];
    let budget = blockBudget;
    for (const exp of this.ordered) {
      // not read yet: it was registered queued
      const state = this.states.get(exp.id) ?? 'queued';
      if (budget <= 0 && state === 'queued' && !keep(exp.id)) continue;
      picked.push(exp);
      budget -= exp.plan.blocks.length;
    }
    return picked;
  }

  /**
   * One round trip of reads: the experiments registered since the last one (their records, once
   * each, cost a second), the states of `window` (what `pick` gave), and every known state when
   * the last such read is `tailEveryMs` old.
   */
  async refresh(window: ExperimentRecord[]): Promise<void> {
    const tail = Date.now() - this.tailReadAt >= this.tailEveryMs;
    await Promise.all([this.readNew(), this.readStates(tail ? this.ordered : window)]);
  }

  /** Each experiment of `window` with its state at its last read (a new one's: queued); gone ones leave. */
  entries(window: ExperimentRecord[]): WindowEntry[] {
    const entries: WindowEntry[] = [];
    for (const exp of window) {
      const state = this.states.has(exp.id) ? (this.states.get(exp.id) ?? null) : 'queued';
      if (state === null) this.forget(exp.id);
      else entries.push({ id: exp.id, exp, state });
    }
    return entries;
  }

  /** The experiment left the queue (settled) or is gone. */
  forget(id: string): void {
    this.records.delete(id);
    this.states.delete(id);
    const i = this.ordered.findIndex((e) => e.id === id);
    if (i >= 0) this.ordered.splice(i, 1);
  }

  /** The experiments registered since the last read, their records read (once each). */
  private async readNew(): Promise<void> {
    const fresh = await this.store.activeAfter(this.lastSeq, NEW_PER_PASS);
    if (fresh.length === 0) return;
    // A failed read fails the pass before lastSeq moves: the next pass reads the same ones again.
    // A record that is there but not a record (written by hand into Redis) fails its experiment
    // alone: it would fail every later pass too, and hold up every experiment behind it.
    const exps = await Promise.all(
      fresh.map((f) => this.record(f.id).catch((err: unknown) => this.refuseRecord(f.id, err))),
    );
    this.lastSeq = Math.max(this.lastSeq, ...fresh.map((f) => f.seq));
    for (const exp of exps) if (exp) this.ordered.push(exp);
    this.sorted = false;
  }

  private async refuseRecord(id: string, err: unknown): Promise<null> {
    if (codeOf(err) !== 'STORED_RECORD_INVALID') throw err;
    this.onRefused(id, err);
    await this.store.finish(id, 'failed', `STORED_RECORD_INVALID: ${messageOf(err)}`);
    return null;
  }

  private async readStates(exps: ExperimentRecord[]): Promise<void> {
    if (exps === this.ordered) this.tailReadAt = Date.now();
    const ids = exps.map((e) => e.id);
    const states = await this.store.states(ids);
    for (const [i, id] of ids.entries()) this.states.set(id, states[i] ?? null);
  }
}
