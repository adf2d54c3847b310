/**
 * The compile stage: cross-field checks zod cannot express field by field (a toggle must exist
 * for the workload's runtime, leave-one-out needs two toggles, an A/B needs two distinct arms,
 * a regex must have the group it reads…), and completing A/B arms (unnamed toggles are off)
 * so that spelling an off toggle out does not change the hash.
 */
import { type Stats, statSync } from 'node:fs';
import { isAbsolute, normalize } from 'node:path';
import { checkNativeBounds, checkPlanSize } from './compile-bounds.ts';
import { armBuild, checkBuilds } from './compile-builds.ts';
import type { CompileProblem } from './compile-problem.ts';
import { suggestion } from './did-you-mean.ts';
import { GRAPHRT_TOGGLES } from './graphrt-toggles.ts';
import { checkMetricSource, type MetricSourceInput } from './metric-source.ts';
import { NAME_PATTERN } from './name-patterns.ts';
import { checkRepsPerBlock } from './reps-per-block.ts';
import type { Spec } from './spec.ts';
import { INJECTION_VARIABLE } from './spec-schema/command-workload.ts';
import { toggleWordProblem } from './toggle-word.ts';
import type { PathSegment } from './yaml-source.ts';

export interface CompiledSpec {
  spec: Spec;
  problems: CompileProblem[];
}

/** The toggle names a workload accepts: graphrt's for native, the toggle map's for command. */
export function availableToggles(spec: Spec): string[] {
  return spec.workload.runtime === 'native' ? [...GRAPHRT_TOGGLES] : Object.keys(spec.workload.toggles);
}

export function compileSpec(parsed: Spec): CompiledSpec {
  const problems: CompileProblem[] = [];
  const problem = (path: PathSegment[], message: string, fix?: string): void => {
    problems.push({ path, message, ...(fix ? { fix } : {}) });
  };
  const spec = structuredClone(parsed);
  const available = availableToggles(spec);

  checkToggles(spec, available, problem);
  if (spec.design === 'leave-one-out' && spec.toggles.length < 2) {
    problem(
      ['toggles'],
      `leave-one-out needs at least two toggles (got ${spec.toggles.length})`,
      'list two or more toggles, or use design: ab',
    );
  }
  if (spec.design === 'ab') checkAbArms(spec, problem);
  else if (isTraceProbe(spec)) checkTraceProbeArms(spec, problem);
  else if (spec.arms !== undefined)
    problem(
      ['arms'],
      `"arms" is only used by design: ab and the trace probe of a resident rank (this is ${spec.design})`,
      'remove it',
    );
  if (spec.design === 'sweep') checkSweep(spec, problem);
  else if (spec.sweep !== undefined)
    problem(['sweep'], `"sweep" is only used by design: sweep (this is ${spec.design})`, 'remove it');
  checkProbe(spec, problem);
  checkBuilds(spec, problem);
  if (spec.order === 'random' && spec.seed === undefined) {
    problem(
      ['order'],
      'random order needs a seed, so the same spec always gives the same plan',
      'add seed: <integer>, or use order: balanced',
    );
  }
  checkIdentity(spec, problem);
  checkStopping(spec, problem);
  for (const p of checkRepsPerBlock(spec)) problem(p.path, p.message, p.fix);
  if (spec.hygiene_reruns !== undefined && spec.hygiene !== 'discard') {
    problem(
      ['hygiene_reruns'],
      `hygiene_reruns budgets the re-runs of discarded pairs; hygiene is ${spec.hygiene ?? 'flag (the default)'}, which discards none`,
      'remove it, or set hygiene: discard',
    );
  }
  if (spec.hygiene === 'discard' && spec.workload.runtime === 'native' && spec.workload.backend === 'cpu') {
    problem(
      ['hygiene'],
      "hygiene: discard drops reps whose card throttled; graphrt's CPU backend reads no clocks, so no rep is ever flagged and nothing would be discarded",
      'remove hygiene (or use backend: auto or cuda on a GPU)',
    );
  }
  if (spec.workload.runtime === 'command') {
    checkRunMode(spec.workload, spec.design, spec.builds !== undefined, problem);
    if (spec.workload.metric_source?.format === 'regex') checkRegex(spec.workload.metric_source, problem);
    checkCwd(spec.workload.run.cwd, problem);
    if (spec.workload.build?.dir !== undefined) checkBuildDir(spec.workload.build.dir, problem);
  }
  checkNativeBounds(spec, problem);
  // The arms are only well defined once everything else holds (a sweep needs its section).
  if (problems.length === 0) checkPlanSize(spec, problem);
  return { spec, problems };
}

