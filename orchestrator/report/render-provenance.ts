/**
 * The report header's provenance lines (orchestrator/report/provenance.ts): what ran, from
 * which commits, on which cards, and whether a card was throttled while it measured.
 */
import type { HostMachine, Provenance } from './provenance.ts';

/** An analysis as results hold it: with the provenance the writer added (provenance.ts). */
export type WithProvenance = { provenance?: Provenance };

const mhz = (c: { sm_mhz: number; mem_mhz: number } | null) =>
  c === null ? '—' : `SM ${c.sm_mhz} / mem ${c.mem_mhz} MHz`;

export function renderProvenance(analysis: object): string[] {
  const p = (analysis as WithProvenance).provenance;
  if (p === undefined) return [];
  const out = [
    `Provenance: orch ${p.orch.version ?? 'unknown'} (commit ${p.orch.commit ?? 'unknown'}${p.orch.dirty === true ? ', with uncommitted changes to tracked files' : ''}); spec hash ${p.spec_hash}, workload hash ${p.workload_hash}; ` +
      `run ${p.created} to ${p.ended ?? '(not ended)'} on ${p.hosts.length > 0 ? p.hosts.join(', ') : 'no host'}` +
      `${p.graphrt.length > 0 ? `; graphrt ${p.graphrt.join(', ')}` : ''}.`,
  ];
  for (const b of p.builds) {
    out.push(
      `- build ${b.name}: ref ${b.ref} = commit ${b.commit ?? 'unresolved'}${b.dirty ? ' (the checkout had uncommitted changes; they are not in this build)' : ''}`,
    );
  }
  for (const s of p.slurm ?? [])
    out.push(
      `- host ${s.host}: Slurm job ${s.job} (nodes ${s.nodes}${s.partition ? `, partition ${s.partition}` : ''})`,
    );
  for (const c of p.cards) {
    const what = c.name === null ? `${c.backend} card` : `${c.name}${c.sm === null ? '' : ` (SM ${c.sm})`}`;
    const driver = c.driver === null ? '' : `, driver ${c.driver}`;
    const clocks =
      c.clocks.start === null ? '' : `, clocks at start ${mhz(c.clocks.start)}, at end ${mhz(c.clocks.end)}`;
    out.push(`- card ${c.host}/${c.card}: ${what}${driver}${clocks}`);
  }
  out.push(...renderMachines(p.machines));
  const seen = Object.entries(p.throttle.reasons).map(([why, n]) => `${why} (${n} rep${n === 1 ? '' : 's'})`);
  if (seen.length > 0) out.push(`- clock event reasons seen: ${seen.join(', ')}`);
  if (p.throttle.reps.length > 0)
    out.push(
      `- **${p.throttle.reps.length} rep(s) taken while a card reported throttling:** ${p.throttle.reps.join(', ')}`,
    );
  out.push('');
  return out;
}

const NOT_REPORTED = 'not reported';
const or = (v: string | number | null, unit = ''): string => (v === null ? NOT_REPORTED : `${v}${unit}`);

/** One line per host and one per GPU: what the workers reported, "not reported" where they did not. */
function renderMachines(machines: HostMachine[] | undefined): string[] {
  if (machines === undefined) return [];
  if (machines.length === 0) return ['- machine: not reported (no committed block recorded one)'];
  return machines.flatMap((m) => [
    `- machine ${m.host}: ${or(m.os)} ${or(m.kernel)} (${or(m.distribution)}), ${or(m.arch)}; CPU ${or(m.cpu_model)}, ${or(m.cpu_threads)} threads; memory ${m.memory_bytes === null ? NOT_REPORTED : `${(m.memory_bytes / 2 ** 30).toFixed(1)} GiB`}; node ${or(m.node)}; compiler ${or(m.compiler)}` +
      (m.gpus_unread === null ? '' : `; GPUs ${NOT_REPORTED}: ${m.gpus_unread}`),
    ...m.gpus.map(
      (g) =>
        `- GPU ${m.host}/${g.card}: ${or(g.name)}, UUID ${or(g.uuid)}, driver ${or(g.driver)}, power limit ${or(g.power_limit_w, ' W')}, ` +
        `SM clock ${or(g.sm_mhz, ' MHz')} (max ${or(g.max_sm_mhz, ' MHz')}, application setting ${or(g.applications_sm_mhz, ' MHz')}), memory clock ${or(g.mem_mhz, ' MHz')}, persistence mode ${or(g.persistence_mode)}, compute mode ${or(g.compute_mode)}`,
    ),
  ]);
}
