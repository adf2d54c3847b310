/**
 * The report header's provenance lines (orchestrator/report/provenance.ts): what ran, from
 * which commits, on which cards, and whether a card was throttled while it measured.
 */
import type { Provenance } from './provenance.ts';

/** An analysis as results hold it: with the provenance the writer added (provenance.ts). */
export type WithProvenance = { provenance?: Provenance };

const mhz = (c: { sm_mhz: number; mem_mhz: number } | null) => (c === null ? '—' : `SM ${c.sm_mhz} / mem ${c.mem_mhz} MHz`);

export function renderProvenance(analysis: object): string[] {
  const p = (analysis as WithProvenance).provenance;
  if (p === undefined) return [];
  const out = [
    `Provenance: orch ${p.orch.version ?? 'unknown'} (commit ${p.orch.commit ?? 'unknown'}${p.orch.dirty === true ? ', with uncommitted changes to tracked files' : ''}); spec hash ${p.spec_hash}, workload hash ${p.workload_hash}; ` +
      `run ${p.created} to ${p.ended ?? '(not ended)'} on ${p.hosts.length > 0 ? p.hosts.join(', ') : 'no host'}` +
      `${p.graphrt.length > 0 ? `; graphrt ${p.graphrt.join(', ')}` : ''}.`,
  ];
  for (const b of p.builds) {
    out.push(`- build ${b.name}: ref ${b.ref} = commit ${b.commit ?? 'unresolved'}${b.dirty ? ' (the checkout had uncommitted changes; they are not in this build)' : ''}`);
  }
  for (const s of p.slurm ?? []) out.push(`- host ${s.host}: Slurm job ${s.job} (nodes ${s.nodes}${s.partition ? `, partition ${s.partition}` : ''})`);
  for (const c of p.cards) {
    const what = c.name === null ? `${c.backend} card` : `${c.name}${c.sm === null ? '' : ` (SM ${c.sm})`}`;
    const driver = c.driver === null ? '' : `, driver ${c.driver}`;
    const clocks = c.clocks.start === null ? '' : `, clocks at start ${mhz(c.clocks.start)}, at end ${mhz(c.clocks.end)}`;
    out.push(`- card ${c.host}/${c.card}: ${what}${driver}${clocks}`);
  }
  const seen = Object.entries(p.throttle.reasons).map(([why, n]) => `${why} (${n} rep${n === 1 ? '' : 's'})`);
  if (seen.length > 0) out.push(`- clock event reasons seen: ${seen.join(', ')}`);
  if (p.throttle.reps.length > 0) out.push(`- **${p.throttle.reps.length} rep(s) taken while a card reported throttling:** ${p.throttle.reps.join(', ')}`);
  out.push('');
  return out;
}
