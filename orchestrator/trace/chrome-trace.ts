/**
 * An experiment as a Chrome / Perfetto trace (Trace Event Format, JSON object form). One process
 * per card (pid numbered, named `host/card`), one thread per rank (tid = rank). Slices ("X"):
 * each committed rep on each rank, from the committed record (jobs/rep-result.ts `answers`: the
 * rank's own span, `t_end_ns − t_start_ns`, ending when its worker read the answer), so a rep
 * line the event stream cut for length is still a slice; from the event stream, a live view:
 * each block attempt on each card (first to last event of that attempt), each gate (from the
 * rank's previous event to its answer), each capture (capture + instantiate time, ending at its
 * line); instants ("i") for the worker's events (rank exits, failures, foreign processes);
 * counters ("C") for the clocks a committed rep carries; on the host's worker track a slice per
 * build a block waited for (build-start to build-end, the wait for the host build lock inside it).
 * Each committed attempt on each of its ranks' cards and its hosts' worker tracks, with its phases
 * (the ranks starting, the identity gates with each committed gate's verdict), comes from its commit
 * record (jobs/commit-record.ts: the timeline and `ranks`), so a stream that cut or lost its events
 * still shows it, as does each rank's prepare() in the host phase (its `startup`); the stream gives
 * the attempts that did not commit.
 * Time is milliseconds in µs from the first event or rep: the stream entry ids' (Redis' clock) and
 * the workers' (the reps, the commit records), one machine's clock where Redis and the worker share a host.
 */
import type { CommitRecord } from '../../jobs/commit-record.ts';
import type { RankAnswer } from '../../jobs/gang-rep.ts';
import type { GateResult } from '../../jobs/gate-result.ts';
import type { RepResult } from '../../jobs/rep-result.ts';
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

/**
 * A rank's committed rep as a slice (µs), ending when its worker read the answer: its span on its
 * clock; without one (a per_rep command, an older graphrt) its process's wall time, else its steps'
 * sum; null for an impossible span (it ends before it starts).
 */
function repSlice(a: RankAnswer): { start: number; end: number } | null {
  const l = a.line;
  let us: number;
  if (l.t_start_ns !== undefined && l.t_end_ns !== undefined) {
    if (l.t_end_ns < l.t_start_ns) return null;
    us = Math.round((l.t_end_ns - l.t_start_ns) / 1000);
  } else
    us = Math.round(
      ('wall_ms' in l ? l.wall_ms : [...l.step_ms, ...(l.warmup_ms ?? [])].reduce((x, y) => x + y, 0)) * 1000,
    );
  const end = Math.round(a.answered_ms * 1000);
  return { start: end - us, end };
}

/** What a trace is drawn from: the committed records, and the event stream for the rest. */
export interface TraceInput {
  /** the committed reps (the rep slices) */
  reps: readonly RepResult[];
  /** block → its commit record (the committed attempts' slices) */
  commits: Readonly<Record<string, CommitRecord>>;
  /** the committed identity gates (their verdicts on the gates' slice) */
  gates: readonly GateResult[];
  /** the event stream: attempts that did not commit, captures, builds, the workers' events */
  events: readonly StreamEvent[];
}

/**
 * Each rank of a committed attempt adopted from the host phase (jobs/rank-startup.ts: host_phase,
 * prepare_ms): its prepare(), µs, drawn as ending at the lease's start plus what the rank waited
 * for it there (prepare_waited_ms), where it ended at the latest (the record holds how long it
 * took, not when; worker/command/prepare-first.ts, prepared-slots.ts).
 */
function hostPhaseSlices(
  c: CommitRecord,
): { rank: number; card: string; host: string; start: number; end: number; ms: number }[] {
  if (c.started === undefined) return [];
  const leaseStart = Math.round(c.started * 1000);
  return (c.startup ?? []).flatMap((s) => {
    const host = (c.ranks ?? []).find((r) => r.rank === s.rank && r.card === s.card)?.host;
    if (s.host_phase !== true || s.prepare_ms === undefined || host === undefined) return [];
    const end = leaseStart + Math.round((s.prepare_waited_ms ?? 0) * 1000);
    return [{ rank: s.rank, card: s.card, host, start: end - Math.round(s.prepare_ms * 1000), end, ms: s.prepare_ms }];
  });
}

/** A committed attempt's span and phases (µs, from its commit record); null without its timeline. */
function attemptPhases(c: CommitRecord): { name: string; start: number; end: number }[] | null {
  if (c.started === undefined || c.committed === undefined) return null;
  const us = (ms: number) => Math.round(ms * 1000);
  const phases = [{ name: 'attempt', start: us(c.started), end: us(c.committed) }];
  if (c.ready !== undefined) phases.push({ name: 'ranks starting', start: us(c.started), end: us(c.ready) });
  if (c.ready !== undefined && c.gated !== undefined && c.gated > c.ready)
    phases.push({ name: 'identity gates', start: us(c.ready), end: us(c.gated) });
  return phases;
}

