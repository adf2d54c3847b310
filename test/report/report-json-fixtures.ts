/**
 * One Analysis for each report.json section the simulated A/B and leave-one-out leave empty: a
 * throttled rep (and a re-run one), a failed block, a capture probe, a sequential stop, and a
 * nightly row's report (the provenance with its Slurm hosts and machines). Each comes from
 * analyzeExperiment over committed records as jobs/ defines them, never a hand-written Analysis.
 */
import { GRAPHRT_PROBES } from '../../jobs/graphrt-protocol.ts';
import type { ProbeRecord } from '../../jobs/probe-record.ts';
import { allPlannedReps } from '../../jobs/rep-ref.ts';
import type { Provenance } from '../../orchestrator/report/provenance.ts';
import { analyzeExperiment } from '../../orchestrator/stats/analyze.ts';
import type { Analysis } from '../../orchestrator/stats/types.ts';
import { abWithAa } from '../stats/fixtures.ts';

/** hygiene flag: a rep measured on a throttled card is used and says why; another is a re-run (hygiene discard). */
export function throttledRep(): Analysis {
  const ab = abWithAa(11);
  const [first, second, ...rest] = ab.reps;
  return analyzeExperiment({
    ...ab,
    hygiene: 'flag',
    reps: [
      { ...first!, throttled: ['hw_slowdown', 'sw_thermal_slowdown'] },
      { ...second!, discarded_runs: [['hw_power_brake_slowdown']] },
      ...rest,
    ],
  });
}

/** Block 1's attempt failed: every rep of it is a failed record, none committed. */
export function failedBlock(): Analysis {
  const ab = abWithAa(12);
  const lost = ab.plan.blocks[1]!.index;
  const failed = allPlannedReps(ab.plan)
    .filter((p) => p.block === lost)
    .map((p) => ({
      ...p,
      reason: `rank 0 exited 70 (CUDA_ERROR_ILLEGAL_ADDRESS) on h1.example/0`,
      kind: 'failed' as const,
    }));
  // what the rank printed last, recorded with the failure (jobs/rank-output-tail.ts)
  const rank_output = [
    {
      block: lost,
      attempt: 1,
      rank: 0,
      card: 'cpu0',
      host: 'h1.example',
      stdout: ['step 7: 1.25 ms'],
      stderr: ['CUDA_ERROR_ILLEGAL_ADDRESS at decode.cu:88'],
    },
  ];
  return analyzeExperiment({ ...ab, reps: ab.reps.filter((r) => r.block !== lost), failed, rank_output });
}

/** design probe: every planned rep a probe record whose five probes passed, one with a refusal that was not expected. */
export function captureProbe(): Analysis {
  const ab = abWithAa(13);
  const plan = { ...ab.plan, design: 'probe' as const };
  const probes: ProbeRecord[] = allPlannedReps(plan).map((p, i) => ({
    ...p,
    experiment: 'probe-fixture',
    attempt: 1,
    epoch: 1,
    backend: 'cpu',
    host: 'h1.example',
    ranks: [
      {
        rank: 0,
        card: 'cpu0',
        device: 'cpu emulation: fixture',
        probes: GRAPHRT_PROBES.map((name) => ({
          name,
          pass: !(i === 0 && name === 'recapture_refusals'),
          detail: {
            launch_counter: {
              counted: 1,
              expected: 1,
              launches_during_replays: 0,
              graph_nodes: 64,
              instantiate_ms: 0.8,
            },
            pinned_exact: { L: 0.25, P: 0.5, win: true },
            replay_dispatch: { dispatches_per_replay: 1 },
            unpinned_diverges: {},
            recapture_refusals: {
              capture_over_live_graph: i === 0 ? 'accepted' : 'RECAPTURE_OVER_LIVE_GRAPH',
              capture_without_prepare: 'CAPTURE_WITHOUT_PREPARE',
            },
          }[name] as Record<string, unknown>,
        })),
      },
    ],
  }));
  return analyzeExperiment({ ...ab, plan, reps: [], probes, devices: ['cpu emulation: fixture'] });
}

/**
 * stopping: sequential with a large planted effect: decided at its first look (two blocks), the
 * later blocks' reps `stopped`, never run.
 */
export function sequentialStop(): Analysis {
  const ab = abWithAa(14, {
    blocks: 8,
    arms: [
      { name: 'A', mu: 40, toggles: { graph: false } },
      { name: 'B', mu: 40 * 0.8, toggles: { graph: true } },
      { name: 'A_aa', mu: 40, toggles: { graph: false }, aa_of: 'A' },
    ],
  });
  const plan = { ...ab.plan, sequential: { looks: 4 } };
  const ran = new Set(plan.blocks.slice(0, 2).map((b) => b.index));
  const stopped = allPlannedReps(plan)
    .filter((p) => !ran.has(p.block))
    .map((p) => ({ ...p, reason: 'stopped: the sequential experiment decided at look 1', kind: 'stopped' as const }));
  return analyzeExperiment({
    ...ab,
    plan,
    reps: ab.reps.filter((r) => ran.has(r.block)),
    failed: stopped,
    ended: [...ran].map((block, i) => ({ block, ended_at: 1_000 + i })),
  });
}

/** What a nightly run writes before its rows are read (orchestrator/nightly/night-rows.ts): the analysis with its provenance, Slurm hosts included. */
export function nightlyReport(): Analysis & { provenance: Provenance } {
  const provenance: Provenance = {
    orch: { version: '0.1.0', commit: '0123456789abcdef0123456789abcdef01234567', dirty: false },
    spec_hash: 'a'.repeat(64),
    workload_hash: 'b'.repeat(64),
    created: '2026-12-04T02:00:00.000Z',
    ended: '2026-12-04T02:40:00.000Z',
    builds: [{ name: 'main', ref: 'main', commit: '0123456789abcdef0123456789abcdef01234567', dirty: false }],
    graphrt: ['0.4.0'],
    hosts: ['gpu-a.example'],
    slurm: [{ host: 'gpu-a.example', node: 'node017', job: '481516', nodes: 'node017', partition: 'h200' }],
    cards: [
      {
        host: 'gpu-a.example',
        card: 'GPU-0',
        backend: 'cuda',
        name: 'NVIDIA H200',
        sm: '9.0',
        driver: '570.86.15',
        cuda_runtime: '12.8',
        clocks: { start: { sm_mhz: 1980, mem_mhz: 3201 }, end: { sm_mhz: 1755, mem_mhz: 3201 } },
      },
    ],
    throttle: { reasons: { sw_thermal_slowdown: 2 }, reps: ['0/B/1', '1/A/0'] },
    machines: [
      {
        host: 'gpu-a.example',
        os: 'Linux',
        distribution: 'Ubuntu 24.04 LTS',
        kernel: '6.8.0',
        arch: 'x64',
        cpu_model: 'fixture CPU',
        cpu_threads: 64,
        memory_bytes: 2 ** 39,
        node: 'v20.19.0',
        compiler: 'cc (Ubuntu 13.2.0) 13.2.0',
        gpus: [],
        gpus_unread: 'nvidia-smi: not found',
      },
    ],
  };
  return { ...analyzeExperiment(abWithAa(15)), provenance };
}
