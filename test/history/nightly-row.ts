/** A whole NightlyRow for tests: a slower night of spec ab (b vs a) unless `over` says otherwise. */
import type { NightlyRow } from '../../history/history-store.ts';

export function row(over: Partial<NightlyRow>): NightlyRow {
  return {
    run_id: '',
    suite: 's',
    scheduled_at: 0,
    spec_file: '/x/ab.yaml',
    spec_name: 'ab',
    spec_hash: 'h',
    experiment: 'e1',
    experiment_state: 'done',
    results_dir: '/r/e1',
    arm: 'b',
    reference: 'a',
    metric: 'ms',
    verdict: 'slower',
    change: 0.05,
    ci_low: 0.04,
    ci_high: 0.06,
    p_value: 0.001,
    arm_value: 2.1,
    reference_value: 2,
    aa_pass: true,
    gates_pass: true,
    gates: 'aa: pass',
    finding: 'regression',
    cards: ['cpu:0'],
    hosts: ['h1'],
    commits: { '/src': 'abc' },
    pairing: null,
    confirms: null,
    slurm: null,
    node_change: null,
    error: null,
    ...over,
  };
}
