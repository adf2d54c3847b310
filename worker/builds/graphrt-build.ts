/**
 * graphrt of one commit of this repository (native builds as arms, jobs/compile-builds.ts): the
 * implicit recipe of a native spec's `builds:` is graphrt's own CMake build, the `graphrt` target
 * alone, in a detached worktree of the commit (commit-build.ts: never the user's checkout, once
 * per host and key, under the host build lock).
 *
 * The CUDA choice is the worker's own graphrt's: GRAPHRT_CUDA (ON, OFF, AUTO: CUDA where nvcc is
 * found, scripts/build-native.mjs). It is part of the recipe, and nvcc's version part of the key
 * where CUDA may be built, so a CPU-only and a CUDA build of one commit never share a cache entry.
 * The recipe holds nothing of the host (no core count), so one commit has one key on every host
 * with the same toolchain.
 *
 * A build is refused before any card time when its graphrt speaks a line protocol this worker
 * cannot read: `graphrt hello --backend cpu` once after the build, its line through the
 * protocol's schema (jobs/graphrt-protocol.ts).
 */
import { join } from 'node:path';
import { UserInputError } from '../../jobs/errors.ts';
import { type Hello, HelloSchema, parseGraphrtLine } from '../../jobs/graphrt-protocol.ts';
import { messageOf } from '../../jobs/message-of.ts';
import { toNativeHello } from '../../jobs/native-args.ts';
import { programEnv } from '../command/program-env.ts';
import { runHello } from '../graphrt-hello.ts';
import type { RunAs } from '../run-as.ts';
import type { BuildCache, BuildRequest, BuildSpecInput } from './build-cache.ts';
import { type CommitBuild, ensureCommitBuild } from './commit-build.ts';

/** the command line named in a refusal */
const HELLO_CPU = toNativeHello('cpu').args.join(' ');

export type GraphrtCuda = 'ON' | 'OFF' | 'AUTO';

export interface GraphrtBuildRequest {
  /** The build's name in the spec (`builds.<name>`), for messages. */
  name: string;
  ref: string;
  commit: string;
  /** The repository the commit is in (absolute, on this host): a clone of orch. */
  repo: string;
  experiment?: string;
  onEvent?: BuildRequest['onEvent'];
}

/** GRAPHRT_CUDA of this process, as scripts/build-native.mjs reads it (default AUTO). */
export function graphrtCudaChoice(env: NodeJS.ProcessEnv = process.env): GraphrtCuda {
  const v = (env.GRAPHRT_CUDA ?? 'AUTO').toUpperCase();
  if (v === 'ON' || v === 'OFF' || v === 'AUTO') return v;
  throw new UserInputError(
    'GRAPHRT_CUDA_CHOICE',
    `GRAPHRT_CUDA="${env.GRAPHRT_CUDA}" in the worker's environment: graphrt builds of a commit take ON, OFF or AUTO`,
    {
      hint: 'unset it (AUTO: CUDA where nvcc is found) or set ON or OFF, as for npm run build',
    },
  );
}

/** The build directory inside the worktree: one per CUDA choice, so two choices never share a CMake cache. */
const buildDirOf = (cuda: GraphrtCuda) => `native/build-orch-${cuda.toLowerCase()}`;

/** The recipe: configure and build only the `graphrt` target; the binary is the one artifact. */
export function graphrtRecipe(cuda: GraphrtCuda = graphrtCudaChoice()): BuildSpecInput {
  const dir = buildDirOf(cuda);
  const toolchain = ['cmake --version', 'c++ --version'];
  // nvcc decides what AUTO builds and what ON compiles; absent, AUTO builds the CPU backend alone.
  if (cuda !== 'OFF') toolchain.push('if command -v nvcc >/dev/null 2>&1; then nvcc --version; else echo no nvcc; fi');
  return {
    cmd:
      `cmake -S native -B ${dir} -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_CUDA=${cuda} && ` +
      `cmake --build ${dir} --target graphrt -j "$(nproc 2>/dev/null || echo 2)"`,
    artifacts: [`${dir}/graphrt`],
    key: { git: true, dirty_diff: false, flags: [`GRAPHRT_CUDA=${cuda}`], toolchain },
  };
}

