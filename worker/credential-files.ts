/**
 * Credential files a worker's programs could read: the Redis URL's and the cluster secret's, which
 * stay on disk after the worker read them unless `--unlink-credential-files` removes them (`orch
 * hosts up` and `orch slurm up` pass it). A program that runs as the worker's own user (no run-as
 * user: worker/run-as.ts) opens a 0600 file of that user as easily as the worker does, so a worker
 * that runs users' code says so at start, naming the files and the fixes. A root worker without a
 * run-as user has its own warning (chooseRunAs): its programs can read every file.
 */

/** The warning for `files` left readable to the programs, or null when none is. */
export function credentialFilesLeft(o: {
  /** the programs run as the worker's own user, not root */
  ownUserPrograms: boolean;
  unlinked: boolean;
  /** each credential file and how it was named (`--secret-file`, `ORCH_CLUSTER_SECRET_FILE`) */
  files: { how: string; path: string | undefined }[];
}): string | null {
  const named = o.files.filter((f) => f.path !== undefined && !(o.unlinked && f.how.startsWith('--')));
  if (!o.ownUserPrograms || named.length === 0) return null;
  const list = named.map((f) => `${f.how} ${f.path}`).join(', ');
  return `${list}: left on disk, readable by this worker's user, whom its programs and builds run as; pass --unlink-credential-files (the worker reads them once; orch hosts up and orch slurm up do so), or start the worker as root, which runs them as orch-run`;
}
