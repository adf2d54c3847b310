/**
 * examples/ci/gate.sh, the CI step of the README, run as a CI runner would (GITHUB_ACTIONS set,
 * a step summary file): `orch submit --fail-on` on the embedded default, then the JUnit file and
 * the annotations. On the real graphrt's cpu backend (a small A/B, test/fixtures/specs/tiny-ab.yaml)
 * the step's exit code is the outcome's that `orch report` gives and the JUnit file (parsed by a
 * strict XML parser) agrees with it; a planted regression (the fixture rank, graph arm twice as
 * slow) fails the step with 4 and a <failure> naming the change, and passes under FAIL_ON=invalid.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { EXIT_CODES } from '../../orchestrator/report/outcome-exit-code.ts';
import '../utils/cluster-secret.ts';
import { runOrch } from '../cli/run-orch.ts';
import { FIXTURE_RANK } from '../orchestrator/orch-cluster.ts';
import { parseXml, type XmlNode } from '../utils/parse-xml.ts';

interface Gate {
  /** the temporary directory of this run: the caller removes it */
  root: string;
  code: number | null;
  stdout: string;
  stderr: string;
  dir: string;
  junit: XmlNode;
  summary: string;
}

function gate(spec: string, env: Record<string, string>): Gate {
  const root = mkdtempSync(join(tmpdir(), 'orch-ci-gate-'));
  const results = join(root, 'results');
  const summary = join(root, 'summary.md');
  const r = spawnSync('examples/ci/gate.sh', [spec], {
    encoding: 'utf8',
    timeout: 240_000,
    env: {
      ...process.env,
      REDIS_URL: '',
      ORCH_PREFIX: '',
      ORCH_LOG: 'warn',
      ORCH: `${process.execPath} bin/orch.mjs`,
      RESULTS: results,
      GITHUB_ACTIONS: 'true',
      GITHUB_STEP_SUMMARY: summary,
      ...env,
    },
  });
  const [id] = readdirSync(results).filter((f) => !f.endsWith('.xml'));
  assert.ok(id, `${r.stdout}\n${r.stderr}`);
  return {
    root,
    code: r.status,
    stdout: r.stdout,
    stderr: r.stderr,
    dir: join(results, id),
    junit: parseXml(readFileSync(join(results, 'orch-junit.xml'), 'utf8')),
    summary: existsSync(summary) ? readFileSync(summary, 'utf8') : '',
  };
}

/** Runs `check` on the gate's run, then removes its directory. */
function withGate(spec: string, env: Record<string, string>, check: (g: Gate) => void): void {
  const g = gate(spec, env);
  try {
    check(g);
  } finally {
    rmSync(g.root, { recursive: true, force: true });
  }
}

const outcomeCase = (junit: XmlNode) =>
  junit.children[0]!.children.find((c) => c.attrs.name?.startsWith('outcome of '))!;

describe('examples/ci/gate.sh', () => {
  it("on graphrt's cpu backend: the step's exit code is the outcome's, and the JUnit file says the same", () => {
    withGate('test/fixtures/specs/tiny-ab.yaml', {}, (g) => {
      const report = runOrch(['report', '--from', g.dir, '--json']);
      assert.equal(g.code, report.status, `${g.stdout}\n${g.stderr}`);
      const verdict = (JSON.parse(report.stdout) as { analysis: { verdict: string; backend: { backends: string[] } } })
        .analysis;
      assert.deepEqual(verdict.backend.backends, ['cpu']);
      const outcome = outcomeCase(g.junit);
      assert.equal(outcome.children.length === 0, g.code === 0, JSON.stringify(outcome));
      assert.match(
        outcome.children[0]?.attrs.message ?? `${verdict.verdict}: exit code 0`,
        new RegExp(`^${verdict.verdict}: exit code ${g.code}`),
      );
      assert.match(g.stdout, /^::(notice|warning|error) title=orch /m, 'the annotations, on a GitHub runner');
      assert.match(g.summary, new RegExp(`^### orch \\S+: ${verdict.verdict.toUpperCase()}$`, 'm'));
    });
  });

  it('a planted regression fails the step with 4 and a JUnit failure naming the change; FAIL_ON=invalid lets it pass', () => {
    const planted = { ORCH_GRAPHRT: FIXTURE_RANK, ORCH_CPU_CARDS: '2', FIXTURE_ARM_MS: 'eager:5,eager_aa:5,graph:10' };
    withGate('test/fixtures/specs/verdict-ab.yaml', planted, (g) => {
      assert.equal(g.code, EXIT_CODES.slower, `${g.stdout}\n${g.stderr}`);
      const cmp = g.junit.children[0]!.children.find((c) => c.attrs.name === 'graph vs eager')!;
      assert.equal(cmp.children[0]?.tag, 'failure');
      assert.match(
        cmp.children[0]!.attrs.message!,
        /^slower: change \+\d+\.\d+ % \(CI \+\d+\.\d+ % to \+\d+\.\d+ %, p [^)]+\)$/,
      );
      assert.match(g.stdout, /^::error title=orch \S+%3A graph vs eager::slower: change /m);
    });
    withGate('test/fixtures/specs/verdict-ab.yaml', { ...planted, FAIL_ON: 'invalid' }, (lenient) => {
      assert.equal(lenient.code, 0, `${lenient.stdout}\n${lenient.stderr}`);
      assert.equal(lenient.junit.attrs.failures, '0');
    });
  });
});
