/**
 * Preflight: the checks a block passes before it takes its cards' time (a failed check costs
 * a message, not a gang's lease).
 *
 * - the artifact exists (a build cache entry that lost a file is refused, not run);
 * - the binary reports its backend and features (`graphrt hello`), and a spec that needs `cuda`
 *   refuses a CPU build, naming the build flag: a CPU build prints launches=0, which is the
 *   honest answer off CUDA and would read as a broken instrument;
 * - free disk on the build dir at or above the spec's floor (min_free_disk_gb);
 * - no foreign process on the card: that check is the worker's (worker/foreign-processes.ts,
 *   run by the block executor before the ranks start and after every rep), not repeated here.
 */
import { existsSync } from 'node:fs';
import { statfs } from 'node:fs/promises';
import { OrchError, UserInputError } from '../../jobs/errors.ts';
import { type ErrorLine, type GraphrtLine, type Hello, parseGraphrtLine } from '../../jobs/graphrt-protocol.ts';
import { messageOf } from '../../jobs/message-of.ts';
import { COMPLETE_MARKER } from '../builds/build-cache.ts';
import { runHello } from '../graphrt-hello.ts';

export interface PreflightBuild {
  dir: string;
  artifacts: string[];
  key: string;
}

/** Free bytes for an unprivileged writer on the filesystem of `path`. */
export async function freeBytes(path: string): Promise<number> {
  const s = await statfs(path);
  return Number(s.bavail) * Number(s.bsize);
}

export async function checkFreeDisk(path: string, minFreeGb: number): Promise<number> {
  const free = await freeBytes(path);
  if (free < minFreeGb * 1e9) {
    throw new UserInputError(
      'PREFLIGHT_DISK',
      `min_free_disk_gb: ${path} has ${(free / 1e9).toFixed(1)} GB free, the spec asks for at least ${minFreeGb} GB`,
      {
        hint: "free space there, point the worker's build dir (ORCH_BUILD_DIR) at a bigger disk, or lower min_free_disk_gb",
      },
    );
  }
  return free;
}

export function checkArtifacts(build: PreflightBuild, path = 'workload.build'): void {
  if (!existsSync(`${build.dir}/${COMPLETE_MARKER}`)) {
    throw new UserInputError(
      'PREFLIGHT_ARTIFACT_MISSING',
      `${path}: the build ${build.key.slice(0, 12)} has no finished artifact dir at ${build.dir}`,
    );
  }
  build.artifacts.forEach((a, i) => {
    if (!existsSync(a)) {
      throw new UserInputError(
        'PREFLIGHT_ARTIFACT_MISSING',
        `${path}.artifacts[${i}]: ${a} is missing from the build cache entry ${build.key.slice(0, 12)}`,
        {
          hint: `remove ${build.dir} so the next run builds it again`,
        },
      );
    }
  });
}

/** Preflight of a command workload before its first rep. */
export async function preflightCommand(opts: {
  build: PreflightBuild | null;
  buildRoot: string;
  minFreeDiskGb: number;
}): Promise<void> {
  if (opts.build) checkArtifacts(opts.build);
  await checkFreeDisk(existsSync(opts.buildRoot) ? opts.buildRoot : '/', opts.minFreeDiskGb);
}

/** What the backend check reads of a hello line (a test may give less than a whole line). */
export type HelloInfo = Pick<Hello, 'backend'> & { features?: Partial<Hello['features']> };

/**
 * The backend check: a spec that needs `cuda` refuses a binary that reports another backend.
 * `detail` is the binary's own reason when it has one (graphrt's BACKEND_UNAVAILABLE message for
 * `--backend cuda`): "not built into this graphrt" is a CPU-only build, anything else (no GPU
 * visible, driver too old) is this host's problem, not the build's. Without a detail the binary
 * is taken for a CPU-only build.
 */
export function checkBackend(hello: HelloInfo, need: 'auto' | 'cuda' | 'cpu', binary: string, detail = ''): void {
  // Every graphrt has the CPU backend (--backend cpu), so only a cuda need can be refused.
  if (need !== 'cuda' || hello.backend === 'cuda') return;
  const features = Object.entries(hello.features ?? {})
    .map(([k, v]) => `${k}=${String(v)}`)
    .join(' ');
  const reported = `reports backend "${hello.backend}"${features ? ` (features: ${features})` : ''}`;
  if (detail === '' || /not built/i.test(detail)) {
    throw new UserInputError(
      'PREFLIGHT_CPU_BUILD',
      `workload.backend: the spec needs cuda, but ${binary} is a CPU-only build (it ${reported}${detail ? `; ${detail}` : ''}): rebuild it with GRAPHRT_CUDA=ON. ` +
        'A CPU build prints launches=0, which would read as a broken instrument, so nothing is measured.',
      { hint: 'GRAPHRT_CUDA=ON npm run build (cmake -DGRAPHRT_CUDA=ON) on a host with nvcc, then submit again' },
    );
  }
  throw new UserInputError(
    'PREFLIGHT_NO_GPU',
    `workload.backend: the spec needs cuda; ${binary} has the CUDA backend but ${reported} on this host: ${detail}`,
    {
      hint: 'run this block on a host whose GPU is visible (nvidia-smi lists it), or use backend: auto',
    },
  );
}

/**
 * The hello or error line of `graphrt hello`, through the protocol's schema: a hello whose fields
 * or features (jobs/graphrt-toggles.ts) differ from this orch's is a version skew, refused here
 * before any card is taken.
 */
function helloOf(binary: string, stdout: string): Hello | ErrorLine | null {
  for (const line of stdout.split('\n')) {
    if (line.trim() === '') continue;
    let parsed: GraphrtLine;
    try {
      parsed = parseGraphrtLine(line);
    } catch (err) {
      throw new OrchError('PREFLIGHT_HELLO', `${binary} hello: ${messageOf(err)}`, {
        cause: err,
        hint: 'rebuild graphrt from this checkout (npm run build)',
      });
    }
    if (parsed.type === 'hello' || parsed.type === 'error') return parsed;
  }
  return null;
}

/** `graphrt hello` and the backend check; returns the hello line. */
export async function preflightGraphrt(binary: string, need: 'auto' | 'cuda' | 'cpu'): Promise<Hello> {
  const r = await runHello(binary, 'auto');
  const hello = helloOf(binary, r.stdout);
  if (hello?.type !== 'hello' || r.code !== 0) {
    throw new OrchError(
      'PREFLIGHT_HELLO',
      `${binary} hello exited ${r.code} without a hello line: ${(r.stderr || r.stdout).trim().split('\n').slice(-3).join(' | ')}`,
    );
  }
  const info = hello;
  if (need === 'cuda' && info.backend !== 'cuda') {
    // The binary's own reason: "not built into this graphrt" or "no visible GPU".
    const forced = helloOf(binary, (await runHello(binary, 'cuda')).stdout);
    const detail = forced && forced.type === 'error' ? forced.message : '';
    checkBackend(info, need, binary, detail);
  }
  checkBackend(info, need, binary);
  return info;
}
