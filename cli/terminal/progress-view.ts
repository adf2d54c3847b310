/**
 * An experiment's progress as lines of text (orch watch, orch submit --watch): a header with the
 * state, the time since submit and the ETA (orchestrator/experiment/eta.ts), a bar per block, a
 * line per build. Each line has a key (what it is about) and a `change` (its text without the
 * clock), so an append-only printer can tell a line that moved from one whose clock ticked.
 * The names and reasons in it were read from Redis (the progress hash's latest rep, a block's
 * `why`, a build event's host and key), which anyone who reaches it may have written: each is
 * escaped (jobs/rank-text.ts), so the only escape sequences in a line are this view's colours.
 */
import { escapeRankText } from '../../jobs/rank-text.ts';
import { formatDuration, formatEta } from '../../orchestrator/experiment/eta.ts';
import type { BlockProgress, BuildProgress, Progress } from '../../orchestrator/experiment/progress.ts';

export interface ProgressLine {
  key: string;
  /** the line as shown */
  text: string;
  /** the line without its clock (elapsed, ETA): what counts as a change */
  change: string;
}

const STATE_COLOURS: Record<string, string> = {
  done: '32',
  failed: '31',
  cancelled: '33',
  cancelling: '33',
  running: '36',
};

function paint(s: string, code: string | undefined, color: boolean): string {
  return color && code ? `\x1b[${code}m${s}\x1b[0m` : s;
}

export function progressLines(p: Progress, opts: { color: boolean; barWidth?: number }): ProgressLine[] {
  const state = paint(p.state, STATE_COLOURS[p.state], opts.color);
  const clock = `elapsed ${formatDuration(p.elapsedMs)}${p.eta === null && ['done', 'failed', 'cancelled'].includes(p.state) ? '' : `  ${formatEta(p.eta)}`}`;
  const id = escapeRankText(p.experiment);
  const lines: ProgressLine[] = [{ key: 'state', text: `${id}  ${state}  ${clock}`, change: `${id}  ${p.state}` }];
  for (const b of p.blocks) {
    const line = blockLine(b, opts.barWidth ?? 24);
    lines.push({ key: `block ${b.block}`, text: line.text, change: line.change });
  }
  for (const b of p.builds ?? [])
    lines.push({ key: `build ${b.host}/${b.key}`, text: `  ${buildLine(b)}`, change: `  ${buildLine(b)}` });
  return lines;
}

/** `  block 0  [#####.....]   5/21  running a1  ~1 min 10 s left  last all_on graph/cuda median 0.412 ms/step`. */
function blockLine(b: BlockProgress, width: number): { text: string; change: string } {
  const filled = b.planned === 0 ? 0 : Math.round((b.done / b.planned) * width);
  const bar = `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}]`;
  const last = b.latest
    ? `  last ${escapeRankText(`${b.latest.arm} ${b.latest.mode}/${b.latest.backend}`)} median ${b.latest.median_ms?.toFixed(3) ?? '-'} ms/step`
    : '';
  const why = b.phase === 'waiting' && b.why ? `  (${escapeRankText(b.why)})` : '';
  const head = `  block ${b.block}  ${bar} ${String(b.done).padStart(3)}/${b.planned}  ${b.phase}${b.attempt > 0 ? ` a${b.attempt}` : ''}`;
  const left =
    b.phase !== 'running'
      ? ''
      : b.done >= b.planned
        ? '  committing'
        : `  ${b.eta === null ? 'time left unknown' : `~${formatDuration(b.eta.ms)} left`}`;
  return { text: `${head}${left}${last}${why}`, change: `${head}${last}${why}` };
}

/** `build 1a2b3c4d5e6f on host-a  built in 3.2 s` (the commit, else the build key). */
function buildLine(b: BuildProgress): string {
  const what =
    b.state === 'waiting for the build lock' && b.position !== null ? `${b.state} (#${b.position})` : b.state;
  const secs = b.ms === null ? '' : b.state === 'cached' ? '' : ` in ${(b.ms / 1000).toFixed(1)} s`;
  return `build ${escapeRankText((b.commit ?? b.key).slice(0, 12))} on ${escapeRankText(b.host)}  ${what}${secs}`;
}
