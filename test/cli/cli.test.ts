import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { exitCodeOf, formatError } from '../../cli/print-error.ts';
import { SpecError, UserInputError } from '../../jobs/errors.ts';
import { runOrch, STACK_FRAME } from './run-orch.ts';

const CONFIGS = readdirSync('configs')
  .filter((f) => f.endsWith('.yaml'))
  .map((f) => join('configs', f));

describe('orch CLI', () => {
  it('--help lists the commands and exits 0', () => {
    const r = runOrch(['--help']);
    assert.equal(r.status, 0);
    assert.match(r.stdout, /orch validate <files\.\.>/);
    assert.match(r.stdout, /orch plan \[file\]/);
    assert.match(r.stdout, /--json/);
    assert.match(r.stdout, /^ {2}ORCH_PREFIX +key prefix in that Redis/m);
    assert.match(r.stdout, /^ {2}REDIS_URL /m);
  });

  it('submit --no-wait without REDIS_URL is a user error naming the cluster it needs: exit 2, no stack', () => {
    const r = runOrch(['submit', 'test/fixtures/specs/tiny-ab.yaml', '--no-wait'], { REDIS_URL: '' });
    assert.equal(r.status, 2, r.stderr);
    assert.match(
      r.stderr,
      /^orch: --no-wait needs a cluster \(REDIS_URL\): .*private redis-server that dies with this command/,
    );
    assert.match(r.stderr, /hint: drop --no-wait .* or export REDIS_URL=/);
    assert.doesNotMatch(r.stderr, /internal error/);
    assert.doesNotMatch(r.stderr, STACK_FRAME);
    assert.equal(r.stdout, '');
  });

  it('npx orch resolves the package bin', () => {
    const r = spawnSync('npx', ['--no-install', 'orch', '--help'], { encoding: 'utf8', timeout: 120_000 });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /orch plan \[file\]/);
  });

  it('no command, an unknown command and an unknown flag are usage errors: exit 2, no stack', () => {
    for (const [args, message] of [
      [[], /name a command/],
      [['valdate', 'x.yaml'], /unknown command "valdate": Did you mean validate\?/],
      [['frobnicate'], /Unknown argument: frobnicate/],
      [['validate', 'configs/ab.yaml', '--colour'], /Unknown argument: colour/],
      [['plan'], /orch plan needs a spec file/],
    ] as const) {
      const r = runOrch([...args]);
      assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, message);
      assert.match(r.stderr, /hint: run orch --help/);
      assert.doesNotMatch(r.stderr, STACK_FRAME);
    }
  });

  it('validate: every file in configs/ at once exits 0', () => {
    const r = runOrch(['validate', ...CONFIGS]);
    assert.equal(r.status, 0, r.stderr);
    for (const f of CONFIGS) assert.match(r.stdout, new RegExp(`^ok ${f} `, 'm'));
  });

  it('validate: one bad file among good ones exits 2 and names only the bad one', () => {
    const dir = mkdtempSync(join(tmpdir(), 'orch-cli-'));
    const bad = join(dir, 'x.yaml');
    writeFileSync(
      bad,
      'name: x\ndesign: leave-one-out\nworkload: { runtime: native, kind: decode }\ntoggles: [graph, pdl, pld]\n',
    );
    const r = runOrch(['validate', 'configs/ab.yaml', bad, 'configs/cluster.yaml']);
    assert.equal(r.status, 2);
    assert.match(r.stdout, /^ok configs\/ab\.yaml/m);
    assert.equal(r.stderr.split('\n')[0], `${bad}:4 toggles[2]: unknown toggle "pld" — did you mean "pdl"?`);
    const missing = runOrch(['validate', join(dir, 'nope.yaml')]);
    assert.equal(missing.status, 2);
    assert.match(missing.stderr, /nope\.yaml \(root\): cannot read the file \(ENOENT\)/);
  });

  it('plan --json: hash, arms with toggles, blocks whose sequences hold every arm reps times', () => {
    const r = runOrch(['plan', 'configs/leave-one-out.yaml', '--json']);
    assert.equal(r.status, 0, r.stderr);
    const plan = JSON.parse(r.stdout) as {
      hash: string;
      reps: number;
      arms: { name: string; toggles: Record<string, unknown> }[];
      blocks: { index: number; sequence: string[] }[];
    };
    assert.match(plan.hash, /^[0-9a-f]{64}$/);
    assert.deepEqual(
      plan.arms.map((a) => a.name),
      ['base', 'all_on', 'no_graph', 'no_pdl', 'no_overlap', 'no_split_combine', 'all_on_aa'],
    );
    for (const a of plan.arms)
      for (const v of Object.values(a.toggles)) assert.ok(typeof v === 'boolean' || typeof v === 'string');
    assert.equal(plan.blocks.length, 2);
    for (const b of plan.blocks)
      for (const a of plan.arms) assert.equal(b.sequence.filter((s) => s === a.name).length, plan.reps);
    const validate = runOrch(['validate', '--json', 'configs/leave-one-out.yaml']);
    assert.equal(
      (JSON.parse(validate.stdout) as { files: { hash: string }[] }).files[0]?.hash,
      plan.hash,
      'validate and plan agree on the hash',
    );
  });

  it('plan without --json prints a table of arms and blocks', () => {
    const r = runOrch(['plan', 'configs/ab.yaml']);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^experiment chain-graph-ab {2}design ab {2}hash [0-9a-f]{64}$/m);
    assert.match(r.stdout, /^ {2}graph_pdl +graph=on pdl=on$/m);
    assert.match(r.stdout, /^ {2}eager_aa +graph=off pdl=off {2}\(A\/A copy of eager\)$/m);
    assert.match(r.stdout, /^ {2}block 0: eager graph_pdl eager_aa \| /m);
  });

  it('plan of a suite file is a user error', () => {
    const r = runOrch(['plan', 'configs/nightly.yaml']);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /configs\/nightly\.yaml:1 kind: this is a suite file, not an experiment spec/);
  });
});

describe('error printing', () => {
  it('a user error: message and hint, exit 2', () => {
    const err = new UserInputError('NO_MATCHING_CARDS', 'no card is free', { hint: 'wait or add hosts' });
    assert.equal(exitCodeOf(err), 2);
    assert.equal(formatError(err), 'orch: no card is free\n  hint: wait or add hosts\n');
    const spec = new SpecError([{ file: 'a.yaml', line: 3, path: 'reps', message: 'must be >= 2 (got 1)' }]);
    assert.equal(exitCodeOf(spec), 2);
    assert.equal(formatError(spec), 'a.yaml:3 reps: must be >= 2 (got 1)\norch: 1 problem in 1 file\n');
  });

  it('a bug: exit 1, stack and the whole cause chain', () => {
    const err = new Error('planner failed', { cause: new TypeError('x is undefined', { cause: 'root cause text' }) });
    assert.equal(exitCodeOf(err), 1);
    const text = formatError(err);
    assert.match(text, /internal error/);
    assert.match(text, /^Error: planner failed\n\s+at /m);
    assert.match(text, /^caused by: TypeError: x is undefined\n\s+at /m);
    assert.match(text, /^caused by: root cause text$/m);
  });
});
