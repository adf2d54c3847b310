/**
 * What `orch status`, `orch watch` and an error print from Redis is data: anyone who reaches
 * Redis writes a card's host, id and version, the leader key, a lease's experiment, the progress
 * hash's latest rep, a record that fails its schema. On a real redis-server, through the real CLI
 * where it reads them and the real render functions where a record is hard to plant whole, each
 * such string shows its escape sequences visible (jobs/rank-text.ts) and none runs: no window
 * title, cleared screen, clipboard write (OSC 52) or 8-bit CSI reaches the terminal.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { formatError } from '../../cli/print-error.ts';
import { progressLines } from '../../cli/terminal/progress-view.ts';
import { renderStatus } from '../../orchestrator/experiment/cluster-status.ts';
import { CardRegistry } from '../../store/card-registry.ts';
import { orchKeys } from '../../store/keys.ts';
import { LeaseStore } from '../../store/lease-store.ts';
import { RepProgress } from '../../store/rep-progress.ts';
import { assertInert } from '../utils/inert-text.ts';
import { freshPrefix, privateRedis } from '../utils/redis.ts';
import { runOrch } from './run-orch.ts';

/** Sets the window title and clears the screen. */
const SCREEN = '\x1b]0;x\x07\x1b[2J';
/** Writes the operator's clipboard. */
const CLIPBOARD = '\x1b]52;c;Y3VybA==\x07';
const C1 = '\u009b31m\u202e';

/** `text` carries no raw control and shows each of `visible` (the escaped form of what was planted). */
function shows(text: string, ...visible: string[]): void {
  assertInert(text);
  for (const v of visible) assert.ok(text.includes(v), `${JSON.stringify(v)} not in:\n${text}`);
}

/** A cluster with nothing but the experiments a test renders. */
const BARE = { leader: null, reader: null, queues: {}, cards: [], not_shown: 0 };

const r = privateRedis();
let home: string;
before(() => {
  home = mkdtempSync(join(tmpdir(), 'orch-home-'));
});
after(() => rmSync(home, { recursive: true, force: true }));

const env = (prefix: string) => ({ REDIS_URL: r.server.url, ORCH_PREFIX: prefix, HOME: home, ORCH_LOG: 'silent' });

