/**
 * Runs the real CLI (`node bin/orch.mjs …`) with test/utils/peak-rss.mjs preloaded and returns
 * its exit, output, wall time and peak RSS (the child's own VmHWM, MiB). `cwd` is the checkout to
 * run (a bench measures another worktree's orch the same way); `heapMiB` caps V8's old space
 * (--max-old-space-size), so a command that holds what it reads fails instead of only peaking.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export interface MeasuredRun {
  status: number | null;
  stdout: string;
  stderr: string;
  ms: number;
  peak_mib: number;
}

const PRELOAD = resolve(import.meta.dirname, 'peak-rss.mjs');

export function measureOrch(
  args: string[],
  env: Record<string, string>,
  opts: { cwd?: string; heapMiB?: number; timeoutMs?: number } = {},
): MeasuredRun {
  const cwd = opts.cwd ?? process.cwd();
  const heap = opts.heapMiB === undefined ? '' : ` --max-old-space-size=${opts.heapMiB}`;
  const dir = mkdtempSync(join(tmpdir(), 'orch-rss-'));
  const file = join(dir, 'rss.jsonl');
  try {
    const t0 = performance.now();
    const r = spawnSync(process.execPath, [join(cwd, 'bin/orch.mjs'), ...args], {
      cwd,
      encoding: 'utf8',
      timeout: opts.timeoutMs ?? 600_000,
      maxBuffer: 64 << 20,
      env: {
        ...process.env,
        ...env,
        NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import ${PRELOAD}${heap}`.trim(),
        ORCH_PEAK_RSS_FILE: file,
      },
    });
    const ms = performance.now() - t0;
    if (r.error) throw r.error;
    let peak = NaN;
    try {
      for (const l of readFileSync(file, 'utf8').trim().split('\n'))
        peak = Math.max(Number.isNaN(peak) ? 0 : peak, (JSON.parse(l) as { peak_kib: number }).peak_kib);
    } catch {
      // no line: the child died before its exit handler (a crash of V8 itself); peak stays NaN
    }
    return { status: r.status, stdout: r.stdout, stderr: r.stderr, ms, peak_mib: peak / 1024 };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
