/**
 * A foreign-process probe that takes `ms` longer per look: the cost of the nvidia-smi call a GPU
 * host pays on every look, emulated on CPU cards (which have none), so the bench shows what the
 * look costs between reps when it sits on the measurement path and when it does not.
 */
import { execFile } from 'node:child_process';
import type { Card } from '../../jobs/card.ts';
import type { ForeignProcess, ForeignProcessProbe } from '../../worker/foreign-processes.ts';

export class SlowProbe implements ForeignProcessProbe {
  constructor(
    private readonly inner: ForeignProcessProbe,
    private readonly ms: number,
  ) {}

  async list(card: Card, lockPath: string, ours: ReadonlySet<number>): Promise<ForeignProcess[]> {
    await new Promise((r) => setTimeout(r, this.ms));
    return this.inner.list(card, lockPath, ours);
  }
}

/**
 * A foreign-process probe that runs `file` (a process that exits at once) on every look before
 * the inner one: the fork and exec a GPU host's nvidia-smi look costs the worker's thread, which
 * Node's spawn does synchronously, on CPU cards that have no nvidia-smi.
 */
export class SpawnProbe implements ForeignProcessProbe {
  constructor(
    private readonly inner: ForeignProcessProbe,
    private readonly file = 'true',
  ) {}

  async list(card: Card, lockPath: string, ours: ReadonlySet<number>): Promise<ForeignProcess[]> {
    await new Promise<void>((r, j) => execFile(this.file, [], (err) => (err ? j(err) : r())));
    return this.inner.list(card, lockPath, ours);
  }
}
