/**
 * The A/B spec of the fixture program cmd-speedy (test/fixtures/cmd-speedy): arm `fast` sets
 * SPEEDY_FAST=1, which halves every step's work; built by the spec's build unless `build: false`.
 */
export interface SpecOptions {
  dir: string;
  buildCmd?: string;
  artifact?: string;
  runCmd?: string;
  /** workload.run.cwd */
  runCwd?: string;
  pattern?: string;
  reps?: number;
  steps?: number;
  build?: boolean;
  /** extra top-level spec lines */
  extra?: string;
  /** the A/A gate (default on); off where a run checks something other than the verdict */
  aa?: boolean;
}

export function speedySpec(o: SpecOptions): string {
  const build =
    o.build === false
      ? ''
      : `
  build:
    dir: ${o.dir}
    cmd: ${o.buildCmd ?? 'sh build.sh'}
    artifacts: [${o.artifact ?? 'out/speedy'}]
    key: { git: true, dirty_diff: true, flags: [-O2], toolchain: [g++ --version] }`;
  return `name: speedy-fast-env
design: ab
workload:
  runtime: command${build}
  run:
    cmd: ${o.runCmd ?? '$ORCH_ARTIFACTS/out/speedy'}${o.runCwd === undefined ? '' : `\n    cwd: ${o.runCwd}`}
    env: { SPEEDY_ITERS: "6000000" }
    timeout_s: 120
  toggles:
    FAST: { env: SPEEDY_FAST, on: "1", off: "0" }
  metric_source:
    format: regex
    pattern: '${o.pattern ?? 'timer step (?<step>\\d+): total=(?<value>[0-9.]+)ms'}'
    value_group: value
    step_group: step
  warmup: 2
  steps: ${o.steps ?? 8}
toggles: [FAST]
arms:
  - { name: slow, toggles: { FAST: false } }
  - { name: fast, toggles: { FAST: true } }
reps: ${o.reps ?? 4}
gates: { identity: false, aa: ${o.aa ?? true} }
metric: { name: ms, better: lower }
${o.extra ?? ''}`;
}
