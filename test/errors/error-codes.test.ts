/**
 * The error registry against the tree: every code the source constructs an error with is
 * registered, every registered code is used, and each kind maps to its retry and exit policy.
 * The end-to-end side of the mapping runs on real workers in test/worker/bad-input.test.ts
 * (an invalid payload, BLOCK_PAYLOAD_INVALID: unrecoverable), test/worker/gang-failure.test.ts
 * (RANK_EXITED unrecoverable, RANK_DIED retried) and test/worker/lease-loss.test.ts (LEASE_LOST
 * retried); test/cli/cli.test.ts checks the exit codes of real `orch` processes.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { UnrecoverableError } from 'bullmq';
import {
  ERROR_CODES,
  type ErrorCode,
  exitCodeFor,
  isErrorCode,
  KIND_POLICY,
  kindOf,
  printsStack,
  retryable,
} from '../../jobs/error-codes.ts';
import { OrchError, SpecError, UserInputError } from '../../jobs/errors.ts';
import { toJobError } from '../../store/job-error.ts';

// every top-level folder the type checker covers, but the tests, benchmarks and build scripts: a
// new folder of production code is searched without anyone remembering to add it here
const SOURCE_DIRS = (JSON.parse(readFileSync('tsconfig.json', 'utf8')) as { include: string[] }).include.filter(
  (d) => !['test', 'bench', 'scripts'].includes(d),
);

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return sources(p);
    return p.endsWith('.ts') ? [p] : [];
  });
}

/** Every string literal in the code argument of `new OrchError(`, `new XError(` and `super(`. */
function codesConstructed(): Map<string, string[]> {
  const found = new Map<string, string[]>();
  const call = /(?:new [A-Za-z]*Error|super)\(\s*([^,;)]*?),/g;
  for (const file of SOURCE_DIRS.flatMap(sources)) {
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(call)) {
      for (const lit of (m[1] ?? '').matchAll(/'([A-Z][A-Z0-9_]+)'/g)) {
        const line = text.slice(0, m.index).split('\n').length;
        found.set(lit[1]!, [...(found.get(lit[1]!) ?? []), `${file}:${line}`]);
      }
    }
  }
  return found;
}

describe('error registry', () => {
  const used = codesConstructed();

  it('finds the codes of the tree (the scan works)', () => {
    for (const c of [
      'SPEC_INVALID',
      'LEASE_LOST',
      'RANK_EXITED',
      'RANK_DIED',
      'NO_WAIT_EMBEDDED',
      'METRIC_TOO_FEW_STEPS',
    ]) {
      assert.ok(used.has(c), `${c} not found by the scan`);
    }
  });

  it('registers every code the source constructs an error with', () => {
    const missing = [...used].filter(([code]) => !isErrorCode(code)).map(([code, at]) => `${code} (${at.join(', ')})`);
    assert.deepEqual(missing, [], 'add these to jobs/error-codes.ts');
  });

  it('has no code the source never uses', () => {
    const all = SOURCE_DIRS.flatMap(sources)
      .filter((f) => !f.endsWith('error-codes.ts'))
      .map((f) => readFileSync(f, 'utf8'))
      .join('\n');
    const dead = Object.keys(ERROR_CODES).filter((c) => !all.includes(`'${c}'`));
    assert.deepEqual(dead, []);
  });

  it('gives every code a one-line meaning', () => {
    for (const [code, info] of Object.entries(ERROR_CODES)) {
      assert.match(code, /^[A-Z][A-Z0-9_]+$/);
      assert.ok(info.meaning.length > 10 && !info.meaning.includes('\n'), code);
    }
  });

  it('maps each kind to retry and exit code', () => {
    assert.deepEqual(KIND_POLICY, {
      'user-input': { retry: false, exitCode: 2, stack: false },
      transient: { retry: true, exitCode: 1, stack: false },
      deterministic: { retry: false, exitCode: 1, stack: false },
      bug: { retry: false, exitCode: 1, stack: true },
    });
    const cases: [unknown, ReturnType<typeof kindOf>, boolean, number][] = [
      [new UserInputError('COMMAND_FAILED', 'exited 2'), 'user-input', false, 2],
      [new SpecError([{ file: 'a.yaml', line: 1, path: 'reps', message: 'bad' }]), 'user-input', false, 2],
      [new OrchError('LEASE_LOST', 'lease expired'), 'transient', true, 1],
      [new OrchError('RANK_EXITED', 'exited with code 3'), 'deterministic', false, 1],
      [new OrchError('BLOCK_PAYLOAD_INVALID', 'steps: too small'), 'bug', false, 1],
      [Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }), 'unclassified', true, 1],
    ];
    for (const [err, kind, retry, exit] of cases) {
      assert.equal(kindOf(err), kind, String(err));
      assert.equal(retryable(err), retry, String(err));
      assert.equal(exitCodeFor(err), exit, String(err));
    }
    assert.equal(printsStack(new OrchError('LEASE_LOST', 'x')), false);
    assert.equal(printsStack(new OrchError('BLOCK_WRONG_HOST', 'x')), true);
    assert.equal(printsStack(new TypeError('x is undefined')), true);
  });

  it('translates for BullMQ: retried errors pass through, the others become UnrecoverableError', () => {
    const lost = new OrchError('LEASE_LOST', 'lease expired');
    assert.equal(toJobError(lost), lost);
    const build = toJobError(new UserInputError('BUILD_FAILED', 'the build exited 2'));
    assert.ok(build instanceof UnrecoverableError);
    assert.equal(build.message, 'the build exited 2');
    const prefixed = toJobError(
      new UserInputError('BUILD_FAILED', 'the build exited 2'),
      'BUILD_FAILED: the build exited 2',
    );
    assert.equal(prefixed.message, 'BUILD_FAILED: the build exited 2');
    const already = new UnrecoverableError('given up');
    assert.equal(toJobError(already), already);
    assert.equal(retryable(already), false);
  });

  it('types the code: a misspelt code does not compile', () => {
    // @ts-expect-error 'LEASE_LOTS' is not a registered code
    const typo = new OrchError('LEASE_LOTS', 'x');
    assert.equal(kindOf(typo), 'unclassified');
    // @ts-expect-error a UserInputError carries only codes of kind user-input
    void new UserInputError('LEASE_LOST', 'x');
    const code: ErrorCode = 'SPEC_INVALID';
    assert.ok(isErrorCode(code));
  });
});
