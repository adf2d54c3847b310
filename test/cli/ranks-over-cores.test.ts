/**
 * The embedded default where no GPU is visible: a spec with more ranks per block than the machine
 * has cores is refused before anything runs (RANKS_OVER_CORES, exit 2, the file, the numbers and
 * the fix), never run as that many cpu cards time-sharing the cores; ORCH_CPU_CARDS named
 * explicitly turns the refusal into a warning that says the timings mean nothing.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { checkRanksOverCores } from '../../cli/embedded/ranks-over-cores.ts';
import { UserInputError } from '../../jobs/errors.ts';
import { listGpus } from '../../worker/discover-cards.ts';
import { runOrch, STACK_FRAME } from './run-orch.ts';

const cores = cpus().length;
const gpus = await listGpus().catch(() => []);

describe('more ranks than cores on the embedded default', () => {
  it('orch submit refuses it with the file, the numbers and the fix', {
    skip: gpus.length > 0 ? 'a GPU is visible: the ranks run on it' : false,
    timeout: 120_000,
  }, () => {
    const dir = mkdtempSync(join(tmpdir(), 'orch-ranks-cores-'));
    try {
      const file = join(dir, 'wide.yaml');
      const ranks = cores + 1;
      writeFileSync(
        file,
        readFileSync('test/fixtures/specs/three-ranks.yaml', 'utf8').replace('ranks: 3', `ranks: ${ranks}`),
      );
      const r = runOrch(['submit', file, '--results', join(dir, 'results')], {
        REDIS_URL: '',
        ORCH_PREFIX: '',
        ORCH_LOG: 'warn',
        ORCH_CPU_CARDS: '',
      });
      assert.equal(r.status, 2, r.stdout + r.stderr);
      assert.ok(r.stderr.includes(`${file}: blocks.ranks ${ranks} on this machine's ${cores} CPU core`), r.stderr);
      assert.match(r.stderr, /every step time would measure the OS scheduler, not the workload/);
      assert.ok(r.stderr.includes(`set blocks.ranks to at most ${cores} in ${file}`), r.stderr);
      assert.doesNotMatch(r.stderr, STACK_FRAME);
      assert.doesNotMatch(r.stdout, /^experiment /m, 'nothing was submitted');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the rule: refused over the cores on cpu cards, a warning with ORCH_CPU_CARDS, nothing on GPUs or within the cores', () => {
    const cpu = Array.from({ length: 8 }, () => ({ backend: 'cpu' as const }));
    const base = { file: 's.yaml', ranks: 8, cards: cpu, cores: 2, explicitCpuCards: undefined };
    assert.throws(
      () => checkRanksOverCores(base),
      (err: unknown) => err instanceof UserInputError && err.code === 'RANKS_OVER_CORES',
    );
    assert.throws(() => checkRanksOverCores({ ...base, explicitCpuCards: '' }), UserInputError);
    assert.match(
      checkRanksOverCores({ ...base, explicitCpuCards: '8' }) ?? '',
      /^WARNING: s\.yaml: blocks\.ranks 8 .* ORCH_CPU_CARDS=8 runs it anyway: use this run to check that the spec works, never its timings\.$/,
    );
    assert.equal(checkRanksOverCores({ ...base, ranks: 2 }), null);
    assert.equal(checkRanksOverCores({ ...base, cards: cpu.map(() => ({ backend: 'cuda' as const })) }), null);
  });
});
