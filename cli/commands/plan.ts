/**
 * `orch plan FILE`: the arms, blocks and run order a spec gives, and its hash; runs nothing.
 * `orch plan --power FILE --noise-from RUN`: the reps and blocks a target effect needs at the
 * noise a prior run measured, and their wall time (orchestrator/report/power-plan.ts).
 */

import { describeSizing, START_UP_SHARE } from '../../jobs/block-sizing.ts';
import { UserInputError } from '../../jobs/errors.ts';
import type { Plan } from '../../jobs/plan.ts';
import { williamsRowCount } from '../../jobs/williams.ts';
import { defineCommand } from '../command.ts';
import type { RedisUrlArgs } from '../embedded/redis-target.ts';
import { withRedisUrlFile } from '../redis-url-option.ts';
import { jsonLine } from '../terminal/json-line.ts';

/** The effects a power plan shows when --effect is not given. */
const DEFAULT_EFFECTS = ['1%', '2%', '5%'];
const DEFAULT_POWER = 0.8;

export const planCommand = defineCommand({
  command: 'plan [file]',
  describe:
    'print the arms, blocks and order of reps of a spec, and its hash; with --power, the reps and blocks an effect needs',
  builder: (y) =>
    withRedisUrlFile(y)
      .positional('file', { type: 'string', describe: 'experiment spec (YAML)' })
      .option('power', {
        type: 'string',
        describe: 'plan for power: `--power SPEC`, or `--power 0.9` for a target other than 0.8',
      })
      .option('noise-from', {
        type: 'string',
        describe:
          'the prior run whose noise and times to plan from: its results directory, or its experiment id (results/<id>, else Redis)',
      })
      .option('effect', {
        type: 'string',
        array: true,
        describe: `effects to plan for, e.g. 2% (repeat or comma-separate; default ${DEFAULT_EFFECTS.join(', ')})`,
      })
      .option('results', { type: 'string', default: 'results', describe: 'where results/<id>/ directories are' }),
  handler: async (argv) => {
    // Loaded here, not at the top: `orch --help` starts without the spec schemas (cli/main.ts).
    const { loadSpec } = await import('../../orchestrator/spec/load-spec.ts');
    const { planExperiment } = await import('../../jobs/plan.ts');
    if (argv.power === undefined) {
      if (argv.file === undefined)
        throw new UserInputError('CLI_USAGE', 'orch plan needs a spec file', {
          hint: 'run orch --help for the options: orch plan SPEC, or orch plan --power SPEC --noise-from results/<id>',
        });
      const { spec, hash } = loadSpec(argv.file);
      const plan = planExperiment(spec, hash);
      const sequential =
        plan.sequential === undefined
          ? []
          : (await import('../../orchestrator/report/sequential-plan.ts')).sequentialPlanLines(plan);
      process.stdout.write(argv.json ? jsonLine(plan, 2) : formatPlan(plan, sequential));
      return;
    }
    const { file, target } = powerArgs(argv.file, argv.power);
    const effects = effectArgs(argv.effect ?? DEFAULT_EFFECTS);
    if (argv.noiseFrom === undefined) {
      throw new UserInputError(
        'CLI_USAGE',
        `orch plan --power ${file}: the reps a target effect needs depend on the noise of a run of this workload, and there is none: give --noise-from`,
        {
          hint: `run it once as it is: orch submit ${file} (it writes results/<id>/; gates: { aa: true } gives the cleanest noise), then: orch plan --power ${file} --noise-from results/<id>`,
        },
      );
    }
    const { spec, hash } = loadSpec(file);
    const plan = planExperiment(spec, hash);
    const prior = await readPrior(argv.noiseFrom, argv.results, argv);
    const { powerPlan, formatPowerPlan } = await import('../../orchestrator/report/power-plan.ts');
    const { DEFAULT_ALPHA } = await import('../../orchestrator/stats/defaults.ts');
    const p = powerPlan({ file, spec, plan, prior, effects, target, alpha: DEFAULT_ALPHA });
    process.stdout.write(argv.json ? jsonLine(p, 2) : formatPowerPlan(p));
  },
});

/** A results directory (or an id under --results), else the experiment from Redis by id. */
async function readPrior(ref: string, root: string, redisArgs: RedisUrlArgs) {
  const { priorRunFromDir, priorRunFromRedis } = await import('../../orchestrator/results/prior-run.ts');
  const fromDir = await priorRunFromDir(ref, root);
  if (fromDir !== null) return fromDir;
  if (ref.includes('/')) {
    throw new UserInputError('RESULTS_DIR_INVALID', `--noise-from ${ref}: no such results directory`, {
      hint: 'give results/<experiment-id> as orch submit or orch report wrote it, or an experiment id',
    });
  }
  const { orchLog } = await import('../embedded/log.ts');
  const { requireTarget } = await import('../embedded/redis-target.ts');
  const target = await requireTarget(`plan --power --noise-from ${ref}`, orchLog('plan'), redisArgs);
  try {
    return await priorRunFromRedis(target.redis, target.prefix, ref);
  } finally {
    await target.close();
  }
}

