/**
 * The batch script `orch slurm up` submits (pure): one `orch worker` per node under
 * `srun --ntasks-per-node=1`, each taking the GPUs Slurm gave its step. The Redis URL and the
 * cluster secret are files in the run directory (0600), named by path only: the script,
 * the job's argv and its environment carry no credential (`scontrol show job`,
 * `scontrol write batch_script` show them to others). Each task's worker gets its own copy
 * (`redis-url.$SLURM_PROCID`, slurm-run-dir.ts), reads it once and unlinks it
 * (`--unlink-credential-files`): no credential stays in a plain file after the workers read them.
 *
 * The pre-timeout signal goes to the batch shell alone (`--signal=B:USR1@S`): a signal Slurm
 * sends to a step reaches every process of it, the ranks too, which would die mid-rep. The shell's
 * trap writes the stop file instead, and each worker stops gracefully when it appears
 * (worker/slurm/allocation-clock.ts) — as it does on its own `--drain-before-end` before the end.
 */
export interface BatchScriptInput {
  nodes: number;
  gpusPerNode: number;
  /** Slurm's time format: minutes, MM:SS, HH:MM:SS, D-HH */
  time: string;
  partition?: string;
  account?: string;
  /** the run directory: credentials, stop file, output (on a filesystem the nodes share) */
  dir: string;
  /** node and the orch entry point, absolute */
  node: string;
  orch: string;
  prefix: string;
  drainSeconds: number;
  /** extra `orch worker` flags (--allow-command, --heartbeat-ms …), each one argument */
  workerArgs: string[];
}

/** Seconds before the end at which the batch shell is told to stop its workers: past their own drain, so it is a backstop. */
export const SIGNAL_LEAD_S = 30;

export function batchScript(i: BatchScriptInput): string {
  const q = shellQuote;
  const directives = [
    `--job-name=orch-workers`,
    `--nodes=${i.nodes}`,
    `--ntasks-per-node=1`,
    ...(i.gpusPerNode > 0 ? [`--gres=gpu:${i.gpusPerNode}`] : []),
    `--time=${i.time}`,
    `--signal=B:USR1@${i.drainSeconds + SIGNAL_LEAD_S}`,
    `--output=${i.dir}/slurm-%j.out`,
    ...(i.partition ? [`--partition=${i.partition}`] : []),
    ...(i.account ? [`--account=${i.account}`] : []),
  ];
  // the task's own copies, named by its SLURM_PROCID, which only the task's shell knows
  const ownCopies =
    'd=$1; shift; exec "$@" --redis-url-file "$d/redis-url.$SLURM_PROCID" --secret-file "$d/secret.$SLURM_PROCID" --unlink-credential-files';
  const worker = [
    'bash',
    '-c',
    ownCopies,
    'orch-worker',
    i.dir,
    i.node,
    i.orch,
    'worker',
    '--slurm',
    'on',
    '--stop-file',
    `${i.dir}/stop`,
    '--prefix',
    i.prefix,
    '--drain-before-end',
    String(i.drainSeconds),
    ...i.workerArgs,
  ];
  return [
    '#!/bin/bash',
    '# written by orch slurm up: one orch worker per node of the allocation',
    ...directives.map((d) => `#SBATCH ${q(d)}`),
    'set -u',
    // the path in a variable: quoted once, where it is set (a quoted path inside the trap's own
    // single quotes broke on a run directory with a space or a quote, and touched another path)
    `stop=${q(`${i.dir}/stop`)}`,
    `trap 'touch "$stop"' USR1`,
    `srun --ntasks-per-node=1${i.gpusPerNode > 0 ? ` --gres=gpu:${i.gpusPerNode}` : ''} ${worker.map(q).join(' ')} &`,
    'workers=$!',
    '# a trapped signal ends `wait` early: wait again until the workers are gone',
    'while kill -0 "$workers" 2>/dev/null; do wait "$workers"; done',
    'wait "$workers"',
    '',
  ].join('\n');
}

function shellQuote(s: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}
