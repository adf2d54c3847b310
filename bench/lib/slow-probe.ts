/**
 * A foreign-process probe that takes `ms` longer per look: the cost of the nvidia-smi call a GPU
 * host pays on every look, emulated on CPU cards (which have none), so the bench shows what the
 * look costs between reps when it sits on the measurement path and when it does not.
 */
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