type Report = (path: PathSegment[], message: string, fix?: string) => void;

/**
 * The identity gate: graphrt's is keyed by its own `graph` toggle; a command workload's needs a
 * resident rank (the gate is a request) and names the toggle that turns its capture on.
 */
function checkIdentity(spec: Spec, problem: Report): void {
  const gate = spec.gates.identity;
  if (gate === false) return;
  const w = spec.workload;
  if (w.runtime === 'native') {
    if (gate.toggle !== undefined)
      problem(
        ['gates', 'identity', 'toggle'],
        `a native workload's identity gate follows graphrt's graph toggle; "${gate.toggle}" is not needed`,
        'remove gates.identity.toggle',
      );
    return;
  }
  // The default is on (it guards every native spec): a command workload must ask for it.
  if (w.run.mode !== 'resident') {
    problem(
      ['gates', 'identity'],
      'a per_rep command workload has no identity gate: the gate is a request to a resident rank (ranklib/PROTOCOL.md)',
      'set workload.run.mode: resident with a rank library, or gates: { identity: false }',
    );
  } else if (gate.toggle === undefined) {
    problem(
      ['gates', 'identity'],
      'the identity gate of a command workload needs the toggle that turns capture on',
      `set gates.identity: { toggle: <one of ${Object.keys(w.toggles).join(', ') || 'workload.toggles'}>, replays: ${gate.replays} }, or gates: { identity: false }`,
    );
  } else if (!spec.toggles.includes(gate.toggle)) {
    problem(
      ['gates', 'identity', 'toggle'],
      `toggle "${gate.toggle}" is not in the spec's toggles`,
      spec.toggles.length > 0 ? suggestion(gate.toggle, spec.toggles) : 'list it under toggles',
    );
  }
}

/** stopping: sequential needs one primary comparison, a budget of blocks, and looks that fit in it. */
function checkStopping(spec: Spec, problem: Report): void {
  const st = spec.stopping;
  if (st === undefined) return;
  if (st.rule === 'fixed') {
    if (st.max_blocks !== undefined)
      problem(
        ['stopping', 'max_blocks'],
        'a fixed experiment runs blocks.count blocks',
        'remove stopping.max_blocks, or set stopping.rule: sequential',
      );
    return;
  }
  // A leave-one-out has one comparison per toggle; a look at all_on vs base alone would stop
  // the others untested and report them as if their reps had been planned to end there.
  if (spec.design === 'leave-one-out')
    problem(
      ['stopping', 'rule'],
      `sequential stopping decides one comparison; a leave-one-out makes ${spec.toggles.length + 1} (all_on vs base and one per toggle), and stopping on one would leave the others short of their reps`,
      'use stopping.rule: fixed (blocks.count) for the leave-one-out, or an ab of the two arms you want decided sequentially',
    );
  else if (spec.design !== 'ab')
    problem(
      ['stopping', 'rule'],
      `sequential stopping looks at one primary comparison; design ${spec.design} has none`,
      'use design ab, or stopping.rule: fixed',
    );
  if (st.max_blocks === undefined)
    problem(
      ['stopping'],
      'a sequential experiment needs its budget of blocks',
      'add stopping.max_blocks: <the most blocks it may run, at least 2>',
    );
  else if (st.looks > st.max_blocks)
    problem(
      ['stopping', 'looks'],
      `${st.looks} looks at ${st.max_blocks} blocks: looks happen at block boundaries`,
      `lower stopping.looks to ${st.max_blocks} or fewer`,
    );
  if (spec.blocks.count !== 1)
    problem(
      ['blocks', 'count'],
      'a sequential experiment plans stopping.max_blocks blocks and stops when a look decides',
      'remove blocks.count (max_blocks is the budget)',
    );
}

