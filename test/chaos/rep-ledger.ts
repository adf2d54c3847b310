/**
 * The chaos suite's account of reps, computed from what the ranks said (the rep lines of the
 * experiment's event stream, as the worker streamed them) against what Redis committed:
 * - measured twice: one rank's rep lines for one request (block, attempt, request id) that differ
 *   (each rep line carries its span, t_start_ns/t_end_ns: two measurements never print the same
 *   line), or one block attempt started twice (two different `block-start` events — each carries
 *   its start's clock — the payload ran again: a replayed or repeated job, whatever it got to
 *   measure; per host, as each part of a spread gang starts it on its own host);
 * - re-sent: the same line twice (a rep line or a block-start). The stream's appends are at least once: a command Redis ran
 *   whose reply a partition lost is sent again on the new connection (ioredis resends
 *   unanswered commands). Counted, not a second measurement; a stale line stored as another
 *   request's answer is caught as misattributed below;
 * - misattributed: a committed rep whose own request's rep line is missing, names another arm,
 *   or carries other step times than the committed ones (the answer of another request was
 *   stored), or — where the fixture ranks plant a step time per arm (FIXTURE_ARM_MS) — whose step
 *   times are not its committed arm's.
 */
import type { RepResult } from '../../jobs/rep-result.ts';
import { opId } from '../../worker/rank-runner.ts';
import type { StreamEvent } from '../utils/events.ts';

/** One row of the chaos table (and the Slurm tests'): a fault and where its planned reps went. */
export interface LedgerRow {
  fault: string;
  planned: number;
  measured: number;
  /** failed with a reason (not measured) */
  failed: number;
  reasons: string;
  /** measured twice (auditReps, and a rep both committed and failed, and a block committed twice) */
  twice: number;
}

export interface RepAudit {
  twice: number;
  resent: number;
  misattributed: number;
  /** the first few findings, for the scenario's line */
  detail: string[];
}

/** How far a rep's mean step time may sit from its arm's planted one (the fixture varies it by ±0.5 %). */
const PLANTED_TOLERANCE = 0.02;

export function auditReps(
  events: StreamEvent[],
  committed: RepResult[],
  planted: ReadonlyMap<string, number>,
): RepAudit {
  const detail: string[] = [];
  const lines = new Map<string, StreamEvent[]>();
  for (const e of events) {
    if (e.event.type !== 'rep') continue;
    const key = `${e.block}/${e.attempt}/${e.rank}/${String(e.event.id)}`;
    lines.set(key, [...(lines.get(key) ?? []), e]);
  }
  let twice = 0;
  let resent = 0;
  const starts = new Map<string, string[]>();
  for (const e of events) {
    // per host: each part of a gang spread over hosts starts the attempt once on its own host
    const key = `${e.block}/${e.attempt}@${e.host}`;
    if (e.event.type === 'worker' && e.event.event === 'block-start')
      starts.set(key, [...(starts.get(key) ?? []), JSON.stringify(e.event)]);
  }
  for (const [key, seen] of starts) {
    // the same line twice is one start's append sent again (it carries the start's clock)
    const n = new Set(seen).size;
    resent += seen.length - n;
    if (n < 2) continue;
    twice += 1;
    detail.push(`block attempt ${key} started ${n} times`);
  }
  for (const [key, seen] of lines) {
    const bodies = new Set(seen.map((e) => JSON.stringify(e.event)));
    resent += seen.length - bodies.size;
    if (bodies.size < 2) continue;
    twice += 1;
    detail.push(`request ${key} answered by ${bodies.size} different rep lines`);
  }
  let misattributed = 0;
  const wrong = (r: RepResult, why: string) => {
    misattributed += 1;
    detail.push(`committed ${r.block}/${r.arm}/${r.rep} (attempt ${r.attempt}, position ${r.position}): ${why}`);
  };
  for (const r of committed) {
    const id = opId(r, 'rep', r.position);
    const own = events.filter(
      (e) => e.event.type === 'rep' && e.block === r.block && e.attempt === r.attempt && e.event.id === id,
    );
    if (own.length === 0) {
      wrong(r, `no rep line of request ${id} in the stream`);
      continue;
    }
    const arms = [...new Set(own.map((e) => String(e.event.arm)))];
    if (arms.some((a) => a !== r.arm)) wrong(r, `request ${id} was answered for arm ${arms.join(', ')}`);
    // one rank: the committed step times are that rank's line; a gang's are the slowest rank's per step
    const slowest = r.step_ms.map((_, k) =>
      Math.max(...own.map((e) => Number((e.event.step_ms as number[] | undefined)?.[k]))),
    );
    if (slowest.some((ms, k) => ms !== r.step_ms[k]))
      wrong(
        r,
        `step_ms ${JSON.stringify(r.step_ms.slice(0, 2))}… are not those of its request's line ${JSON.stringify(slowest.slice(0, 2))}…`,
      );
    const want = planted.get(r.arm);
    const mean = r.step_ms.reduce((a, b) => a + b, 0) / Math.max(1, r.step_ms.length);
    if (want !== undefined && Math.abs(mean / want - 1) > PLANTED_TOLERANCE) {
      const whose = [...planted].find(([, ms]) => Math.abs(mean / ms - 1) <= PLANTED_TOLERANCE)?.[0];
      wrong(r, `mean step ${mean.toFixed(3)} ms, arm ${r.arm} plants ${want} ms${whose ? ` (arm ${whose}'s)` : ''}`);
    }
  }
  return { twice, resent, misattributed, detail };
}
