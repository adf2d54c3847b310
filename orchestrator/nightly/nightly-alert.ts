/**
 * What a nightly alert says: the suite, the spec, the comparison, the change and its CI, the
 * commits, the results directory, and in `text` one Slack-compatible line block saying it all.
 */
export type AlertKind = 'regression' | 'invalid' | 'failed' | 'machine-change' | 'node-change';

export interface NightlyAlert {
  kind: AlertKind;
  suite: string;
  spec: string;
  spec_file: string;
  scheduled_at: string;
  experiment: string | null;
  /** `arm vs reference`, or null for a night that did not compare */
  comparison: string | null;
  change: number | null;
  ci: [number, number] | null;
  commits: Record<string, string>;
  results_dir: string | null;
  /** what happened and why, one sentence */
  message: string;
  text: string;
}

const HEADLINE: Record<AlertKind, string> = {
  regression: 'regression',
  invalid: 'invalid run (a gate failed)',
  failed: 'nightly run could not run',
  'machine-change': 'the machine changed, not the code',
  'node-change': 'the Slurm nodes changed: not compared with the nights before',
};

export function signedPct(x: number | null | undefined): string {
  if (x === null || x === undefined || !Number.isFinite(x)) return 'n/a';
  return `${x >= 0 ? '+' : ''}${(x * 100).toFixed(1)} %`;
}

export function makeAlert(a: Omit<NightlyAlert, 'text'>): NightlyAlert {
  const commits =
    Object.entries(a.commits)
      .map(([dir, c]) => `${dir}@${c.slice(0, 12)}`)
      .join(', ') || 'none recorded';
  const change =
    a.change === null
      ? ''
      : `\nchange: ${signedPct(a.change)}${a.ci ? ` (CI ${signedPct(a.ci[0])} to ${signedPct(a.ci[1])})` : ''}`;
  const text =
    `[orch nightly] ${HEADLINE[a.kind]}: suite ${a.suite}, spec ${a.spec}${a.comparison ? `, ${a.comparison}` : ''} (night of ${a.scheduled_at})\n` +
    `${a.message}${change}\ncommits: ${commits}\nexperiment: ${a.experiment ?? 'none'}\nresults: ${a.results_dir ?? 'none'}`;
  return { ...a, text };
}