type CommandWorkload = Extract<Spec['workload'], { runtime: 'command' }>;

/**
 * What a run mode needs: per_rep reads a metric and maps toggles to the command's env or
 * arguments; resident gets toggles in each request (`request`) and reports its own step times.
 */
function checkRunMode(w: CommandWorkload, design: Spec['design'], buildsAsArms: boolean, problem: Report): void {
  const resident = w.run.mode === 'resident';
  for (const [name, mapping] of Object.entries(w.toggles)) {
    if (resident && mapping !== 'request') {
      problem(
        ['workload', 'toggles', name],
        `a resident rank is started once for the block: toggle "${name}" cannot change its ${typeof mapping === 'object' && 'env' in mapping ? 'environment' : 'arguments'} per arm`,
        `set workload.toggles.${name}: request (the rank library passes it to step(toggles))`,
      );
    } else if (!resident && mapping === 'request') {
      problem(
        ['workload', 'toggles', name],
        `toggle "${name}" travels in a request, which only a resident rank gets`,
        `set workload.run.mode: resident, or map it: { env: SOME_VAR, on: "1", off: "0" }`,
      );
    }
  }
  if (w.run.env?.[INJECTION_VARIABLE] !== undefined && w.run.launch_counts === true) {
    problem(
      ['workload', 'run', 'env', INJECTION_VARIABLE],
      `${INJECTION_VARIABLE} names another profiler's injection library; orch's launch counts need it and never replace it`,
      "remove it, or remove workload.run.launch_counts to run the program under your profiler without orch's counts",
    );
  }
  if (resident) {
    if (w.run.env?.[INJECTION_VARIABLE] !== undefined && w.run.launch_counts !== true && design === 'probe') {
      problem(
        ['workload', 'run', 'env', INJECTION_VARIABLE],
        `${INJECTION_VARIABLE} names another profiler's injection library; the trace probe traces through orch's and never replaces it`,
        'remove it from workload.run.env for the probe',
      );
    }
    if (w.metric_source !== undefined)
      problem(
        ['workload', 'metric_source'],
        'a resident rank reports its step times through the rank protocol; no metric is read from its output',
        'remove workload.metric_source',
      );
    if (w.probe !== undefined)
      problem(
        ['workload', 'probe'],
        "a resident rank's probe is the trace probe: each arm's steps traced through the rank library's trace request; workload.probe.cmd is a per_rep program's",
        'remove workload.probe (design: probe traces the program run.cmd starts)',
      );
    if (buildsAsArms)
      problem(
        ['builds'],
        'builds as arms run one process per build; a resident command rank runs one program per rank for now',
        'measure one build per experiment, or use run.mode: per_rep',
      );
  } else {
    if (w.metric_source === undefined)
      problem(
        ['workload', 'metric_source'],
        'a per_rep command workload reads one value per step from its output',
        'add metric_source: { format: jsonl, field: ms }, or set run.mode: resident with a rank library',
      );
    if (w.params !== undefined)
      problem(
        ['workload', 'params'],
        "params reach a resident rank's setup(params); a per_rep command gets its settings from run.env or its arguments",
        'move them into run.env, or set run.mode: resident',
      );
    if (w.run.hello_timeout_s !== undefined)
      problem(['workload', 'run', 'hello_timeout_s'], 'only a resident rank says hello', 'remove it');
  }
}

