/** `orch plan FILE`: the arms, blocks and run order a spec gives, and its hash; runs nothing. */
import type { Plan } from '../../jobs/plan.ts';
import { williamsRowCount } from '../../jobs/williams.ts';
import { defineCommand } from '../command.ts';

export const planCommand = defineCommand<{ file: string }>({
  command: 'plan <file>',
  describe: 'print the arms, blocks and order of reps of a spec, and its hash',
  builder: (y) => y.positional('file', { type: 'string', demandOption: true, describe: 'experiment spec (YAML)' }) as never,
  handler: async (argv) => {
    // Loaded here, not at the top: `orch --help` starts without the spec schemas (cli/main.ts).
    const { loadSpec } = await import('../../jobs/load-spec.ts');
    const { planExperiment } = await import('../../jobs/plan.ts');
    const { spec, hash } = loadSpec(argv.file);
    const plan = planExperiment(spec, hash);
    process.stdout.write(argv.json ? `${JSON.stringify(plan, null, 2)}\n` : formatPlan(plan));
  },
});

/** What the balanced order guarantees for these numbers (jobs/plan.ts states the property). */
function balanceNote(plan: Plan): string {
  const n = plan.arms.length;
  if (plan.order !== 'balanced' || n < 2) return '';
  const rows = williamsRowCount(n);
  if (plan.reps % rows === 0) return ` (position and carry-over balanced within each block: reps is a multiple of ${rows})`;
  if ((plan.reps * plan.blocks.length) % rows === 0) return ` (position and carry-over balanced over all blocks together; within a block only when reps is a multiple of ${rows})`;
  return ` (approximately balanced: exact balance needs blocks × reps to be a multiple of ${rows})`;
}

/** The plan as a table: one line per arm (its toggles), one line per block (rounds split by |). */
export function formatPlan(plan: Plan): string {
  const width = Math.max(...plan.arms.map((a) => a.name.length));
  const lines = [
    `experiment ${plan.name}  design ${plan.design}  hash ${plan.hash}`,
    `${plan.blocks.length} block(s) × ${plan.ranks} rank(s), placement ${plan.placement}, ${plan.reps} reps per arm, order ${plan.order}${plan.seed === undefined ? '' : ` (seed ${plan.seed})`}`,
    '',
    `arms (control: ${plan.control})`,
    ...plan.arms.map((a) => {
      const toggles = Object.entries(a.toggles).map(([t, v]) => `${t}=${v === true ? 'on' : v === false ? 'off' : v}`);
      const params = Object.entries(a.params ?? {}).map(([p, v]) => `${p}=${v}`);
      const note = a.aa_of ? `  (A/A copy of ${a.aa_of})` : '';
      return `  ${a.name.padEnd(width)}  ${[...toggles, ...params].join(' ') || '(no toggles)'}${note}`;
    }),
    '',
    `order${balanceNote(plan)}`,
    ...plan.blocks.map((b) => {
      const n = plan.arms.length;
      const rounds = Array.from({ length: b.sequence.length / n }, (_, r) => b.sequence.slice(r * n, (r + 1) * n).join(' '));
      return `  block ${b.index}: ${rounds.join(' | ')}`;
    }),
  ];
  return `${lines.join('\n')}\n`;
}
