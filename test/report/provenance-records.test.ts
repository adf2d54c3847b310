/**
 * The provenance from the committed records alone (orchestrator/report/provenance.ts
 * `ProvenanceFold`): a spread gang's commit record names both hosts' ranks and machines, one host
 * under Slurm; a second block on the same cards adds nothing twice; the reps' clocks land on the
 * cards the commit records named. No event is read.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import type { CommitRecord } from '../../jobs/commit-record.ts';
import { ProvenanceFold } from '../../orchestrator/report/provenance.ts';
import { parseConfigText } from '../../orchestrator/spec/load-spec.ts';

const machine = (node: string) => ({
  os: 'Linux',
  distribution: 'Ubuntu 24.04',
  kernel: '6.8.0',
  arch: 'x64',
  cpu_model: 'planted',
  cpu_threads: 64,
  memory_bytes: 2 ** 39,
  node,
  compiler: null,
  gpus: [],
  gpus_unread: null,
});

const rank = (n: number, host: string, version: string) => ({
  rank: n,
  host,
  card: `GPU-${n}`,
  backend: 'cuda',
  device: 'NVIDIA H200',
  sm: '9.0',
  driver: '570.86.15, runtime 12.8',
  graphrt: [version],
  program: null,
});

const commit = (block: number): CommitRecord => ({
  attempt: 1,
  epoch: 10 + block,
  host: 'gpu-a',
  committed: 2_000 + block,
  ranks: [rank(0, 'gpu-a', '0.4.0'), rank(1, 'gpu-b', '0.4.0')],
  hosts: [
    { host: 'gpu-a', machine: machine('node017') },
    {
      host: 'gpu-b',
      machine: machine('node018'),
      slurm: { job: '4815', nodes: 'node[017-018]', partition: 'h200', node: 'node018', end: null },
    },
  ],
});

test("a spread gang's commit records: both hosts, their cards, machines and Slurm allocation, each once", () => {
  const fold = new ProvenanceFold();
  fold.addCommit(commit(0));
  fold.addCommit(commit(1));
  const loaded = parseConfigText('configs/ab.yaml', readFileSync('configs/ab.yaml', 'utf8'));
  assert.equal(loaded.kind, 'experiment');
  if (loaded.kind !== 'experiment') return;
  const p = fold.result({
    spec: loaded.spec,
    hash: loaded.hash,
    created: 0,
    ended: null,
    orch: { version: null, commit: null },
  });
  assert.deepEqual(p.hosts, ['gpu-a', 'gpu-b']);
  assert.deepEqual(p.graphrt, ['0.4.0']);
  assert.deepEqual(
    p.cards.map((c) => [c.host, c.card, c.name, c.cuda_runtime]),
    [
      ['gpu-a', 'GPU-0', 'NVIDIA H200', '12.8'],
      ['gpu-b', 'GPU-1', 'NVIDIA H200', '12.8'],
    ],
  );
  assert.deepEqual(
    p.machines?.map((m) => [m.host, m.node]),
    [
      ['gpu-a', 'node017'],
      ['gpu-b', 'node018'],
    ],
  );
  assert.deepEqual(p.slurm, [
    { host: 'gpu-b', node: 'node018', job: '4815', nodes: 'node[017-018]', partition: 'h200' },
  ]);
});
