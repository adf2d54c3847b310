// Preloaded into a process under measurement (NODE_OPTIONS=--import <this file>): at exit it
// appends its peak resident set (VmHWM of /proc/self/status, KiB) and its wall time to
// $ORCH_PEAK_RSS_FILE, so a parent can read what the child itself peaked at.
import { appendFileSync, readFileSync } from 'node:fs';

const t0 = performance.now();
process.on('exit', () => {
  const file = process.env.ORCH_PEAK_RSS_FILE;
  if (!file) return;
  const kib = Number(/VmHWM:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? NaN);
  appendFileSync(file, `${JSON.stringify({ peak_kib: kib, ms: performance.now() - t0 })}\n`);
});
