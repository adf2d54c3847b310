/**
 * How long `orch` takes to start: the median of 10 runs each of `orch --help`, `orch validate
 * configs/leave-one-out.yaml` and `node -e 0` (the floor every node process pays), with each
 * median's ratio to that floor. It runs bin/orch.mjs as a user does: the compiled dist/ when it
 * is fresh, the TypeScript sources through tsx otherwise (the table says which).
 * Run: npm run bench -- cli-start
 */
import { spawnSync } from 'node:child_process';
import { distState } from '../bin/dist-state.mjs';

const RUNS = 10;
const cases: [string, string[]][] = [
  ['node -e 0', ['-e', '0']],
  ['orch --help', ['bin/orch.mjs', '--help']],
  ['orch validate configs/leave-one-out.yaml', ['bin/orch.mjs', 'validate', 'configs/leave-one-out.yaml']],
];

function once(args: string[]): number {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, args, { encoding: 'utf8', env: { ...process.env, ORCH_FROM_SOURCE: '' } });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`node ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  return ms;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

const medians = cases.map(([name, args]) => {
  once(args); // warm the file cache: the first run reads every file from disk
  // interleaved would be fairer under load, but each case is short; runs are back to back
  return [name, median(Array.from({ length: RUNS }, () => once(args)))] as const;
});
const floor = medians[0]![1];
const state = distState();
console.log(`orch runs: ${state.fresh ? 'dist/ (compiled)' : `the TypeScript sources through tsx (${state.reason})`}; median of ${RUNS}`);
const width = Math.max(...medians.map(([n]) => n.length));
console.log(`${'command'.padEnd(width)}  ${'median ms'.padStart(9)}  ${'× node -e 0'.padStart(11)}`);
for (const [name, ms] of medians) console.log(`${name.padEnd(width)}  ${ms.toFixed(1).padStart(9)}  ${(ms / floor).toFixed(2).padStart(11)}`);
