// The compiled CLI (scripts/build-cli.mjs) behaves as the sources: built into a temporary
// directory, it prints the help, validates a spec (native/limits.json read at run time) and runs
// an embedded experiment (store/lua/*.lua, the fixture rank), exit code the verdict. And
// bin/dist-state.mjs refuses a build older than any of its sources, or missing one.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { distState } from '../../bin/dist-state.mjs';
import { FIXTURE_RANK } from '../orchestrator/orch-cluster.ts';

const dir = mkdtempSync(join(tmpdir(), 'orch-build-'));
// inside the checkout, so the build's package imports resolve to its node_modules as dist/'s do
const out = join(process.cwd(), 'node_modules', '.cache', `orch-build-test-${process.pid}`);
after(() => {
  rmSync(dir, { recursive: true, force: true });
  rmSync(out, { recursive: true, force: true });
});

/** Runs the compiled main() of `out` as bin/orch.mjs would. */
function runBuilt(args: string[], env: Record<string, string> = {}) {
  const boot = join(dir, 'boot.mjs');
  writeFileSync(
    boot,
    `const { main } = await import(${JSON.stringify(join(out, 'main.js'))});\nawait main(process.argv.slice(2));\n`,
  );
  return spawnSync(process.execPath, [boot, ...args], {
    encoding: 'utf8',
    env: { ...process.env, ...env },
    timeout: 120_000,
  });
}

describe('the compiled CLI', () => {
  it('builds', () => {
    const r = spawnSync(process.execPath, ['scripts/build-cli.mjs', '--out', out], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(distState(`${out}/`).fresh, true);
  });

  it('--help and validate', () => {
    const help = runBuilt(['--help']);
    assert.equal(help.status, 0, help.stderr);
    assert.match(help.stdout, /Exit codes:/);
    const v = runBuilt(['validate', 'configs/leave-one-out.yaml']);
    assert.equal(v.status, 0, v.stderr);
    assert.match(v.stdout, /^ok configs\/leave-one-out\.yaml/);
  });

  it('an embedded submit: Lua scripts and ranks found, exit code the verdict', () => {
    const r = runBuilt(['submit', 'test/fixtures/specs/verdict-ab.yaml', '--results', join(dir, 'results'), '--json'], {
      REDIS_URL: '',
      ORCH_PREFIX: '',
      ORCH_GRAPHRT: FIXTURE_RANK,
      ORCH_CPU_CARDS: '2',
      FIXTURE_ARM_MS: 'eager:5,eager_aa:5,graph:10',
    });
    assert.equal((JSON.parse(r.stdout) as { verdict: string }).verdict, 'slower', r.stderr);
    assert.equal(r.status, 4, r.stderr);
  });
});

describe('dist freshness', () => {
  const root = join(dir, 'root');
  const fake = join(dir, 'fake-dist');
  mkdirSync(join(root, 'cli'), { recursive: true });
  mkdirSync(fake, { recursive: true });
  const started = Date.now() - 60_000;
  const build = (inputs: string[]) =>
    writeFileSync(join(fake, 'build.json'), JSON.stringify({ startedMs: started, main: 'main.js', inputs }));
  const source = (name: string, ageMs: number) => {
    writeFileSync(join(root, name), '');
    const t = (started + ageMs) / 1000;
    utimesSync(join(root, name), t, t);
  };

  it('fresh while every input is older than the build', () => {
    source('cli/a.ts', -1000);
    build(['cli/a.ts']);
    assert.equal(distState(`${fake}/`, `${root}/`).fresh, true);
  });

  it('stale when an input changed after the build began, or is gone; absent without build.json', () => {
    source('cli/b.ts', 1000);
    build(['cli/a.ts', 'cli/b.ts']);
    assert.deepEqual(distState(`${fake}/`, `${root}/`), {
      fresh: false,
      reason: 'cli/b.ts changed after dist/ was built',
    });
    build(['cli/a.ts', 'cli/gone.ts']);
    assert.deepEqual(distState(`${fake}/`, `${root}/`), {
      fresh: false,
      reason: 'cli/gone.ts, compiled into dist/, is gone',
    });
    assert.deepEqual(distState(`${join(dir, 'nothing')}/`, `${root}/`), { fresh: false, reason: 'dist/ is not built' });
  });
});
