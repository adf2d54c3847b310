/**
 * A command gang with more ranks than any host has cards (configs/torch-tp.yaml at ranks: 3, the
 * embedded default's local worker offering 2 cpu cards): `orch submit` exits 2 before anything
 * runs (orchestrator/experiment/submit.ts `checkPlacement`, TOO_MANY_RANKS), naming the spec
 * file, the host and its cards, and the fix. No rank process starts, nothing is submitted.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { listGpus } from '../../worker/discover-cards.ts';
import { runOrch, STACK_FRAME } from '../cli/run-orch.ts';

const gpus = await listGpus().catch(() => []);
const CARDS = 2;
const RANKS = CARDS + 1;

test('a command gang of more ranks than the host has cards is refused at submit, naming the host and the fix', {
  skip: gpus.length > 0 ? "a GPU is visible: the local worker's cards are the GPUs, not ORCH_CPU_CARDS" : false,
  timeout: 120_000,
}, () => {
  const dir = mkdtempSync(join(tmpdir(), 'orch-gang-over-cards-'));
  try {
    const marker = join(dir, 'a-rank-started');
    const spec = readFileSync('configs/torch-tp.yaml', 'utf8')
      .replace('ranks: 2', `ranks: ${RANKS}`)
      .replace('cmd: /usr/bin/python3', `cmd: touch ${marker} && /usr/bin/python3`);
    assert.ok(spec.includes(`ranks: ${RANKS}`) && spec.includes(marker), 'configs/torch-tp.yaml changed its shape');
    const file = join(dir, 'tp3.yaml');
    writeFileSync(file, spec);
    const results = join(dir, 'results');
    const r = runOrch(['submit', file, '--results', results], {
      REDIS_URL: '',
      ORCH_PREFIX: '',
      ORCH_LOG: 'warn',
      ORCH_CPU_CARDS: String(CARDS),
    });
    assert.equal(r.status, 2, r.stdout + r.stderr);
    assert.ok(r.stderr.includes(`${file}: blocks.ranks = ${RANKS}, placement host`), r.stderr);
    assert.match(r.stderr, new RegExp(`needs ${RANKS} cards on one host; the largest host, \\S+, has ${CARDS}`));
    assert.match(r.stderr, /hint: lower blocks\.ranks, register a larger host, or set blocks\.placement: spread/);
    assert.doesNotMatch(r.stderr, STACK_FRAME);
    assert.doesNotMatch(r.stdout, /^experiment /m, 'nothing was submitted');
    assert.equal(existsSync(marker), false, 'no rank process started');
    assert.equal(existsSync(results), false, 'no results were written');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
