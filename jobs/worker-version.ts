/**
 * What a worker registers as its version with its cards (Card.version): its orch version and
 * commit, and the graphrt build its `graphrt hello` reported. The grant planner never puts two
 * versions in one gang; `orch status` and `orch hosts status` flag a host whose orch differs
 * from their own.
 */
export interface WorkerVersion {
  orch: string;
  /** the git commit orch runs at, `unknown` outside a checkout */
  commit: string;
  /** graphrt's hello version, `none` where it could not be run */
  graphrt: string;
}

export function formatWorkerVersion(v: WorkerVersion): string {
  return `orch ${v.orch} commit ${v.commit === 'unknown' ? v.commit : v.commit.slice(0, 12)} graphrt ${v.graphrt}`;
}

/** The orch part (`orch 0.1.0 commit abcdef012345`) of a registered version, null when it has none. */
export function orchPart(version: string | undefined): string | null {
  return /^orch \S+ commit \S+/.exec(version ?? '')?.[0] ?? null;
}

/**
 * Whether a host's registered version differs from this orch (version and commit): a host that
 * registered none (an older worker) differs too.
 */
export function differsFrom(version: string | undefined, own: { version: string; commit: string }): boolean {
  return orchPart(version) !== orchPart(formatWorkerVersion({ orch: own.version, commit: own.commit, graphrt: '' }));
}