function checkToggles(spec: Spec, available: string[], problem: Report): void {
  const seen = new Map<string, number>();
  spec.toggles.forEach((t, i) => {
    const first = seen.get(t);
    if (first !== undefined)
      problem(['toggles', i], `duplicate toggle "${t}" (also toggles[${first}])`, 'list each toggle once');
    else seen.set(t, i);
    if (!available.includes(t)) {
      const fix =
        available.length > 0
          ? suggestion(t, available)
          : `define it in workload.toggles as { env, on, off } or { arg_on, arg_off }`;
      problem(['toggles', i], `unknown toggle "${t}"`, fix);
    }
  });
}

function checkAbArms(spec: Spec, problem: Report): void {
  const problems: PathSegment[][] = [];
  const report: Report = (path, message, fix) => {
    problems.push(path);
    problem(path, message, fix);
  };
  const arms = spec.arms;
  if (arms === undefined || arms.length !== 2) {
    report(
      ['arms'],
      `design ab needs exactly two arms (got ${arms?.length ?? 0})`,
      'add arms: [{ name: A, toggles: {...} }, { name: B, toggles: {...} }]',
    );
    if (arms === undefined) return;
  }
  const names = completeArms(spec, arms, report);
  const [a, b] = arms;
  if (
    a &&
    b &&
    problems.length === 0 &&
    JSON.stringify(a.toggles) === JSON.stringify(b.toggles) &&
    armBuild(spec, a) === armBuild(spec, b)
  ) {
    const build = armBuild(spec, a);
    report(
      ['arms'],
      `arms "${a.name}" and "${b.name}" ${build === undefined ? '' : `run the same build "${build}" and `}set the same toggles${build === undefined ? '' : ' (a duplicate arm)'}`,
      'make them differ, or use gates.aa for an A/A control',
    );
  }
  if (spec.gates.aa && a && names.has(`${a.name}_aa`)) {
    report(['arms'], `arm name "${a.name}_aa" is taken by the A/A control of "${a.name}"`, 'rename the arm');
  }
}

/** Each arm's name once and its toggles the spec's, completed (a toggle it does not name is off); the names. */
function completeArms(spec: Spec, arms: NonNullable<Spec['arms']>, report: Report): Set<string> {
  const names = new Set<string>();
  arms.forEach((arm, i) => {
    if (names.has(arm.name))
      report(['arms', i, 'name'], `duplicate arm name "${arm.name}"`, 'give each arm its own name');
    names.add(arm.name);
    for (const [t, v] of Object.entries(arm.toggles)) {
      const path: PathSegment[] = ['arms', i, 'toggles', t];
      if (!spec.toggles.includes(t)) {
        report(
          path,
          `toggle "${t}" is not in the spec's toggles`,
          spec.toggles.length > 0 ? suggestion(t, spec.toggles) : 'list it under toggles',
        );
      } else if (typeof v === 'string' && !acceptsStringValue(spec, t)) {
        report(path, `toggle "${t}" is on/off; got the string ${JSON.stringify(v)}`, 'use true or false');
      } else if (typeof v === 'string' && isRequestToggle(spec, t)) {
        const problem = toggleWordProblem(t, v, identityToggle(spec) === t);
        if (problem !== undefined) report(path, problem.message, problem.fix);
      }
    }
    arm.toggles = Object.fromEntries(spec.toggles.map((t) => [t, arm.toggles[t] ?? false]));
  });
  return names;
}

/**
 * The trace probe of a resident rank traces each arm it names (eager and graph, say), or without
 * `arms` one arm with every toggle on; builds as arms are refused with every resident rank.
 */
