/**
 * Helpers of the build tests: a git checkout of a fixture in a temporary directory, build
 * requests in their own processes (build-client.ts), and the trace the slow-build fixture writes.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BuildRequest, EnsuredBuild } from '../../worker/builds/build-cache.ts';

export const FIXTURES = fileURLToPath(new URL('../fixtures/', import.meta.url));
const CLIENT = fileURLToPath(new URL('./build-client.ts', import.meta.url));

/** A fixture copied into a fresh directory and committed, so the build key has a commit. */
export function gitCheckout(fixture: string): string {
  const dir = join(mkdtempSync(join(tmpdir(), `orch-${fixture}-`)), 'src');
  cpSync(join(FIXTURES, fixture), dir, { recursive: true });
  const git = (...args: string[]) => {
    const r = spawnSync('git', ['-c', 'user.email=t@orch', '-c', 'user.name=orch-test', ...args], {
      cwd: dir,
      encoding: 'utf8',
    });
    if (r.status !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr}`);
  };
  git('init', '-q');
  git('add', '-A');
  git('commit', '-qm', 'fixture');
  return dir;
}

export type ClientResult = (EnsuredBuild & { pid: number }) | { pid: number; error: { code: string; message: string } };

export interface BuildClient {
  child: ChildProcess;
  result: Promise<ClientResult>;
}

export function startBuildClient(
  cfg: { root: string; host: string; redisUrl?: string; prefix?: string; request: BuildRequest },
  env: Record<string, string> = {},
): BuildClient {
  const child = spawn(process.execPath, ['--import', 'tsx', CLIENT], {
    // the fixture build reads BUILD_TRACE and BUILD_SLEEP: a build gets only the variables the operator names (program-env.ts)
    env: { ...process.env, ORCH_RANK_ENV: 'BUILD_*', ...env, ORCH_TEST_BUILD: JSON.stringify(cfg) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  const result = new Promise<ClientResult>((resolve, reject) => {
    child.once('close', (code, signal) => {
      const line = out.trim().split('\n').pop();
      if (!line) reject(new Error(`build client ${child.pid} printed nothing (exit ${code}, signal ${signal})`));
      else resolve(JSON.parse(line) as ClientResult);
    });
  });
  return { child, result };
}

export interface TracedBuild {
  key: string;
  pid: number;
  start: number;
  end: number | null;
}

/** The builds the slow-build fixture recorded in its trace file (times in ms). */
export function readTrace(file: string): TracedBuild[] {
  if (!existsSync(file)) return [];
  const builds: TracedBuild[] = [];
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const [ev, key, ns, pid] = line.split(' ');
    if (ev === 'start')
      builds.push({ key: key!, pid: Number(pid), start: Number(BigInt(ns!) / 1_000_000n), end: null });
    if (ev === 'end') {
      const b = builds.find((x) => x.pid === Number(pid));
      if (b) b.end = Number(BigInt(ns!) / 1_000_000n);
    }
  }
  return builds;
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
