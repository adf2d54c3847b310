// The chaos suite at full size (test/chaos/chaos.test.ts): every fault scenario with more blocks
// and reps and a 500 MiB output line; `npm test` runs the same file at the reduced (ci) size.
// Usage: node scripts/chaos.mjs [fault substring]   (CHAOS_ONLY: one scenario)
import { spawnSync } from 'node:child_process';

const only = process.argv[2];
const env = {
  ...process.env,
  ORCH_FROM_SOURCE: '1',
  CHAOS_SIZE: process.env.CHAOS_SIZE ?? 'full',
  ...(only ? { CHAOS_ONLY: only } : {}),
};
const r = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--test', '--test-concurrency=1', '--test-timeout=1800000', 'test/chaos/chaos.test.ts'],
  { stdio: 'inherit', env },
);
process.exit(r.status ?? 1);
