/**
 * How long `orch` takes to start: the median of 10 runs each of `orch --help`, `orch validate
 * configs/leave-one-out.yaml` and `node -e 0` (the floor every node process pays), with each
 * median's ratio to that floor, in wall time and in CPU time. It runs bin/orch.mjs as a user does: the compiled dist/ when it
 * is fresh, the TypeScript sources through tsx otherwise (the table says which).
 * Run: npm run bench -- cli-start
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { distState } from '../bin/dist-state.mjs';

const RUNS = 10;
const cases: [string, string[]][] = [
  ['node -e 0', ['-e', '0']],
  ['orch --help', ['bin/orch.mjs', '--help']],
  ['orch validate configs/leave-one-out.yaml', ['bin/orch.mjs', 'validate', 'configs/leave-one-out.yaml']],
];

/**
 * The CPU time (user + system) of this process's waited-for children so far, from /proc/self/stat
 * (cutime, cstime; clock ticks of 10 ms): on a machine shared with other work a start's wall time
 * grows with the load, its CPU time much less.
 */
function childrenCpuMs(): number | null {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[13]) + Number(fields[14])) * 10;
  } catch {
    return null;
  }
}

function once(args: string[]): { ms: number; cpuMs: number | null } {
  const t0 = performance.now();
  const c0 = childrenCpuMs();
  const r = spawnSync(process.execPath, args, { encoding: 'utf8', env: { ...process.env, ORCH_FROM_SOURCE: '' } });
  const ms = performance.now() - t0;
  const c1 = childrenCpuMs();
  if (r.status !== 0) throw new Error(`node ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  return { ms, cpuMs: c0 === null || c1 === null ? null : c1 - c0 };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

for (const [, args] of cases) once(args); // warm the file cache: the first run reads every file from disk
// Interleaved, round by round: a change in the machine's load hits every case alike.
const runs = cases.map(() => [] as { ms: number; cpuMs: number | null }[]);
for (let i = 0; i < RUNS; i++) {
  for (const [k, [, args]] of cases.entries()) runs[k]!.push(once(args));
}
const medians = cases.map(([name], k) => {
  const cpu = runs[k]!.map((r) => r.cpuMs);
  return [
    name,
    median(runs[k]!.map((r) => r.ms)),
    cpu.every((c) => c !== null) ? median(cpu as number[]) : null,
  ] as const;
});
const floor = medians[0]![1];
const cpuFloor = medians[0]![2];
const state = distState();
console.log(
  `orch runs: ${state.fresh ? 'dist/ (compiled)' : `the TypeScript sources through tsx (${state.reason})`}; median of ${RUNS}, interleaved; CPU: user + system, 10 ms ticks`,
);
const width = Math.max(...medians.map(([n]) => n.length));
console.log(
  `${'command'.padEnd(width)}  ${'median ms'.padStart(9)}  ${'× node -e 0'.padStart(11)}  ${'CPU ms'.padStart(6)}  ${'CPU × node'.padStart(10)}`,
);
for (const [name, ms, cpu] of medians) {
  const cpuCols =
    cpu === null || cpuFloor === null || cpuFloor === 0 ? ['—', '—'] : [cpu.toFixed(0), (cpu / cpuFloor).toFixed(2)];
  console.log(
    `${name.padEnd(width)}  ${ms.toFixed(1).padStart(9)}  ${(ms / floor).toFixed(2).padStart(11)}  ${cpuCols[0]!.padStart(6)}  ${cpuCols[1]!.padStart(10)}`,
  );
}
