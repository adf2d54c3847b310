// `orch submit` (waiting, embedded) exits with the verdict's code, as `orch report` does:
// planted step times from the fixture rank (FIXTURE_ARM_MS) make the graph arm faster, slower,
// or the A/A twin differ from its control (a failed gate: invalid).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { EXIT_CODES } from '../../orchestrator/report/verdict-exit-code.ts';
import { FIXTURE_RANK } from '../orchestrator/orch-cluster.ts';
import { runOrch } from './run-orch.ts';

const cases = [
  { verdict: 'faster', arms: 'eager:10,eager_aa:10,graph:5' },
  { verdict: 'slower', arms: 'eager:5,eager_aa:5,graph:10' },
  { verdict: 'invalid', arms: 'eager:10,eager_aa:14,graph:5' },
] as const;

describe('orch submit: the exit code is the verdict', () => {
  for (const c of cases) {
    it(`${c.verdict}: exit ${EXIT_CODES[c.verdict]}`, () => {
      const dir = mkdtempSync(join(tmpdir(), 'orch-verdict-'));
      try {
        const r = runOrch(['submit', 'test/fixtures/specs/verdict-ab.yaml', '--results', dir, '--json'], {
          REDIS_URL: '',
          ORCH_PREFIX: '',
          ORCH_GRAPHRT: FIXTURE_RANK,
          ORCH_CPU_CARDS: '2',
          FIXTURE_ARM_MS: c.arms,
        });
        const out = JSON.parse(r.stdout) as { state: string; verdict: string };
        assert.equal(out.state, 'done', r.stderr);
        assert.equal(out.verdict, c.verdict, r.stderr);
        assert.equal(r.status, EXIT_CODES[c.verdict], r.stderr);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }
});
