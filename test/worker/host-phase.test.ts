/**
 * The host phase on the worker's side (worker/command/prepared-slots.ts, the adoption in
 * worker/command/resident-command-rank.ts), with real processes and a real card lock: while one
 * rank holds the card, the next block's rank process starts in the host phase with no device
 * visible and no lock on the card — never two processes on one card — and the next block's rank
 * adopts it (open names the card; one process, no second start). A prepare() that initialised CUDA
 * makes the next rank start inside its lease, saying why; another experiment's rank ends it.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import type { BlockJob } from '../../jobs/block-job.ts';
import type { Card } from '../../jobs/card.ts';
import type { CommandHello } from '../../jobs/command-line.ts';
import { CommandWorkloadSchema } from '../../jobs/spec-schema/command-workload.ts';
import { BuildCache } from '../../worker/builds/build-cache.ts';
import { prepareFirstBlocks } from '../../worker/command/prepare-first.ts';
import { PreparedSlots } from '../../worker/command/prepared-slots.ts';
import { ResidentCommandRank } from '../../worker/command/resident-command-rank.ts';
import { armOf } from '../../worker/rank-runner.ts';
import { blockJob } from '../utils/block-jobs.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PROGRAM = join(ROOT, 'test/fixtures/ranks/host-phase-rank.py');
const PYTHON = spawnSync('python3', ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' }).stdout.trim();
// a cuda card by its uuid: the host phase must hide it until `open` (the program itself runs on the cpu)
const card: Card = {
  id: 'cuda:0@hp',
  host: 'hp',
  backend: 'cuda',
  index: 0,
  uuid: 'GPU-00000000-0000-0000-0000-00000000beef',
  name: 'fixture',
};

const dir = mkdtempSync(join(tmpdir(), 'orch-host-phase-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const LOCK = join(dir, 'card.lock');
writeFileSync(LOCK, '');

function job(
  experiment: string,
  block: number,
  log: string,
  env: Record<string, string> = {},
  blocksAfter?: number,
): BlockJob {
  const workload = CommandWorkloadSchema.parse({
    runtime: 'command',
    run: {
      cmd: `${PYTHON} ${PROGRAM}`,
      mode: 'resident',
      env: { PYTHONPATH: join(ROOT, 'ranklib/python'), PYTHONDONTWRITEBYTECODE: '1', HOST_PHASE_LOG: log, ...env },
      timeout_s: 60,
    },
    toggles: { GRAPH: 'request' },
    warmup: 1,
    steps: 2,
  });
  return blockJob({
    experiment,
    block,
    attempt: 1,
    epoch: 1,
    host: 'hp',
    cards: [card.id],
    workload,
    warmup: 1,
    steps: 2,
    arms: [{ name: 'eager', toggles: { GRAPH: false } }],
    sequence: ['eager'],
    gates: { identity: null, aa: false },
    ...(blocksAfter === undefined ? {} : { blocks_after: blocksAfter }),
  });
}

const hellos: CommandHello[] = [];
function rank(j: BlockJob, slots: PreparedSlots): ResidentCommandRank {
  return new ResidentCommandRank(
    {
      job: j,
      rank: 0,
      world: 1,
      card,
      lockPath: LOCK,
      log: pino({ level: 'silent' }),
      onLine: (l) => void (l.type === 'hello' && 'program' in l && hellos.push(l as CommandHello)),
    },
    j.workload as Extract<BlockJob['workload'], { runtime: 'command' }>,
    { buildRoot: join(dir, 'builds'), minFreeDiskGb: 0, slots },
    () => Promise.reject(new Error('no build here')),
  );
}

type Seen = { phase: string; pid: number; devices: string | null; host_phase: string | null };
const seen = (log: string): Seen[] =>
  readFileSync(log, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Seen);

/** The variable in the process's own environment as it was started (/proc/PID/environ). */
function environOf(pid: number): Map<string, string> {
  const m = new Map<string, string>();
  for (const kv of readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0')) {
    const i = kv.indexOf('=');
    if (i > 0) m.set(kv.slice(0, i), kv.slice(i + 1));
  }
  return m;
}

/** Does any process of the group hold a descriptor on the card's lock file? */
function holdsLockFile(pids: number[]): boolean {
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        if (readlinkSync(`/proc/${pid}/fd/${fd}`) === LOCK) return true;
      } catch {
        // closed meanwhile
      }
    }
  }
  return false;
}

/** Block 0 of `experiment` on the card, once it said hello, and the next block's process it started (kept `keepMs`). */
async function firstAndNext(experiment: string, logName: string, keepMs: number, env: Record<string, string> = {}) {
  const slots = new PreparedSlots();
  const log = join(dir, logName);
  const first = rank(job(experiment, 0, log, env), slots);
  await first.ready;
  return { slots, log, first, next: first.prepareNext(slots, keepMs) };
}

