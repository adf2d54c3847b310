/**
 * An experiment's event stream as a Chrome / Perfetto trace (Trace Event Format, JSON object
 * form). One process per card (pid numbered, named `host/card`), one thread per rank (tid =
 * rank). Slices ("X"): each block attempt on each card (first to last event of that attempt),
 * each rep and gate (from the rank's previous event to its answer: the request's wall time on
 * that rank), each capture (capture + instantiate time, ending at its line); instants ("i") for
 * the worker's events (rank exits, failures, foreign processes); counters ("C") for the clocks a
 * rep line carries; on the host's worker track a slice per build a block waited for (build-start to
 * build-end, the wait for the host build lock inside it). Time is the stream entry id's
 * milliseconds (Redis' clock), in µs from the first event.
 */
import type { StreamEvent } from '../../jobs/stream-event.ts';
import type { WorkerEvent } from '../../jobs/worker-event.ts';

export interface TraceEvent {
  name: string;
  ph: 'X' | 'i' | 'C' | 'M';
  ts: number;
  pid: number;
  tid: number;
  dur?: number;
  cat?: string;
  s?: 'g' | 'p' | 't';
  args?: Record<string, unknown>;
}

export interface ChromeTrace {
  traceEvents: TraceEvent[];
  displayTimeUnit: 'ms';
  otherData: Record<string, string>;
}

type BuildStart = Extract<WorkerEvent, { event: 'build-start' }>;
type BuildEnd = Extract<WorkerEvent, { event: 'build-end' }>;

/** A build between its build-start and build-end events. */
interface OpenBuild {
  pid: number;
  tid: number;
  start: number;
  line: BuildStart;
  base: Record<string, unknown>;
  wait: { ts: number; position: number | null } | null;
}

/** µs of a stream id `ms-seq` (seq keeps entries of one millisecond apart and in order). */
function micros(id: string): number {
  const [ms, seq] = id.split('-');
  return Number(ms) * 1000 + Math.min(Number(seq ?? 0), 999);
}

function median(xs: number[]): number | null {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1]!;
}

