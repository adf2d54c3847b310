// Cron expressions of nightly suites are checked by the parser BullMQ schedules with
// (jobs/cron.ts): orch validate and orch nightly install refuse one it cannot schedule, with
// file:line and path, before any connection.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { cronProblem, nextCronRuns } from '../../jobs/cron.ts';
import { runOrch } from './run-orch.ts';

const dir = mkdtempSync(join(tmpdir(), 'orch-cron-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function suite(cron: string): string {
  const file = join(dir, `suite-${Math.abs(hash(cron))}.yaml`);
  writeFileSync(join(dir, 'ab.yaml'), readFileSync('configs/ab.yaml'));
  writeFileSync(
    file,
    `kind: suite\nname: n\nschedule:\n  cron: "${cron}"\n  tz: Europe/Berlin\nexperiments: [ab.yaml]\n`,
  );
  return file;
}
const hash = (s: string) => [...s].reduce((h, c) => (h * 31 + c.charCodeAt(0)) | 0, 7);

describe('cron expressions of nightly suites', () => {
  it('the parser BullMQ uses: package.json pins the version bullmq depends on', () => {
    const ours = (JSON.parse(readFileSync('package.json', 'utf8')) as { dependencies: Record<string, string> })
      .dependencies['cron-parser'];
    const bullmq = (
      JSON.parse(readFileSync('node_modules/bullmq/package.json', 'utf8')) as { dependencies: Record<string, string> }
    ).dependencies['cron-parser'];
    assert.equal(ours, bullmq);
  });

  it('five fields that parse are accepted; out-of-range, impossible and malformed ones are not', () => {
    assert.equal(cronProblem('0 2 * * *'), null);
    assert.equal(cronProblem('*/15 1-5 * * MON-FRI'), null);
    assert.equal(cronProblem('99 2 * * *'), 'minute 99 is out of range: the minute field takes 0-59');
    assert.equal(
      cronProblem('0 2 31 2 *'),
      'day of month 31 never occurs in month 2: this schedule would never fire; pick a day every listed month has (1-28 in February)',
    );
    assert.match(cronProblem('x 2 * * *')!, /^"x" is not a cron value/);
    assert.match(cronProblem('0 2 * *')!, /five-field/);
  });

  it('next runs follow the time zone', () => {
    const runs = nextCronRuns('0 2 * * *', 'Europe/Berlin', 3, new Date('2026-01-10T12:00:00Z'));
    assert.deepEqual(
      runs.map((d) => d.toISOString()),
      ['2026-01-11T01:00:00.000Z', '2026-01-12T01:00:00.000Z', '2026-01-13T01:00:00.000Z'],
    );
  });

  it('orch validate and orch nightly install: exit 2 with file:line and path, nothing connected', () => {
    const file = suite('0 25 * * *');
    for (const args of [
      ['validate', file],
      ['nightly', 'install', file],
    ]) {
      const r = runOrch(args, { REDIS_URL: 'redis://127.0.0.1:1' });
      assert.equal(r.status, 2, r.stderr);
      assert.match(
        r.stderr,
        new RegExp(
          `^${file.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}:4 schedule\\.cron: hour 25 is out of range: the hour field takes 0-23`,
          'm',
        ),
      );
    }
    assert.equal(runOrch(['validate', suite('30 2 * * 1-5')]).status, 0);
  });
});
