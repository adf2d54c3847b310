/**
 * The host's build cache (a build: docs/ARCHITECTURE.md "Words"). Layout under the build
 * directory (configurable, e.g. a big data disk: ORCH_BUILD_DIR or `root`):
 *
 *   .build.lock              the host build lock (worker/builds/build-lock.ts)
 *   artifacts/<key>/         a finished build: the artifacts at their relative paths + .complete
 *   tmp/<key>.<pid>.<n>/     staging of the build in progress; renamed into artifacts/ when whole
 *   logs/<key>.<ms>.log      the build's stdout+stderr
 *   failed/<key>.json        the last failure of a key: { finished_at, message, tail }
 *
 * ensure(): a finished key is used without the lock. Otherwise the request waits for the host
 * lock (one build at a time per host), then looks again: a build of the same key that finished
 * while it waited is shared; one that failed while it waited fails this request too, with the
 * same log lines; else it builds. The build runs fate-shared (tether.sh), and the staging dir
 * becomes artifacts/<key> by one rename(2) with `.complete` already inside, so a reader sees a
 * whole build or none. A builder killed with -9 leaves a staging dir the next holder removes.
 */

import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { cp, mkdir, open, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { homedir, hostname } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { artifactEscape } from '../../jobs/artifact-path.ts';
import { ERROR_CODES, isErrorCode, type UserInputCode } from '../../jobs/error-codes.ts';
import { UserInputError } from '../../jobs/errors.ts';
import { parseStored } from '../../jobs/parse-stored.ts';
import type { BuildEvent } from '../../jobs/worker-event.ts';
import { BUILD_STATE_TTL_MS, type BuildRequestInfo, BuildStateMirror } from '../../store/build-state.ts';
import { programEnv } from '../command/program-env.ts';
import { spawnTethered } from '../command/tether.ts';
import { asUser, type RunAs, runAsEnv } from '../run-as.ts';
import { checkBuildDir, dropSetIds, isCacheWorktree, lendWorktree, ownOutput } from './build-as-user.ts';
import { shareArtifacts } from './build-cache-sharing.ts';
import { type BuildKey, type BuildKeySpec, computeBuildKey } from './build-key.ts';
import { acquireBuildLock } from './build-lock.ts';

export const COMPLETE_MARKER = '.complete';
const LOG_TAIL_LINES = 20;

export interface BuildSpecInput {
  cmd: string;
  artifacts: string[];
  key: BuildKeySpec;
  dir?: string | undefined;
}

export interface BuildRequest {
  build: BuildSpecInput;
  /** Where a relative build.dir is resolved (the spec's directory); default: cwd. */
  baseDir?: string;
  experiment?: string;
  /** Dotted spec path of the build, for messages. */
  path?: string;
  /** The request's build events, for the experiment's stream (a trace's build slices). */
  onEvent?: (e: BuildEvent) => void;
}

export interface EnsuredBuild {
  key: string;
  recipe: string;
  /** artifacts/<key>: every artifact at its relative path. */
  dir: string;
  artifacts: string[];
  /** 'cached': finished before this request; 'shared': another request built it while this one waited; 'built': this request built it. */
  outcome: 'cached' | 'shared' | 'built';
  wait_ms: number;
  build_ms: number | null;
}

export interface BuildCacheOptions {
  root?: string;
  host?: string;
  redis?: Redis;
  /** Key prefix of the Redis view (default `orch`). */
  prefix?: string;
  /** Called with each mirror failure; the mirror is a view, so a Redis hiccup never fails a build. */
  onMirrorError?: (err: unknown) => void;
  /**
   * The user command programs run as (worker/run-as.ts): every build ensure() returns is first
   * opened, read-only, to its group (build-cache-sharing.ts; the root itself: shareBuildRoot).
   */
  runAs?: RunAs | null;
}

/**
 * `ORCH_BUILD_DIR` (empty: unset), else the user's cache; root's is /var/cache/orch/builds, not under /root
 * (0700): a root worker runs its programs as another user (worker/run-as.ts), who must reach the
 * artifacts and the rank caches beside them (build-cache-sharing.ts).
 */
export function defaultBuildRoot(): string {
  const named = process.env.ORCH_BUILD_DIR;
  if (named !== undefined && named !== '') return named;
  return process.getuid?.() === 0 ? ROOT_BUILD_ROOT : join(homedir(), '.cache', 'orch', 'builds');
}

/** A root process's default build root (FHS: an application's cache under /var/cache). */
export const ROOT_BUILD_ROOT = '/var/cache/orch/builds';

/** failed/<key>.json: the build of `key` that failed, for the requests that waited on it. */
const FailureRecordSchema = z.object({
  finished_at: z.number(),
  pid: z.int(),
  message: z.string(),
  code: z.custom<UserInputCode>(
    (c) => isErrorCode(c) && ERROR_CODES[c].kind === 'user-input',
    'a registered code of kind user-input',
  ),
});
type FailureRecord = z.infer<typeof FailureRecordSchema>;

let requestSeq = 0;

export class BuildCache {
  readonly root: string;
  readonly host: string;
  private readonly mirror: BuildStateMirror | null;
  private readonly onMirrorError: (err: unknown) => void;
  /** the user builds and their programs run as (worker/run-as.ts); null: the worker's own */
  readonly runAs: RunAs | null;

  constructor(opts: BuildCacheOptions = {}) {
    this.root = resolve(opts.root ?? defaultBuildRoot());
    this.host = opts.host ?? hostname();
    this.mirror = opts.redis ? new BuildStateMirror(opts.redis, this.host, opts.prefix) : null;
    this.onMirrorError = opts.onMirrorError ?? (() => {});
    this.runAs = opts.runAs ?? null;
  }

  artifactDir(key: string): string {
    return join(this.root, 'artifacts', key);
  }

  /** True when artifacts/<key> is a finished build. */
  isComplete(key: string): boolean {
    return existsSync(join(this.artifactDir(key), COMPLETE_MARKER));
  }

  private async view(f: (m: BuildStateMirror) => Promise<void>): Promise<void> {
    if (!this.mirror) return;
    try {
      await f(this.mirror);
    } catch (err) {
      this.onMirrorError(err);
    }
  }

  async ensure(req: BuildRequest): Promise<EnsuredBuild> {
    const b = await this.ensureBuilt(req);
    // a cached build too: it may predate --run-as, or come from a worker without it
    if (this.runAs !== null) shareArtifacts(b.dir, this.runAs);
    return b;
  }

  private async ensureBuilt(req: BuildRequest): Promise<EnsuredBuild> {
    const path = req.path ?? 'workload.build';
    const base = req.baseDir ?? process.cwd();
    // `~/src/x` is the user's home on this host; a relative dir is relative to `baseDir`.
    const given = req.build.dir?.replace(/^~(?=\/|$)/, homedir());
    const dir = given === undefined ? base : isAbsolute(given) ? given : resolve(base, given);
    // as the run-as user (build-as-user.ts), a checkout must let it in; a commit's worktree is
    // lent only to its build, under the build lock, so its toolchain commands run in /
    const worktree = isCacheWorktree(this.root, dir);
    if (this.runAs !== null && !worktree) checkBuildDir(dir, this.runAs, path);
    const bk = await computeBuildKey({
      cmd: req.build.cmd,
      artifacts: req.build.artifacts,
      key: req.build.key,
      dir,
      path,
      toolchainAs: this.runAs === null ? null : { runAs: this.runAs, cwd: worktree ? '/' : dir },
    });
    const done = (outcome: EnsuredBuild['outcome'], wait_ms: number, build_ms: number | null): EnsuredBuild => ({
      key: bk.key,
      recipe: bk.recipe,
      dir: this.artifactDir(bk.key),
      artifacts: req.build.artifacts.map((a) => join(this.artifactDir(bk.key), a)),
      outcome,
      wait_ms,
      build_ms,
    });
    const asked = Date.now();
    const emit = req.onEvent ?? (() => {});
    emit({ event: 'build-start', key: bk.key, recipe: bk.recipe, commit: bk.parts.commit });
    const end = (outcome: EnsuredBuild['outcome'] | 'failed', wait_ms: number) =>
      emit({ event: 'build-end', key: bk.key, ms: Date.now() - asked, wait_ms, ok: outcome !== 'failed', outcome });
    if (this.isComplete(bk.key)) {
      end('cached', 0);
      return done('cached', 0, null);
    }

    // Not tmp/: the staging area belongs to the lock holder, which removes it before each build
    // (build()). A waiter that made it here raced that removal: a recursive mkdir that finds the
    // directory, then loses it before its check, fails ENOENT (a fresh-clone CI failed a build
    // request so, with two builds on one host).
    for (const d of ['artifacts', 'logs', 'failed']) await mkdir(join(this.root, d), { recursive: true });
    const info: BuildRequestInfo = {
      id: `${process.pid}.${++requestSeq}.${randomBytes(3).toString('hex')}`,
      key: bk.key,
      recipe: bk.recipe,
      experiment: req.experiment ?? '',
      pid: process.pid,
      since: Date.now(),
    };
    await this.view((m) => m.waiting(info));
    let position: number | null = null;
    await this.view(async (m) => {
      position = await m.position(info);
    });
    emit({ event: 'build-wait', key: bk.key, position });
    let holding = false;
    const refresh = setInterval(
      () => void this.view((m) => (holding ? m.refreshHolding() : m.refreshWaiting(info))),
      BUILD_STATE_TTL_MS / 3,
    );
    let built: { ms: number; ok: boolean } | undefined;
    let wait_ms = 0;
    let outcome: EnsuredBuild['outcome'] | 'failed' = 'failed';
    try {
      const lock = await acquireBuildLock(join(this.root, '.build.lock'));
      try {
        wait_ms = Date.now() - info.since;
        if (this.isComplete(bk.key)) {
          outcome = 'shared';
          return done('shared', wait_ms, null);
        }
        const failure = await this.recentFailure(bk.key, info.since);
        if (failure) {
          throw new UserInputError(
            failure.code,
            `${failure.message}\n(this request waited for that build of key ${bk.key.slice(0, 12)}, run by pid ${failure.pid}, and fails with it)`,
          );
        }
        holding = true;
        const started = Date.now();
        await this.view((m) => m.holding(info, req.build.cmd, started));
        try {
          await this.build(req.build, bk, { dir, worktree }, path);
          built = { ms: Date.now() - started, ok: true };
        } catch (err) {
          built = { ms: Date.now() - started, ok: false };
          if (err instanceof UserInputError) {
            const rec: FailureRecord = {
              finished_at: Date.now(),
              pid: process.pid,
              message: err.message,
              code: err.code,
            };
            await writeFile(join(this.root, 'failed', `${bk.key}.json`), JSON.stringify(rec));
          }
          throw err;
        }
        outcome = 'built';
        return done('built', wait_ms, built.ms);
      } finally {
        await lock.release();
      }
    } finally {
      clearInterval(refresh);
      await this.view((m) => m.done(info, built));
      end(outcome, wait_ms);
    }
  }

  /**
   * A failure of `key` that finished after `since` (the build this request was waiting for). The
   * record only spares a waiter a second build of the same failure: one that is missing or fails
   * its schema (a write cut short by a crash) counts as none, so the build runs again and writes
   * a fresh one, never a failure with a code or message the record does not truly hold.
   */
  private async recentFailure(key: string, since: number): Promise<FailureRecord | null> {
    const file = join(this.root, 'failed', `${key}.json`);
    try {
      const rec = parseStored(FailureRecordSchema, await readFile(file, 'utf8'), file);
      return rec.finished_at >= since ? rec : null;
    } catch {
      return null;
    }
  }

  /** Runs the build under the held lock and commits artifacts/<key>; throws UserInputError on failure. */
  private async build(
    build: BuildSpecInput,
    bk: BuildKey,
    { dir, worktree }: { dir: string; worktree: boolean },
    path: string,
  ): Promise<void> {
    // Staging dirs of builders that died: we hold the lock, so nobody else is writing there.
    const tmp = join(this.root, 'tmp');
    await rm(tmp, { recursive: true, force: true });
    await mkdir(tmp, { mode: 0o700 });
    const staging = join(tmp, `${bk.key}.${process.pid}.${randomBytes(3).toString('hex')}`);
    await mkdir(staging, { recursive: true });
    // as the run-as user (build-as-user.ts): its own $ORCH_BUILD_OUT, a worktree lent, a checkout it must enter
    const as = this.runAs;
    const out = as === null ? staging : `${staging}.out`;
    if (as !== null) {
      await mkdir(out, { mode: 0o700 });
      ownOutput(tmp, out, as);
    }
    const logFile = join(this.root, 'logs', `${bk.key}.${Date.now()}.log`);
    const log = await open(logFile, 'w');
    const started = Date.now();
    let exit: { code: number | null; signal: NodeJS.Signals | null };
    const takeBack = as !== null && worktree ? await lendWorktree(dir, as) : null;
    try {
      const [file, ...args] = asUser(as, ['/bin/sh', '-c', build.cmd]);
      const p = spawnTethered(file!, args, {
        cwd: dir,
        env: { ...programEnv({ ORCH_BUILD_OUT: out, ORCH_BUILD_KEY: bk.key }), ...runAsEnv(as) },
        stdout: log.fd,
        stderr: log.fd,
      });
      exit = await p.exited;
    } finally {
      await log.close();
      await takeBack?.();
    }
    const secs = ((Date.now() - started) / 1000).toFixed(1);
    if (exit.code !== 0) {
      const how = exit.signal ? `was killed by ${exit.signal}` : `exited ${exit.code}`;
      throw new UserInputError(
        'BUILD_FAILED',
        `${path}.cmd: the build "${build.cmd}" in ${dir} ${how} after ${secs} s; last lines of ${logFile}:\n${await tail(logFile)}`,
        {
          hint: 'fix the build (run the command by hand in that directory), then submit again',
        },
      );
    }
    for (const [i, a] of build.artifacts.entries()) {
      // validate refuses these too; a payload that skipped it must still not copy outside
      const outside = artifactEscape(a);
      if (outside !== null)
        throw new UserInputError('BUILD_ARTIFACT_OUTSIDE', `${path}.artifacts[${i}]: ${outside}`, {
          hint: `list paths inside ${dir}`,
        });
      const inStaging = join(staging, a);
      if (existsSync(inStaging)) continue;
      const inOut = join(out, a);
      const src = out !== staging && existsSync(inOut) ? inOut : resolve(dir, a);
      const st = await stat(src).catch(() => null);
      if (!st) {
        throw new UserInputError(
          'BUILD_ARTIFACT_MISSING',
          `${path}.artifacts[${i}]: the build "${build.cmd}" exited 0 but did not produce "${a}" (looked in ${src} and in $ORCH_BUILD_OUT); last lines of ${logFile}:\n${await tail(logFile)}`,
          {
            hint: `make the build write ${a}, or list the path it does write in ${path}.artifacts`,
          },
        );
      }
      await cp(src, inStaging, { recursive: true, preserveTimestamps: true });
    }
    // copied as the worker: its files now, which must not keep a set-id bit the user's build set
    if (as !== null) await dropSetIds(staging);
    await writeFile(
      join(staging, COMPLETE_MARKER),
      JSON.stringify(
        {
          key: bk.key,
          parts: bk.parts,
          cmd: build.cmd,
          dir,
          built_at: Date.now(),
          build_ms: Date.now() - started,
          host: this.host,
          log: logFile,
        },
        null,
        2,
      ),
    );
    try {
      await rename(staging, this.artifactDir(bk.key));
    } catch {
      // An incomplete leftover at the target (no .complete): replace it; a complete one: keep it.
      if (!this.isComplete(bk.key)) {
        await rm(this.artifactDir(bk.key), { recursive: true, force: true });
        await rename(staging, this.artifactDir(bk.key));
      } else {
        await rm(staging, { recursive: true, force: true });
      }
    }
  }
}

/** The last lines of a log file, for error messages. */
export async function tail(file: string, lines = LOG_TAIL_LINES): Promise<string> {
  const text = await readFile(file, 'utf8').catch(() => '');
  const all = text.replace(/\n$/, '').split('\n');
  return (
    all
      .slice(-lines)
      .map((l) => `  | ${l}`)
      .join('\n') || '  | (empty log)'
  );
}