describe('Redis text on the terminal', () => {
  it("orch status: a card's host, id and version, the leader and a lease's experiment", async () => {
    const prefix = freshPrefix('st');
    const host = `h${SCREEN}`;
    const id = `cpu:0@${host}`;
    await new CardRegistry(r.redis, { prefix }).register(
      host,
      [{ id, host, backend: 'cpu', index: 0, uuid: id, name: 'cpu' }],
      { ttlMs: 60_000, pid: 1, version: `orch 0.0.1 ${CLIPBOARD}` },
    );
    await r.redis.set(orchKeys(prefix).sched.leader, `leader${C1}`, 'PX', 60_000);
    const lease = await new LeaseStore(r.redis, { prefix }).acquireGang({
      cards: [id],
      owner: host,
      ttlMs: 60_000,
      experiment: `e${CLIPBOARD}`,
      block: 0,
    });
    assert.ok(lease.granted);
    const res = runOrch(['status'], env(prefix));
    assert.equal(res.status, 0, res.stderr);
    shows(
      res.stdout,
      'scheduler leader: leader\\u009b31m\\u202e',
      'host h\\x1b]0;x\\x07\\x1b[2J runs orch 0.0.1 \\x1b]52;c;Y3VybA==\\x07',
      'cpu:0@h\\x1b]0;x\\x07\\x1b[2J',
      'held by e\\x1b]52;c;Y3VybA==\\x07 block 0',
    );
  });

  it('orch status --json and a JSON log line: C1 controls and bidi overrides as \\u escapes, the same value parsed back', async () => {
    const prefix = freshPrefix('js');
    await r.redis.set(orchKeys(prefix).sched.leader, `leader${C1}`, 'PX', 60_000);
    const res = runOrch(['status', '--json'], env(prefix));
    assert.equal(res.status, 0, res.stderr);
    assertInert(res.stdout);
    assert.ok(res.stdout.includes('leader\\u009b31m\\u202e'), res.stdout);
    assert.ok(JSON.stringify(JSON.parse(res.stdout)).includes(`leader${C1}`));
    // a JSON log line on stderr quotes the Redis URL it could not reach, and the JSON error on stdout its failure
    const down = runOrch(['status', '--json'], {
      ...env(prefix),
      REDIS_URL: `redis://127.0.0.1:1/?x=${C1}`,
      ORCH_LOG: 'warn',
      ORCH_LOG_FORMAT: 'json',
    });
    assertInert(down.stderr);
    assertInert(down.stdout);
    assert.ok(down.stderr.includes('?x=\\u009b31m\\u202e'), down.stderr.slice(0, 2000));
    assert.ok(down.stdout.trim().startsWith('{'), down.stdout);
  });

  it("orch status: an experiment's id, a waiting block's why, a running block's cards", () => {
    const block = { attempt: 1, reason: null, cards: [`cpu:0@${SCREEN}`] };
    const status = renderStatus({
      ...BARE,
      counts: { running: 1 },
      experiments: [
        {
          id: `e${SCREEN}`,
          name: 'n',
          state: 'running',
          reason: null,
          created: '',
          measured: 0,
          planned: 4,
          uncommitted: 0,
          outcome: null,
          blocks: [
            { block: 0, phase: 'waiting', why: `held by ${CLIPBOARD}`, ...block },
            { block: 1, phase: 'running', why: null, ...block },
          ],
        },
      ],
    });
    shows(
      status,
      '  e\\x1b]0;x\\x07\\x1b[2J  running',
      'waiting: held by \\x1b]52;c;Y3VybA==\\x07',
      'running attempt 1 on cpu:0@\\x1b]0;x\\x07\\x1b[2J',
    );
  });

  it("orch watch: the progress hash's latest rep (arm, mode, backend), a block's why, a build's host", async () => {
    const prefix = freshPrefix('pv');
    const latest = { arm: `a${SCREEN}`, mode: `graph${C1}`, backend: 'cpu', median_ms: 1, steps: 2, at: 1 };
    await r.redis.hset(orchKeys(prefix).progress('e1'), { '0/1': '1', '0/latest': JSON.stringify(latest) });
    const read = (await new RepProgress(r.redis, prefix).read('e1')).latest.get(0) ?? null;
    assert.ok(read);
    const lines = progressLines(
      {
        experiment: 'e1',
        state: 'running',
        elapsedMs: 1000,
        eta: null,
        blocks: [
          { block: 0, phase: 'running', attempt: 1, done: 1, planned: 4, latest: read, why: null, eta: null },
          { block: 1, phase: 'waiting', attempt: 0, done: 0, planned: 4, latest: null, why: CLIPBOARD, eta: null },
        ],
        builds: [{ host: `h${SCREEN}`, key: 'k', commit: `c${C1}`, state: 'built', position: null, ms: 10 }],
      },
      { color: false },
    );
    shows(
      lines.map((l) => `${l.text}\n${l.change}`).join('\n'),
      'last a\\x1b]0;x\\x07\\x1b[2J graph\\u009b31m\\u202e/cpu median',
      '(\\x1b]52;c;Y3VybA==\\x07)',
      'build c\\u009b31m\\u202e on h\\x1b]0;x\\x07\\x1b[2J',
    );
  });

  it('an error quoting a record that fails its schema: the field named escaped (formatError)', async () => {
    const prefix = freshPrefix('pe');
    await r.redis.hset(orchKeys(prefix).progress('e1'), `0${SCREEN}/latest`, 'not json');
    const err = await new RepProgress(r.redis, prefix).read('e1').then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(err instanceof Error && 'code' in err && err.code === 'STORED_RECORD_INVALID', String(err));
    shows(formatError(err), 'field 0\\x1b]0;x\\x07\\x1b[2J/latest is not JSON');
  });

  it('orch status on a card record that is not JSON: no card, nothing of it on the terminal (store/card-registry.ts)', async () => {
    const prefix = freshPrefix('pj');
    await r.redis.hset(orchKeys(prefix).cards, 'c', `${SCREEN}${CLIPBOARD}`);
    const res = runOrch(['status'], env(prefix));
    assert.equal(res.status, 0, res.stderr);
    assertInert(res.stdout + res.stderr);
  });
});
