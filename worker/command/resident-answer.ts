/**
 * A resident command rank's answers (jobs/orch-rank-protocol.ts) as the command runtime's lines
 * (jobs/command-line.ts), which is all the block executor, the event stream and the analysis
 * read: a rep becomes a command `rep` line, an identity answer a `gate` line judged here (the
 * program never judges its own gate), an error an `error` line. An answer that does not fit its
 * request (steps or warm-up counts other than asked, hashes missing) is a protocol fault.
 */
import type { BlockJob } from '../../jobs/block-job.ts';
import type { CommandError, CommandGate, CommandRep } from '../../jobs/command-line.ts';
import type { OrchRankError, OrchRankIdentity, OrchRankRep, OrchRankTrace } from '../../jobs/orch-rank-protocol.ts';
import { compareIdentity, stepHash } from '../../jobs/output-hashes.ts';

/** What is wrong with an answer for its request, or null when it fits. */
export function misfit(
  line: OrchRankRep | OrchRankIdentity | OrchRankTrace,
  job: Pick<BlockJob, 'warmup' | 'steps' | 'gates'>,
): string | null {
  if (line.type === 'trace') {
    const steps = line.trace.source === 'cupti' ? line.trace.steps.length : job.steps;
    return steps === job.steps ? null : `trace ${line.id} has ${steps} traced steps; ${job.steps} steps were asked`;
  }
  if (line.type === 'rep') {
    if (line.step_ms.length !== job.steps)
      return `rep ${line.id} has ${line.step_ms.length} step times; ${job.steps} steps were asked`;
    if (line.warmup_ms.length !== job.warmup)
      return `rep ${line.id} has ${line.warmup_ms.length} warm-up times; ${job.warmup} warm-up steps were asked`;
    if (line.hashes.length !== line.step_ms.length)
      return `rep ${line.id} has ${line.hashes.length} steps of hashes for ${line.step_ms.length} steps`;
    const l = line.launches;
    if (l?.source === 'cupti') {
      // one count per counted step: the warm-up's when the library paused for the timed steps
      const counted = l.counted ?? 'timed';
      const steps = counted === 'warmup' ? line.warmup_ms.length : line.step_ms.length;
      if (steps === 0) return `rep ${line.id} says its launch counts are of its warm-up steps, but it ran none`;
      const short = (['kernels', 'graphs', 'memcpy', 'memset', 'syncs'] as const).find((k) => l[k].length !== steps);
      if (short !== undefined)
        return `rep ${line.id} has ${l[short].length} launch counts (${short}) for ${steps} ${counted === 'warmup' ? 'warm-up' : 'timed'} steps (counted: ${counted})`;
    }
    return null;
  }
  const replays = job.gates.identity?.replays ?? 0;
  if (line.replays !== replays) return `identity ${line.id} ran ${line.replays} replays; ${replays} were asked`;
  return null;
}

export function residentRep(line: OrchRankRep, job: Pick<BlockJob, 'warmup' | 'steps'>): CommandRep {
  return {
    v: 1,
    type: 'rep',
    id: line.id,
    arm: line.arm,
    workload: 'command',
    backend: 'command',
    mode: line.mode,
    warmup: job.warmup,
    steps: job.steps,
    step_ms: line.step_ms,
    step_index: line.step_ms.map((_, i) => i),
    excluded: 0,
    wall_ms: Math.max(0, line.t_end_ns - line.t_start_ns) / 1e6,
    graph: line.graph,
    warmup_ms: line.warmup_ms,
    hashes: line.hashes.map(stepHash),
    ...(line.counters === undefined ? {} : { counters: line.counters }),
    ...(line.launches === undefined ? {} : { launches: line.launches }),
    ...(line.clocks === undefined ? {} : { clocks: line.clocks }),
    ...(line.xid_events === undefined ? {} : { xid_events: line.xid_events }),
    ...(line.ecc_errors === undefined ? {} : { ecc_errors: line.ecc_errors }),
    t_start_ns: line.t_start_ns,
    t_end_ns: line.t_end_ns,
    final: true,
  };
}

/** The gate, judged: eager step k against replay k, output by output (`outputs`: the hello's order). */
export function residentGate(line: OrchRankIdentity, outputs: readonly string[]): CommandGate {
  const verdict = compareIdentity(line.eager, line.graph, line.replays, outputs);
  const launches = line.counters?.launches_per_step;
  return {
    v: 1,
    type: 'gate',
    id: line.id,
    arm: line.arm,
    name: 'identity',
    backend: 'command',
    mode: line.mode,
    replays: line.replays,
    ...verdict,
    eager_hashes: line.eager.map(stepHash),
    graph_hashes: line.graph.map(stepHash),
    nodes: null,
    launches_per_step: typeof launches === 'number' && Number.isInteger(launches) && launches >= 0 ? launches : null,
    ...(line.t_start_ns === undefined ? {} : { t_start_ns: line.t_start_ns }),
    ...(line.t_end_ns === undefined ? {} : { t_end_ns: line.t_end_ns }),
    final: true,
  };
}

export function residentError(line: OrchRankError, requestId: string): CommandError {
  return {
    v: 1,
    type: 'error',
    id: line.id ?? requestId,
    code: line.code,
    message: line.message,
    ...(line.frame === undefined ? {} : { frame: line.frame }),
    ...(line.other_blockers === undefined ? {} : { other_blockers: line.other_blockers }),
    final: true,
  };
}