/** `0.02`, `2%`, `2 %` → 0.02; NaN when it is none of these. */
function fraction(text: string): number {
  const m = /^\s*([0-9]*\.?[0-9]+(?:e-?[0-9]+)?)\s*(%?)\s*$/i.exec(text);
  if (!m) return Number.NaN;
  return Number(m[1]) / (m[2] === '%' ? 100 : 1);
}

/**
 * --power is both the switch that names the spec (`--power SPEC`) and the target power
 * (`--power 0.9`): a value that reads as a number is the target, any other the spec.
 */
function powerArgs(file: string | undefined, power: string | string[]): { file: string; target: number } {
  const values = [power].flat().filter((v) => v !== '');
  const numbers = values.filter((v) => !Number.isNaN(fraction(v)));
  const files = [...values.filter((v) => Number.isNaN(fraction(v))), ...(file === undefined ? [] : [file])];
  if (files.length !== 1) {
    throw new UserInputError(
      'CLI_USAGE',
      files.length === 0
        ? 'orch plan --power needs a spec file'
        : `orch plan --power takes one spec file, got ${files.join(', ')}`,
      {
        hint: 'orch plan --power SPEC --noise-from results/<id> [--effect 2%] [--power 0.8]',
      },
    );
  }
  const target = numbers.length === 0 ? DEFAULT_POWER : fraction(numbers.at(-1)!);
  if (!(target > 0 && target < 1)) {
    throw new UserInputError(
      'CLI_USAGE',
      `--power ${numbers.at(-1)}: a target power is a probability strictly between 0 and 1`,
      { hint: 'e.g. --power 0.8 (or 80%)' },
    );
  }
  return { file: files[0]!, target };
}

/** --effect values: each a relative effect > 0 and < 1 (2% or 0.02), comma lists allowed. */
function effectArgs(given: string[]): number[] {
  return given
    .flatMap((g) => g.split(','))
    .map((text) => {
      const e = fraction(text);
      if (!(e > 0 && e < 1)) {
        throw new UserInputError(
          'CLI_USAGE',
          `--effect ${text.trim()}: an effect is a relative change greater than 0 and less than 100 %`,
          { hint: "e.g. --effect 2% (or 0.02); the direction is the metric's better one" },
        );
      }
      return e;
    });
}

/** What the balanced order guarantees for these numbers (jobs/plan.ts states the property). */
function balanceNote(plan: Plan): string {
  const n = plan.arms.length;
  if (plan.order !== 'balanced' || n < 2) return '';
  const rows = williamsRowCount(n);
  if (plan.reps % rows === 0)
    return ` (position and carry-over balanced within each block: reps is a multiple of ${rows})`;
  if ((plan.reps * plan.blocks.length) % rows === 0)
    return ` (position and carry-over balanced over all blocks together; within a block only when reps is a multiple of ${rows})`;
  return ` (approximately balanced: exact balance needs blocks × reps to be a multiple of ${rows})`;
}

/** blocks.reps_per_block (jobs/reps-per-block.ts): how the blocks after the first are sized. */
function repsPerBlockLines(plan: Plan): string[] {
  const perBlock = plan.reps_per_block;
  if (perBlock === undefined) return [];
  const later = plan.reps * (plan.blocks.length - 1);
  if (plan.sized !== undefined)
    return [`reps per block: auto, sized from block 0: ${describeSizing(plan.arms.length, plan.sized)}`];
  if (perBlock === 'auto')
    return [
      `reps per block: auto: block 0 runs ${plan.reps} reps per arm; once it has measured its start-up and rep time, the ${plan.blocks.length - 1} block(s) after it (${later} reps per arm) are regrouped into fewer, larger blocks so that start-up is at most ${START_UP_SHARE * 100} % of a block's lease (every arm the same reps per block; the reps in all unchanged)`,
    ];
  return [
    `reps per block: at most ${perBlock} per arm after block 0 (${later} reps per arm in ${plan.blocks.length - 1} block(s))`,
  ];
}

/** The plan as a table: one line per arm (its toggles), one line per block (rounds split by |). */
/** `sequential`: the lines a sequential plan adds (orchestrator/report/sequential-plan.ts). */
export function formatPlan(plan: Plan, sequential: readonly string[] = []): string {
  const width = Math.max(...plan.arms.map((a) => a.name.length));
  const lines = [
    `experiment ${plan.name}  design ${plan.design}  hash ${plan.hash}`,
    `${plan.blocks.length} block(s) × ${plan.ranks} rank(s), placement ${plan.placement}, ${plan.reps} reps per arm, order ${plan.order}${plan.seed === undefined ? '' : ` (seed ${plan.seed})`}`,
    ...repsPerBlockLines(plan),
    ...sequential,
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
      const rounds = Array.from({ length: b.sequence.length / n }, (_, r) =>
        b.sequence.slice(r * n, (r + 1) * n).join(' '),
      );
      return `  block ${b.index}: ${rounds.join(' | ')}`;
    }),
  ];
  return `${lines.join('\n')}\n`;
}
