// Takes the screenshots in docs/screenshots: runs test/dashboard/dashboard-live-updates.test.ts,
// which shoots every dashboard page of a running cluster only after the page took several live
// updates and a reload (a page shot before its first update once hid that the update wiped it),
// with ORCH_DASHBOARD_SCREENSHOTS set so the test copies them here. Needs /usr/bin/chromium.
// Usage: node scripts/dashboard-screenshots.mjs [folder, default docs/screenshots]
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';

const to = resolve(process.argv[2] ?? 'docs/screenshots');
const r = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--test', '--test-concurrency=1', 'test/dashboard/dashboard-live-updates.test.ts'],
  {
    stdio: 'inherit',
    env: { ...process.env, ORCH_FROM_SOURCE: '1', ORCH_DASHBOARD_SCREENSHOTS: to },
  },
);
process.exit(r.status ?? 1);