export function chromeTrace(experiment: string, events: StreamEvent[]): ChromeTrace {
  const out: TraceEvent[] = [];
  // a loop, not Math.min(...): a spread of a long stream overruns the call stack
  let t0 = events.length > 0 ? Infinity : 0;
  for (const e of events) t0 = Math.min(t0, micros(e.id));
  const pids = new Map<string, number>();
  const threads = new Set<string>();
  const pidOf = (e: StreamEvent): number => {
    // the worker's own events carry no card: they go on the host's worker track
    const name = e.card === '' ? `${e.host}/worker` : `${e.host}/${e.card}`;
    let pid = pids.get(name);
    if (pid === undefined) {
      pid = pids.size + 1;
      pids.set(name, pid);
      out.push({ name: 'process_name', ph: 'M', ts: 0, pid, tid: 0, args: { name } });
    }
    if (!threads.has(`${pid}/${e.rank}`)) {
      threads.add(`${pid}/${e.rank}`);
      out.push({ name: 'thread_name', ph: 'M', ts: 0, pid, tid: e.rank, args: { name: e.card === '' ? 'worker' : `rank ${e.rank}` } });
    }
    return pid;
  };

  // per (block, attempt, card, rank): the attempt's span and the rank's previous event
  const spans = new Map<string, { pid: number; tid: number; first: number; last: number; e: StreamEvent; outcome: string | null }>();
  const previous = new Map<string, number>();
  const builds = new Map<string, OpenBuild>();
  const buildSlices = (b: OpenBuild, end: number, last: BuildEnd | null) => {
    const key = b.line.key;
    out.push({ pid: b.pid, tid: b.tid, name: `build ${key.slice(0, 12)}`, cat: 'build', ph: 'X', ts: b.start, dur: end - b.start,
      args: { ...b.base, key, recipe: b.line.recipe, commit: b.line.commit, outcome: last?.outcome ?? 'unfinished', ok: last?.ok ?? null, wait_ms: last?.wait_ms ?? null } });
    if (b.wait === null) return;
    const waitEnd = last === null ? end : Math.min(end, b.wait.ts + Math.round(last.wait_ms * 1000));
    out.push({ pid: b.pid, tid: b.tid, name: `wait for build lock${b.wait.position === null ? '' : ` #${b.wait.position}`}`, cat: 'build', ph: 'X', ts: b.wait.ts, dur: Math.max(0, waitEnd - b.wait.ts), args: { ...b.base, key, position: b.wait.position } });
  };
  for (const e of events) {
    const ts = micros(e.id) - t0;
    const pid = pidOf(e);
    const tid = e.rank;
    const key = `${e.block}/${e.attempt}/${e.card}/${e.rank}`;
    const span = spans.get(key) ?? { pid, tid, first: ts, last: ts, e, outcome: null };
    span.last = ts;
    spans.set(key, span);
    const since = previous.get(key) ?? span.first;
    previous.set(key, ts);
    const line = e.event;
    if (line === null || typeof line !== 'object') continue;
    const base = { pid, tid, args: { block: e.block, attempt: e.attempt, epoch: e.epoch, committed: e.committed } };
    switch (line.type) {
      case 'rep': {
        out.push({ ...base, name: `rep ${line.arm}`, cat: 'rep', ph: 'X', ts: since, dur: ts - since, args: { ...base.args, arm: line.arm, mode: line.mode, backend: line.backend, steps: line.step_ms.length, median_step_ms: median(line.step_ms) } });
        if ('clocks' in line && line.clocks) {
          for (const [at, reading] of [[since, line.clocks.start], [ts, line.clocks.end]] as const) {
            out.push({ pid, tid, name: 'clocks', ph: 'C', ts: at, args: { sm_mhz: reading.sm_mhz, mem_mhz: reading.mem_mhz } });
          }
        }
        break;
      }
      case 'gate':
        out.push({ ...base, name: `gate identity ${line.arm}`, cat: 'gate', ph: 'X', ts: since, dur: ts - since, args: { ...base.args, arm: line.arm, pass: line.pass } });
        break;
      case 'capture': {
        const dur = line.ok ? Math.round((line.capture_ms + line.instantiate_ms) * 1000) : 0;
        const start = Math.max(since, ts - dur);
        out.push({ ...base, name: `capture ${line.arm}`, cat: 'capture', ph: 'X', ts: start, dur: ts - start, args: { ...base.args, arm: line.arm, ok: line.ok, nodes: line.ok ? line.nodes : null, reason: line.ok ? null : line.reason } });
        break;
      }
      case 'worker': {
        const build = `${key}/${'key' in line ? line.key : ''}`;
        if (line.event === 'build-start') {
          builds.set(build, { pid, tid, start: ts, line, base: base.args, wait: null });
          break;
        }
        if (line.event === 'build-wait' || line.event === 'build-end') {
          const open = builds.get(build);
          if (open && line.event === 'build-wait') open.wait = { ts, position: line.position };
          if (open && line.event === 'build-end') {
            builds.delete(build);
            buildSlices(open, ts, line);
          }
          break;
        }
        if (line.event === 'block-committed') span.outcome = 'committed';
        else if (line.event === 'block-failed') span.outcome = `failed: ${line.reason}`;
        if (line.event !== 'block-start') out.push({ ...base, name: line.event, cat: 'worker', ph: 'i', s: 't', ts, args: { ...base.args, ...line } });
        break;
      }
      case 'error':
        out.push({ ...base, name: `error ${line.code}`, cat: 'error', ph: 'i', s: 't', ts, args: { ...base.args, message: line.message } });
        break;
      default:
        break;
    }
  }
  // a build whose end never reached the stream (its worker died): up to its attempt's last event
  for (const [k, b] of builds) buildSlices(b, spans.get(k.slice(0, k.lastIndexOf('/')))?.last ?? b.start, null);
  for (const s of spans.values()) {
    out.push({
      pid: s.pid,
      tid: s.tid,
      // block -1: the experiment's build phase on the host, before any card was leased (worker/builds/build-job-processor.ts)
      name: s.e.block < 0 ? `builds before any lease, attempt ${s.e.attempt}` : `${s.e.card === '' ? 'worker: ' : ''}block ${s.e.block} attempt ${s.e.attempt}`,
      cat: 'attempt',
      ph: 'X',
      ts: s.first,
      dur: s.last - s.first,
      args: { block: s.e.block, attempt: s.e.attempt, epoch: s.e.epoch, host: s.e.host, card: s.e.card, committed: s.e.committed, outcome: s.outcome },
    });
  }
  return { traceEvents: out, displayTimeUnit: 'ms', otherData: { experiment, clock: 'Redis stream ids (ms), from the first event' } };
}
