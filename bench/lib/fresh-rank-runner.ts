/**
 * A RankRunner that gives every op a fresh rank process: the pre-resident way of measuring (a
 * process start, a card lock, a first capture per rep), for the bench's ratio against resident
 * ranks. The previous process is closed (its card lock released) before the next one starts;
 * the handle's own `exited` settles only at close/kill, as the executor expects of a rank that
 * lives for the block.
 */
import type { RankExit, RankHandle, RankLine, RankOp, RankRunner, RankStart } from '../../worker/rank-runner.ts';

export class FreshPerRepRunner implements RankRunner {
  constructor(private readonly inner: RankRunner) {}

  start(s: RankStart): RankHandle {
    // later processes' hello lines are not the block's: only the first reaches the stream
    const quiet: RankStart = { ...s, onLine: (l, raw) => (l.type === 'hello' ? undefined : s.onLine(l, raw)) };
    let cur = this.inner.start(s);
    let used = false;
    let resolveExit!: (e: RankExit) => void;
    const exited = new Promise<RankExit>((r) => (resolveExit = r));
    return {
      rank: s.rank,
      card: s.card,
      pids: () => cur.pids(),
      ready: cur.ready,
      exited,
      request: async (op: RankOp, timeoutMs: number): Promise<RankLine> => {
        if (used) {
          await cur.close(5_000);
          cur = this.inner.start(quiet);
          await cur.ready;
        }
        used = true;
        return cur.request(op, timeoutMs);
      },
      kill: () => {
        cur.kill();
        void cur.exited.then(resolveExit);
      },
      close: async (graceMs: number) => {
        const e = await cur.close(graceMs);
        resolveExit(e);
        return e;
      },
    };
  }
}
