/**
 * Launch counts of one rep of a `run.mode: per_rep` program (workload.run.launch_counts: true):
 * on a cuda card the rep's processes run under orch's injection library (launch-counter.ts) with
 * ORCH_INJECT_REPORT naming a file of this rep's own, which each CUDA process appends its counts to
 * at exit; after the rep, jobs/per-rep-counts.ts sums them over the steps the rep reported, or, with
 * an NVTX step range (workload.run.launch_counts_step_range), takes them per range the library saw. Where
 * nothing can be counted (a cpu card, no library on this host) the rep says why, never zeros.
 */
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LaunchCounts } from '../../jobs/orch-rank-protocol.ts';
import { type PerRepLaunchCounts, perRepCounts } from '../../jobs/per-rep-counts.ts';
import { readRegularFile } from '../../jobs/regular-file.ts';
import { injectionEnv } from './launch-counter.ts';

/** The variable naming the file the injection library appends its exit report to (orch_inject.cpp). */
export const REPORT_VARIABLE = 'ORCH_INJECT_REPORT';
/** A report bigger than this is not read (a line is about 250 bytes; 1000 processes at most are read). */
const MAX_REPORT_BYTES = 1024 * 1024;

export type RepLaunches = PerRepLaunchCounts | Extract<LaunchCounts, { source: 'none' }>;

export interface PerRepLaunchesOptions {
  backend: 'cpu' | 'cuda';
  lib: string | null;
  /** the environment the program gets from the spec (run.env): another profiler's library there is refused */
  programEnv: Record<string, string>;
  /** workload.run.launch_counts_step_range: the NVTX range that is one step; null: per rep ÷ steps */
  stepRange: string | null;
}

/** One rep's counting: `env` for its processes, then `read` once they ended. */
export class PerRepLaunches {
  private readonly file: string | null;
  readonly env: Record<string, string>;

  constructor(private readonly o: PerRepLaunchesOptions) {
    const inject = injectionEnv({
      backend: o.backend,
      counts: true,
      traceProbe: false,
      lib: o.lib,
      programEnv: o.programEnv,
      stepRange: o.stepRange,
    });
    this.file =
      Object.keys(inject).length === 0
        ? null
        : join(tmpdir(), `orch-inject-report-${process.pid}-${randomUUID()}.jsonl`);
    this.env = this.file === null ? {} : { ...inject, [REPORT_VARIABLE]: this.file };
  }

  /** A rep that failed: its report file, if any, removed unread. */
  discard(): void {
    if (this.file !== null) rmSync(this.file, { force: true });
  }

  /**
   * What the rep's processes counted over `steps` steps (its metric lines), or per NVTX step range
   * with the first `excluded` ranges dropped as those lines' warm-up; the report file is removed.
   */
  read(steps: number, excluded: number): RepLaunches {
    if (this.o.backend !== 'cuda')
      return { source: 'none', reason: "a cpu card: no CUDA driver loads orch's injection library" };
    if (this.file === null)
      return {
        source: 'none',
        reason:
          "orch's injection library is not built on this worker (liborch_inject.so beside its graphrt, or ORCH_INJECT_LIB)",
      };
    try {
      // The program (another user where orch is root) may have put anything at this path in the
      // shared temporary directory: a FIFO there blocked this read, and the worker with it.
      const got = readRegularFile(this.file, MAX_REPORT_BYTES, { followLinks: false });
      if (!got.ok && got.code !== 'missing') return { source: 'none', reason: `${this.file}: ${got.reason}` };
      const text = got.ok ? got.bytes.toString('utf8') : null;
      return perRepCounts(
        text,
        steps,
        this.file,
        this.o.stepRange === null ? null : { name: this.o.stepRange, excluded },
      );
    } finally {
      rmSync(this.file, { force: true });
    }
  }
}