export function chromeTrace(experiment: string, input: TraceInput): ChromeTrace {
  const { events, reps, commits, gates } = input;
  const out: TraceEvent[] = [];
  // a committed attempt drawn from its record: its stream span is not drawn again
  const recorded = new Map<number, { c: CommitRecord; phases: { name: string; start: number; end: number }[] }>();
  for (const [block, c] of Object.entries(commits)) {
    const phases = attemptPhases(c);
    if (phases !== null && (c.ranks ?? []).length > 0) recorded.set(Number(block), { c, phases });
  }
  // a loop, not Math.min(...): a spread of a long stream overruns the call stack
  let t0 = Infinity;
  for (const e of events) t0 = Math.min(t0, micros(e.id));
  for (const r of reps) for (const a of r.answers ?? []) t0 = Math.min(t0, repSlice(a)?.start ?? Infinity);
  for (const { c, phases } of recorded.values()) {
    t0 = Math.min(t0, phases[0]!.start);
    for (const h of hostPhaseSlices(c)) t0 = Math.min(t0, h.start);
  }
  if (!Number.isFinite(t0)) t0 = 0;
  const pids = new Map<string, number>();
  const threads = new Set<string>();
  const pidOf = (e: { host: string; card: string; rank: number }): number => {
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
      out.push({
        name: 'thread_name',
        ph: 'M',
        ts: 0,
        pid,
        tid: e.rank,
        args: { name: e.card === '' ? 'worker' : `rank ${e.rank}` },
      });
    }
    return pid;
  };

  // per (block, attempt, card, rank): the attempt's span and the rank's previous event
  const spans = new Map<
    string,
    {
      pid: number;
      tid: number;
      first: number;
      last: number;
      e: StreamEvent;
      outcome: string | null;
    }
  >();
  const previous = new Map<string, number>();
  const builds = new Map<string, OpenBuild>();
  const buildSlices = (b: OpenBuild, end: number, last: BuildEnd | null) => {
    const key = b.line.key;
    out.push({
      pid: b.pid,
      tid: b.tid,
      name: `build ${key.slice(0, 12)}`,
      cat: 'build',
      ph: 'X',
      ts: b.start,
      dur: end - b.start,
      args: {
        ...b.base,
        key,
        recipe: b.line.recipe,
        commit: b.line.commit,
        outcome: last?.outcome ?? 'unfinished',
        ok: last?.ok ?? null,
        wait_ms: last?.wait_ms ?? null,
      },
    });
    if (b.wait === null) return;
    const waitEnd = last === null ? end : Math.min(end, b.wait.ts + Math.round(last.wait_ms * 1000));
    out.push({
      pid: b.pid,
      tid: b.tid,
      name: `wait for build lock${b.wait.position === null ? '' : ` #${b.wait.position}`}`,
      cat: 'build',
      ph: 'X',
      ts: b.wait.ts,
      dur: Math.max(0, waitEnd - b.wait.ts),
      args: { ...b.base, key, position: b.wait.position },
    });
  };
  for (const e of events) {
    const ts = micros(e.id) - t0;
    const pid = pidOf(e);
    const tid = e.rank;
    const key = `${e.block}/${e.attempt}/${e.card}/${e.rank}`;
    const fromRecord = e.committed && recorded.has(e.block);
    const span = spans.get(key) ?? { pid, tid, first: ts, last: ts, e, outcome: null };
    span.last = ts;
    if (!fromRecord) spans.set(key, span);
    const since = previous.get(key) ?? span.first;
    previous.set(key, ts);
    const line = e.event;
    if (line === null || typeof line !== 'object') continue;
    const base = { pid, tid, args: { block: e.block, attempt: e.attempt, epoch: e.epoch, committed: e.committed } };
    switch (line.type) {
      // a rep is a slice of the committed record (below), never of the stream's copy
      case 'gate':
        // a committed attempt's gates are one slice of its record, with every gate's verdict
        if (fromRecord) break;
        out.push({
          ...base,
          name: `gate identity ${line.arm}`,
          cat: 'gate',
          ph: 'X',
          ts: since,
          dur: ts - since,
          args: { ...base.args, arm: line.arm, pass: line.pass },
        });
        break;
      case 'capture': {
        const dur = line.ok ? Math.round((line.capture_ms + line.instantiate_ms) * 1000) : 0;
        const start = Math.max(since, ts - dur);
        out.push({
          ...base,
          name: `capture ${line.arm}`,
          cat: 'capture',
          ph: 'X',
          ts: start,
          dur: ts - start,
          args: {
            ...base.args,
            arm: line.arm,
            ok: line.ok,
            nodes: line.ok ? line.nodes : null,
            reason: line.ok ? null : line.reason,
          },
        });
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
        // the build phase's prepare() is drawn from the committed record (hostPhaseSlices), not from here
        if (line.event === 'host-prepared') break;
        if (line.event === 'block-committed') span.outcome = 'committed';
        else if (line.event === 'block-failed') span.outcome = `failed: ${line.reason}`;
        if (line.event !== 'block-start')
          out.push({ ...base, name: line.event, cat: 'worker', ph: 'i', s: 't', ts, args: { ...base.args, ...line } });
        break;
      }
      case 'error':
        out.push({
          ...base,
          name: `error ${line.code}`,
          cat: 'error',
          ph: 'i',
          s: 't',
          ts,
          args: { ...base.args, message: line.message },
        });
        break;
      default:
        break;
    }
  }
  for (const r of reps) {
    for (const a of r.answers ?? []) {
      const slice = repSlice(a);
      if (slice === null) continue;
      const pid = pidOf(a);
      const tid = a.rank;
      const l = a.line;
      const args = {
        block: r.block,
        attempt: r.attempt,
        epoch: r.epoch,
        committed: true,
        arm: r.arm,
        rep: r.rep,
        position: r.position,
        mode: l.mode,
        backend: l.backend,
        steps: l.step_ms.length,
        median_step_ms: median(l.step_ms),
      };
      out.push({
        pid,
        tid,
        name: `rep ${r.arm}`,
        cat: 'rep',
        ph: 'X',
        ts: slice.start - t0,
        dur: slice.end - slice.start,
        args,
      });
      if (l.clocks) {
        for (const [at, reading] of [
          [slice.start, l.clocks.start],
          [slice.end, l.clocks.end],
        ] as const) {
          out.push({
            pid,
            tid,
            name: 'clocks',
            ph: 'C',
            ts: at - t0,
            args: { sm_mhz: reading.sm_mhz, mem_mhz: reading.mem_mhz },
          });
        }
      }
    }
  }
  for (const [block, { c, phases }] of recorded) {
    const verdicts = gates.filter((g) => g.block === block).map((g) => ({ arm: g.arm, pass: g.pass }));
    const base = { block, attempt: c.attempt, epoch: c.epoch, committed: true };
    const tracks = [
      ...(c.ranks ?? []).map((r) => ({ pid: pidOf(r), tid: r.rank, host: r.host, card: r.card, worker: false })),
      ...[...new Set((c.ranks ?? []).map((r) => r.host))].map((host) => ({
        pid: pidOf({ host, card: '', rank: 0 }),
        tid: 0,
        host,
        card: '',
        worker: true,
      })),
    ];
    for (const t of tracks)
      for (const ph of t.worker ? phases.slice(0, 1) : phases)
        out.push({
          pid: t.pid,
          tid: t.tid,
          name:
            ph.name === 'attempt'
              ? `${t.worker ? 'worker: ' : ''}block ${block} attempt ${c.attempt}`
              : `${ph.name}, block ${block}`,
          cat: ph.name === 'attempt' ? 'attempt' : 'phase',
          ph: 'X',
          ts: ph.start - t0,
          dur: Math.max(0, ph.end - ph.start),
          args: {
            ...base,
            host: t.host,
            card: t.card,
            ...(ph.name === 'attempt' ? { outcome: 'committed' } : {}),
            ...(ph.name === 'identity gates' ? { gates: verdicts } : {}),
          },
        });
  }
  for (const [block, { c }] of recorded)
    for (const h of hostPhaseSlices(c))
      out.push({
        pid: pidOf(h),
        tid: h.rank,
        name: `prepare() in the host phase, block ${block}`,
        cat: 'host-phase',
        ph: 'X',
        ts: h.start - t0,
        dur: h.end - h.start,
        args: {
          block,
          attempt: c.attempt,
          host: h.host,
          card: h.card,
          prepare_ms: h.ms,
          ended: 'by the lease at the latest',
        },
      });
  // a build whose end never reached the stream (its worker died): up to its attempt's last event
  for (const [k, b] of builds) buildSlices(b, spans.get(k.slice(0, k.lastIndexOf('/')))?.last ?? b.start, null);
  for (const s of spans.values()) {
    out.push({
      pid: s.pid,
      tid: s.tid,
      // block -1: the experiment's build phase on the host, before any card was leased (worker/builds/build-job-processor.ts)
      name:
        s.e.block < 0
          ? `builds before any lease, attempt ${s.e.attempt}`
          : `${s.e.card === '' ? 'worker: ' : ''}block ${s.e.block} attempt ${s.e.attempt}`,
      cat: 'attempt',
      ph: 'X',
      ts: s.first,
      dur: s.last - s.first,
      args: {
        block: s.e.block,
        attempt: s.e.attempt,
        epoch: s.e.epoch,
        host: s.e.host,
        card: s.e.card,
        committed: s.e.committed,
        outcome: s.outcome,
      },
    });
  }
  return {
    traceEvents: out,
    displayTimeUnit: 'ms',
    otherData: { experiment, clock: "Redis stream ids and the workers' clock (ms), from the first event or rep" },
  };
}
