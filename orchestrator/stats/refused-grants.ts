/**
 * Block jobs a worker refused at its grant check (store/job-admission.ts): every rep of such a
 * block fails with the worker's reason, `GRANT_INVALID: job <id> on host-<name> refused: …` (the
 * code first, as worker/worker.ts writes it), and nothing ran. The same reason repeated per rep
 * once left the cause dozens of lines into the report under "no usable rep"; the input gate puts
 * this sentence first instead: which host refused, why, and the fix.
 */
const REFUSED = /\b(GRANT_INVALID|GRANT_MISSING): job (\S+) on host-(\S+) refused\b/g;

const CAUSE = {
  GRANT_INVALID: {
    what: 'the grants orch serve signed do not verify with its cluster secret (the worker holds another secret than orch serve)',
    fix: (host: string) =>
      `start orch worker --host ${host} with the cluster secret orch serve holds (--secret-file FILE, or ORCH_CLUSTER_SECRET; one secret for every serve and worker of the cluster), then submit again`,
  },
  GRANT_MISSING: {
    what: 'they carry no grant (something other than orch serve wrote them to its queue)',
    fix: (host: string) =>
      `find what writes to the queue host-${host} besides orch serve (every job orch serve dispatches is signed), then submit again`,
  },
} as const;

/** The sentence naming each host whose worker refused block jobs at its grant check, or null. */
export function refusedGrants(failed: readonly { reason: string }[]): string | null {
  const jobs = new Map<string, { code: keyof typeof CAUSE; host: string }>();
  // every refusal a reason names: a failed experiment's reason joins its blocks' ("block 0: …; block 1: …")
  for (const f of failed)
    for (const m of f.reason.matchAll(REFUSED)) jobs.set(m[2]!, { code: m[1] as keyof typeof CAUSE, host: m[3]! });
  if (jobs.size === 0) return null;
  const byCause = new Map<string, { code: keyof typeof CAUSE; host: string; n: number }>();
  for (const j of jobs.values()) {
    const k = `${j.code} ${j.host}`;
    byCause.set(k, { ...j, n: (byCause.get(k)?.n ?? 0) + 1 });
  }
  return [...byCause.values()]
    .map(
      ({ code, host, n }) =>
        `the worker of host ${host} refused ${n} block job${n === 1 ? '' : 's'} at its grant check (${code}): ${CAUSE[code].what}, so nothing ran there — ${CAUSE[code].fix(host)}`,
    )
    .join('; ');
}