function checkTraceProbeArms(spec: Spec, problem: Report): void {
  const arms = spec.arms;
  if (arms === undefined) return;
  if (arms.length === 0)
    problem(
      ['arms'],
      'the trace probe traces each arm listed; the list is empty',
      'list the arms to trace, or remove arms (one arm, every toggle on)',
    );
  completeArms(spec, arms, problem);
  if (spec.gates.aa && arms[0] !== undefined && arms.some((a) => a.name === `${arms[0]!.name}_aa`)) {
    problem(['arms'], `arm name "${arms[0].name}_aa" is taken by the A/A copy of "${arms[0].name}"`, 'rename the arm');
  }
}

/** design probe of a resident command rank: the trace probe (each planned rep a `trace` request). */
export function isTraceProbe(spec: Pick<Spec, 'design' | 'workload'>): boolean {
  return spec.design === 'probe' && spec.workload.runtime === 'command' && spec.workload.run.mode === 'resident';
}

/** A command toggle mapped to an env var, or passed in each request, can carry any string. */
function acceptsStringValue(spec: Spec, toggle: string): boolean {
  return spec.workload.runtime === 'command' && carriesStrings(spec.workload.toggles[toggle]);
}

/** A toggle passed in each request: the rank library reads its value (jobs/toggle-word.ts). */
function isRequestToggle(spec: Spec, toggle: string): boolean {
  return spec.workload.runtime === 'command' && spec.workload.toggles[toggle] === 'request';
}

/** The toggle a command workload's identity gate captures with, if it names one. */
function identityToggle(spec: Spec): string | undefined {
  return spec.gates.identity === false ? undefined : spec.gates.identity.toggle;
}

function carriesStrings(mapping: CommandWorkload['toggles'][string] | undefined): boolean {
  return mapping === 'request' || (typeof mapping === 'object' && 'env' in mapping);
}

function checkSweep(spec: Spec, problem: Report): void {
  const sweep = spec.sweep;
  if (sweep === undefined) {
    problem(['sweep'], 'design sweep needs a "sweep" section', 'add sweep: { param: hidden, values: [256, 512] }');
    return;
  }
  if ((sweep.param === undefined) === (sweep.toggle === undefined)) {
    problem(['sweep'], 'sweep needs exactly one of "param" or "toggle"', 'keep one of them');
    return;
  }
  const seen = new Set<string>();
  sweep.values.forEach((v, i) => {
    if (seen.has(String(v)))
      problem(['sweep', 'values', i], `duplicate value ${JSON.stringify(v)}`, 'list each value once');
    seen.add(String(v));
    if (!NAME_PATTERN.test(String(v))) {
      problem(
        ['sweep', 'values', i],
        `value ${JSON.stringify(v)} cannot be part of an arm name`,
        'use letters, digits, "_", "." and "-"',
      );
    }
  });
  if (sweep.param !== undefined) {
    if (spec.workload.runtime !== 'native') {
      problem(
        ['sweep', 'param'],
        'sweep.param sweeps a native workload param; this workload is a command',
        'use sweep.toggle with an env toggle',
      );
      return;
    }
    const params = Object.keys(spec.workload.params);
    if (!params.includes(sweep.param)) {
      const fix =
        params.length > 0 ? suggestion(sweep.param, params) : `workload kind ${spec.workload.kind} has no params`;
      problem(['sweep', 'param'], `unknown param "${sweep.param}" for workload kind ${spec.workload.kind}`, fix);
    }
    sweep.values.forEach((v, i) => {
      if (typeof v !== 'number')
        problem(['sweep', 'values', i], `param values are positive integers; got ${JSON.stringify(v)}`);
    });
  } else if (sweep.toggle !== undefined) {
    if (spec.workload.runtime !== 'command' || !carriesStrings(spec.workload.toggles[sweep.toggle])) {
      const envToggles = spec.workload.runtime === 'command' ? Object.keys(spec.workload.toggles) : [];
      problem(
        ['sweep', 'toggle'],
        `sweep.toggle must name a command workload toggle mapped to an env var (or passed in requests); "${sweep.toggle}" is not one`,
        envToggles.length > 0 ? suggestion(sweep.toggle, envToggles) : 'native toggles are on/off: use sweep.param',
      );
    } else if (spec.toggles.includes(sweep.toggle)) {
      problem(
        ['sweep', 'toggle'],
        `"${sweep.toggle}" is swept, so it cannot also be in toggles`,
        'remove it from toggles',
      );
    }
  }
}

