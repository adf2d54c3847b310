/**
 * A RankRunner decorator that stamps, on the host's CLOCK_MONOTONIC (process.hrtime, the clock of
 * graphrt's t_start_ns/t_end_ns), the worker's side of each op: request written, first line back,
 * final line parsed. With the rank's own span this splits the time between two reps into
 * rank → worker (line out and parsed), worker (between answer and next request) and worker →
 * rank (request read).
 */
import type { RankHandle, RankLine, RankOp, RankRunner, RankStart } from '../../worker/rank-runner.ts';

export interface OpStamps {
  op: string;
  rank: number;
  requested: number;
  firstLine: number | null;
  answered: number | null;
  t_start_ns: number | null;
  t_end_ns: number | null;
}

const now = () => Number(process.hrtime.bigint());

export class TimingRankRunner implements RankRunner {
  readonly stamps: OpStamps[] = [];

  constructor(private readonly inner: RankRunner) {}

  start(s: RankStart): RankHandle {
    let current: OpStamps | null = null;
    const h = this.inner.start({
      ...s,
      onLine: (line: RankLine, raw: string) => {
        if (current !== null && current.firstLine === null) current.firstLine = now();
        s.onLine(line, raw);
      },
    });
    return {
      ...h,
      pids: () => h.pids(),
      kill: () => h.kill(),
      close: (g) => h.close(g),
      request: async (op: RankOp, timeoutMs: number) => {
        const st: OpStamps = {
          op: op.id,
          rank: s.rank,
          requested: now(),
          firstLine: null,
          answered: null,
          t_start_ns: null,
          t_end_ns: null,
        };
        current = st;
        this.stamps.push(st);
        const line = await h.request(op, timeoutMs);
        st.answered = now();
        if (line.type === 'rep' && 't_start_ns' in line) {
          st.t_start_ns = line.t_start_ns ?? null;
          st.t_end_ns = line.t_end_ns ?? null;
        }
        return line;
      },
    };
  }
}