/** Binaries whose hello this process already read: the check runs once per binary, not per block. */
const checkedHellos = new Map<string, Promise<Hello>>();

export async function ensureGraphrtBuild(
  cache: BuildCache,
  req: {
    name: string;
    ref: string;
    commit: string;
    repo: string;
    experiment?: string;
    onEvent?: BuildRequest['onEvent'];
  },
): Promise<CommitBuild & { binary: string }> {
  const build = graphrtRecipe();
  const b = await ensureCommitBuild(cache, {
    name: req.name,
    ref: req.ref,
    commit: req.commit,
    repo: req.repo,
    build,
    path: 'graphrt',
    ...(req.experiment ? { experiment: req.experiment } : {}),
    ...(req.onEvent ? { onEvent: req.onEvent } : {}),
  });
  const binary = join(b.dir, build.artifacts[0] as string);
  let hello = checkedHellos.get(binary);
  if (!hello) {
    hello = checkGraphrtBuildProtocol(binary, req, cache.runAs);
    checkedHellos.set(binary, hello);
    hello.catch(() => checkedHellos.delete(binary));
  }
  await hello;
  return { ...b, binary };
}

/**
 * The build's hello through this worker's protocol schema. What differs is named: the protocol
 * version `v`, a field this worker does not know or misses, a feature it lacks.
 */
export async function checkGraphrtBuildProtocol(
  binary: string,
  req: { name: string; ref: string; commit: string },
  runAs: RunAs | null = null,
): Promise<Hello> {
  const who = `build "${req.name}" (ref ${req.ref}, commit ${req.commit})`;
  const refuse = (what: string): never => {
    throw new UserInputError(
      'GRAPHRT_BUILD_PROTOCOL',
      `${who}: its graphrt (${binary}) speaks a line protocol this worker cannot read: ${what}`,
      {
        hint: "measure commits whose native/PROTOCOL.md matches this checkout's (version 1, the same hello fields and features), or run the worker from a checkout of that protocol",
      },
    );
  };
  // the program environment a rank of this build gets (worker/command/program-env.ts), on the cpu
  // backend, as the user its ranks run as
  const r = await runHello(binary, 'cpu', programEnv({}), runAs);
  const first = r.stdout.split('\n').find((l) => l.trim() !== '');
  if (first === undefined)
    return refuse(
      `\`graphrt ${HELLO_CPU}\` exited ${r.code} and printed no line (stderr: ${r.stderr.trim().split('\n').slice(-3).join(' | ') || 'empty'})`,
    );
  let json: unknown;
  try {
    json = JSON.parse(first);
  } catch {
    return refuse(`its hello is not JSON: ${first.slice(0, 300)}`);
  }
  const v = (json as { v?: unknown }).v;
  if (v !== 1) return refuse(`its hello says protocol version v=${JSON.stringify(v)}, this worker reads v=1`);
  const shape = HelloSchema.safeParse(json);
  if (!shape.success) {
    const got = json as Record<string, unknown>;
    const differs = shape.error.issues.map((i) => {
      const path = i.path.join('.');
      if (i.code === 'unrecognized_keys')
        return `${path ? `${path}: ` : ''}fields this worker does not know: ${i.keys.join(', ')}`;
      if (i.path.length > 0 && getPath(got, i.path) === undefined) return `field ${path} missing`;
      return `${path}: ${i.message}`;
    });
    return refuse(`its hello differs from this worker's: ${differs.join('; ')}`);
  }
  try {
    const line = parseGraphrtLine(first);
    if (line.type !== 'hello') return refuse(`its first line is a "${line.type}" line, not hello`);
  } catch (err) {
    return refuse(messageOf(err));
  }
  if (r.code !== 0) return refuse(`\`graphrt ${HELLO_CPU}\` exited ${r.code} after its hello`);
  return shape.data;
}

function getPath(o: unknown, path: PropertyKey[]): unknown {
  let cur: unknown = o;
  for (const k of path) {
    if (typeof cur !== 'object' || cur === null) return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[k];
  }
  return cur;
}