/** flock(1) -n on a fresh description: true when someone holds the card's lock. */
const lockHeld = (): boolean => spawnSync('flock', ['-n', '-E', '4', LOCK, 'true']).status === 4;

describe('the host phase: a rank started before its lease', () => {
  test('never two processes on one card: the prepared process sees no device, holds no lock; the next block adopts it', async () => {
    const { slots, log, first, next } = await firstAndNext('hp', 'adopt.log', 60_000);
    assert.ok(lockHeld(), 'the first rank holds the card');
    const prepared = await next.proto.prepared;
    assert.ok(prepared.prepare_ms >= 0);
    assert.equal(next.proto.state, 'preparing');
    const pid = next.proto.pids()[0]!;
    const group = spawnSync('pgrep', ['-g', String(pid)], { encoding: 'utf8' })
      .stdout.trim()
      .split('\n')
      .map(Number);
    for (const p of group) {
      const env = environOf(p);
      assert.equal(env.get('CUDA_VISIBLE_DEVICES'), '', `process ${p} of the prepared rank sees no device`);
      assert.equal(env.get('ORCH_HOST_PHASE'), '1');
      assert.equal(
        env.get('TORCHINDUCTOR_CACHE_DIR'),
        join(dir, 'rank-caches', 'checkout', 'inductor'),
        'the compiler caches outlive the block',
      );
    }
    assert.equal(holdsLockFile(group), false, 'no process of the prepared rank holds the card lock file');
    const program = seen(log).filter((s) => s.phase === 'prepare');
    assert.deepEqual(
      program.map((s) => [s.devices, s.host_phase]),
      [
        [card.uuid, null],
        ['', '1'],
      ],
      'prepare() of the first rank saw the card; of the next one, nothing',
    );
    // the first rank's sequence goes on meanwhile
    const line = await first.request({ id: 'b0-r0', op: 'rep', arm: armOf(first['s'].job, 'eager') }, 30_000);
    assert.equal(line.type, 'rep');
    await first.close(5_000);

    const second = rank(job('hp', 1, log), slots);
    await second.ready;
    assert.ok(second.startedHow.hostPhase);
    const waited = second.startedHow.waited_ms;
    assert.equal(waited, 0, 'prepare() had ended before the adopt: the card waited for none of it');
    assert.deepEqual(second.startedHow, { hostPhase: true, prepare_ms: prepared.prepare_ms, waited_ms: waited });
    assert.deepEqual(
      hellos.at(-1)?.started,
      { host_phase: true, caches: 'cold', prepare_waited_ms: waited },
      'the hello says how the rank started',
    );
    assert.equal(second.pids()[0], pid, 'the prepared process itself serves block 1');
    assert.ok(lockHeld(), 'the worker took the card lock for the adopted process');
    assert.equal(slots.keyOf(card.id), null, 'the slot is empty once adopted');
    const setup = seen(log)
      .filter((s) => s.phase === 'setup')
      .at(-1)!;
    assert.deepEqual(
      [setup.pid, setup.devices],
      [program[1]!.pid, card.uuid],
      'the prepared program ran setup() after open, with the card visible',
    );
    const rep = await second.request({ id: 'b1-r0', op: 'rep', arm: armOf(second['s'].job, 'eager') }, 30_000);
    assert.equal(rep.type, 'rep');
    await second.close(5_000);
    assert.equal(lockHeld(), false);
  });

  test('prepare() initialised CUDA: the next block starts inside its lease, saying why', async () => {
    const { slots, log, first, next } = await firstAndNext('hp-touch', 'touch.log', 60_000, {
      HOST_PHASE_TOUCH_CUDA: '1',
    });
    await assert.rejects(next.proto.prepared, /PREPARE_TOUCHED_CUDA/);
    await first.close(5_000);
    const second = rank(job('hp-touch', 1, log, { HOST_PHASE_TOUCH_CUDA: '1' }), slots);
    await second.ready;
    assert.equal(second.startedHow.hostPhase, false);
    assert.match((second.startedHow as { why: string }).why, /PREPARE_TOUCHED_CUDA: prepare\(\) initialised CUDA/);
    assert.match(hellos.at(-1)?.started?.why ?? '', /PREPARE_TOUCHED_CUDA/);
    assert.notEqual(second.pids()[0], next.proto.pids()[0]);
    await second.close(5_000);
  });

  test('another experiment gets the card: the prepared process is ended, not adopted', async () => {
    const { slots, log, first, next } = await firstAndNext('hp-a', 'other.log', 60_000);
    await next.proto.prepared;
    await first.close(5_000);
    const other = rank(job('hp-b', 0, log), slots);
    await other.ready;
    assert.deepEqual(other.startedHow, { hostPhase: false, why: null });
    const exit = await next.proto.exited;
    assert.equal(exit.signal, 'SIGKILL');
    await other.close(5_000);
  });

  test('a block with more to come prepares the next on its own once it said hello; the last does not', async () => {
    const slots = new PreparedSlots();
    const log = join(dir, 'auto.log');
    const first = rank(job('hp-auto', 0, log, {}, 1), slots);
    await first.ready;
    assert.notEqual(slots.keyOf(card.id), null, "block 0 of 2: the next block's process is in the slot");
    await first.close(5_000);
    const last = rank(job('hp-auto', 1, log), slots);
    await last.ready;
    assert.equal(last.startedHow.hostPhase, true);
    assert.equal(slots.keyOf(card.id), null, 'the last block prepares nothing');
    await last.close(5_000);
  });

  test("more blocks than cards: the build phase's spare serves block 1, and block 0 starts no process of its own", async () => {
    const slots = new PreparedSlots();
    const log = join(dir, 'spare.log');
    const w = job('hp-spare', 0, log).workload;
    const first = await prepareFirstBlocks(
      { experiment: 'hp-spare', workload: w, own: false, prepare: [card.id, card.id] },
      {
        cache: new BuildCache({ root: join(dir, 'builds') }),
        cards: new Map([[card.id, card]]),
        slots,
        injectLib: null,
        runAs: null,
        log: pino({ level: 'silent' }),
      },
    );
    assert.deepEqual(
      first.map((p) => [p.card, typeof p.prepare_ms]),
      [
        [card.id, 'number'],
        [card.id, 'number'],
      ],
      JSON.stringify(first),
    );
    const key = slots.keyOf(card.id, 'own');
    assert.ok(key !== null && slots.keyOf(card.id, 'spare') === key, 'one process in each of the card slots');
    const prepares = () => seen(log).filter((s) => s.phase === 'prepare').length;

    const b0 = rank(job('hp-spare', 0, log, {}, 2), slots);
    await b0.ready;
    assert.equal(b0.startedHow.hostPhase, true);
    assert.equal(slots.keyOf(card.id, 'own'), null, "block 0 adopted the own slot's process");
    assert.equal(slots.keyOf(card.id, 'spare'), key, 'the spare waits for block 1');
    assert.equal(prepares(), 2, 'block 0 started no third process: the spare is its next block');
    assert.equal(slots.endsAt(card.id, 'spare'), null, 'kept without a deadline while block 0 runs');
    await b0.close(5_000);
    await new Promise((r) => setImmediate(r));
    assert.ok((slots.endsAt(card.id, 'spare') ?? 0) > Date.now() + 60_000, "kept a keep time from block 0's end");

    const b1 = rank(job('hp-spare', 1, log, {}, 1), slots);
    await b1.ready;
    assert.deepEqual(
      [b1.startedHow.hostPhase, (b1.startedHow as { waited_ms?: number }).waited_ms],
      [true, 0],
      'block 1 adopted the spare, prepared before any lease: its lease waited for none of it',
    );
    assert.equal(slots.keyOf(card.id, 'spare'), null);
    assert.equal(slots.keyOf(card.id, 'own'), key, "block 1 started block 2's process: nothing else was waiting");
    await b1.close(5_000);
    const b2 = rank(job('hp-spare', 2, log), slots);
    await b2.ready;
    assert.equal(b2.startedHow.hostPhase, true);
    assert.equal(prepares(), 3, 'one process per block');
    await b2.close(5_000);
  });

  test("a block that holds the card past the keep time: its next block's process waits for it, and is kept from its end", async () => {
    const { slots, first, next } = await firstAndNext('hp-long', 'long.log', 300);
    slots.keepWhile(card.id, next.key, 300, first.exited);
    await next.proto.prepared;
    await new Promise((r) => setTimeout(r, 900));
    assert.equal(next.proto.state, 'preparing', 'kept while the block on the card runs, three keep times on');
    assert.equal(slots.keyOf(card.id), next.key);
    await first.close(5_000);
    const exit = await next.proto.exited;
    assert.equal(exit.signal, 'SIGKILL', 'ended a keep time after the block, as nobody came for it');
    assert.equal(slots.keyOf(card.id), null);
  });

  test('a prepared process nobody adopts within the keep time is ended; the slot is empty', async () => {
    const { slots, first, next } = await firstAndNext('hp-keep', 'keep.log', 300);
    const exit = await next.proto.exited;
    assert.equal(exit.signal, 'SIGKILL');
    assert.equal(slots.keyOf(card.id), null);
    await first.close(5_000);
  });

  test('a rank started inside its lease that says "prepared" breaks the protocol', async () => {
    const slots = new PreparedSlots();
    const log = join(dir, 'stray.log');
    // ORCH_HOST_PHASE from run.env: the program says prepared, which the worker never asked for
    const r = rank(job('hp-stray', 0, log, { ORCH_HOST_PHASE: '1' }), slots);
    await assert.rejects(r.ready, /a "prepared" line before hello/);
    await r.close(1_000);
  });
});