function checkProbe(spec: Spec, problem: Report): void {
  const w = spec.workload;
  if (spec.design === 'probe') {
    if (w.runtime === 'native' && w.kind !== 'probe')
      problem(['workload', 'kind'], `design probe runs the probe workload; got kind ${w.kind}`, 'use kind: probe');
    if (w.runtime === 'command' && w.run.mode !== 'resident' && w.probe === undefined)
      problem(
        ['workload'],
        'design probe of a per_rep program needs workload.probe',
        'add probe: { cmd: "..." }, or serve the program through a rank library (run.mode: resident) for the trace probe',
      );
  } else if (w.runtime === 'native' && w.kind === 'probe') {
    problem(
      ['workload', 'kind'],
      `kind probe measures nothing; it is only for design: probe (this is ${spec.design})`,
      'use design: probe, or kind chain | decode | train',
    );
  }
}

/**
 * An absolute run.cwd must be a directory here (the workers share the checkout layout); a relative
 * one is resolved on the worker, which names it when it is missing (worker/command/run-command-rep.ts).
 * A relative one that climbs out (`../x`) is refused: resolved against the build's artifact dir, it
 * lands in the build cache beside other builds' artifacts, or anywhere above the worker's
 * directory, a place the spec does not describe and that differs from host to host.
 */
function checkCwd(cwd: string | undefined, problem: Report): void {
  if (cwd === undefined) return;
  if (!isAbsolute(cwd)) {
    const inside = normalize(cwd);
    if (inside === '..' || inside.startsWith('../')) {
      problem(
        ['workload', 'run', 'cwd'],
        `"${cwd}" climbs out of the directory a relative cwd is resolved in (the build's artifact dir on the worker, else the worker's own directory)`,
        `name a directory inside it (build.artifacts lists what the build leaves there), or give an absolute path, which orch validate checks`,
      );
    }
    return;
  }
  let stat: Stats | undefined;
  try {
    stat = statSync(cwd);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? String(err);
    problem(
      ['workload', 'run', 'cwd'],
      `the directory ${cwd} cannot be used (${code})`,
      'create it, or give the path of an existing directory',
    );
    return;
  }
  if (!stat.isDirectory())
    problem(['workload', 'run', 'cwd'], `${cwd} is not a directory`, 'give the path of a directory');
}

/**
 * An absolute build.dir must be a directory here, as an absolute run.cwd (the workers share the
 * checkout layout): a missing one would otherwise fail only on the worker, after the experiment
 * was queued. `~/…` (the worker's home) and a relative dir (the worker's working directory) are
 * resolved on the worker, which names them when missing (worker/builds/build-key.ts).
 */
function checkBuildDir(dir: string, problem: Report): void {
  if (!isAbsolute(dir)) return;
  const path = ['workload', 'build', 'dir'];
  let stat: Stats;
  try {
    stat = statSync(dir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? String(err);
    problem(
      path,
      `the build directory ${dir} cannot be used (${code})`,
      'give the path of the checkout the build runs in (git clone it there first)',
    );
    return;
  }
  if (!stat.isDirectory())
    problem(path, `${dir} is not a directory`, 'give the path of the checkout the build runs in');
}

/** The metric regex compiles and has the groups it reads (jobs/metric-source.ts, shared with the worker). */
function checkRegex(source: MetricSourceInput, problem: Report): void {
  for (const issue of checkMetricSource(source))
    problem(['workload', 'metric_source', issue.field], issue.message, issue.fix);
}
