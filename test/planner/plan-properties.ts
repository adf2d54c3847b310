/**
 * The planner's guarantees as checks that return their violations (empty = holds), so the
 * tests can run them on real plans and on plans with a planted bug alike.
 */
import type { Plan } from '../../jobs/plan.ts';

/** Every block runs every arm exactly `reps` times and nothing else. */
export function repsViolations(plan: Plan): string[] {
  const out: string[] = [];
  plan.blocks.forEach((block, b) => {
    if (block.index !== b) out.push(`block ${b} has index ${block.index}`);
    const counts = new Map<string, number>();
    for (const name of block.sequence) counts.set(name, (counts.get(name) ?? 0) + 1);
    for (const arm of plan.arms) {
      const n = counts.get(arm.name) ?? 0;
      if (n !== plan.reps) out.push(`block ${b}: arm ${arm.name} appears ${n} times, not ${plan.reps}`);
      counts.delete(arm.name);
    }
    for (const name of counts.keys()) out.push(`block ${b}: "${name}" is not an arm`);
  });
  return out;
}

/** The rounds of a block: consecutive chunks of one run of every arm. */
export function rounds(plan: Plan, sequence: string[]): string[][] {
  const n = plan.arms.length;
  return Array.from({ length: Math.ceil(sequence.length / n) }, (_, r) => sequence.slice(r * n, (r + 1) * n));
}

/** Rows of the Williams design for n arms: n for even n, 2n for odd n. */
export const designRows = (n: number): number => (n % 2 === 0 ? n : 2 * n);

/**
 * The balance plan.ts states, counted inside rounds: in a block whose reps is a multiple of
 * R, each ordered pair of distinct arms is adjacent reps/n times and each arm sits reps/n
 * times at each position; over all blocks likewise when blocks·reps is a multiple of R.
 * Returns the violations and how many balance claims were checked.
 */
export function balanceViolations(plan: Plan): { violations: string[]; checked: number } {
  const names = plan.arms.map((a) => a.name);
  const n = names.length;
  const R = designRows(n);
  const violations: string[] = [];
  let checked = 0;
  const check = (label: string, roundsOf: string[][]): void => {
    const expected = roundsOf.length / n;
    const pairs = new Map<string, number>();
    const positions = new Map<string, number>();
    for (const round of roundsOf) {
      if ([...round].sort().join() !== [...names].sort().join())
        violations.push(`${label}: round [${round}] is not one run of every arm`);
      for (const [p, arm] of round.entries()) positions.set(`${arm}@${p}`, (positions.get(`${arm}@${p}`) ?? 0) + 1);
      for (let i = 1; i < round.length; i++)
        pairs.set(`${round[i - 1]}>${round[i]}`, (pairs.get(`${round[i - 1]}>${round[i]}`) ?? 0) + 1);
    }
    for (const a of names) {
      for (let p = 0; p < n; p++) {
        const c = positions.get(`${a}@${p}`) ?? 0;
        if (c !== expected) violations.push(`${label}: ${a} at position ${p} ${c} times, expected ${expected}`);
      }
      for (const b of names) {
        if (a === b) continue;
        const c = pairs.get(`${a}>${b}`) ?? 0;
        if (c !== expected) violations.push(`${label}: ${a} before ${b} ${c} times, expected ${expected}`);
      }
    }
    checked++;
  };
  if (n < 2) return { violations, checked };
  for (const block of plan.blocks) {
    if (plan.reps % R === 0) check(`block ${block.index}`, rounds(plan, block.sequence));
  }
  if ((plan.blocks.length * plan.reps) % R === 0) {
    check(
      'all blocks',
      plan.blocks.flatMap((b) => rounds(plan, b.sequence)),
    );
  }
  return { violations, checked };
}
