/**
 * `workload.run.launcher`: how the program expects to be started. `torchrun`: as torchrun's
 * agent would start it, one worker process per card. orch is that agent (worker/command/command-gang.ts
 * `torchrunEnv`): every rank gets the whole environment torchrun's agent sets, and on cuda cards
 * sees its host's cards of the gang in local-rank order, so `cuda:LOCAL_RANK` is its own card. The
 * user's torchrun is not started: between the worker and the program it would restart failed
 * workers (a failing rank must end the gang), run a second rendezvous beside orch's, and hide the
 * program's pid from the foreign-process guard and the card's lock.
 */
import { z } from 'zod';

export const LAUNCHERS = ['torchrun'] as const;
export const LauncherSchema = z.enum(LAUNCHERS);
export type Launcher = z.infer<typeof LauncherSchema>;

/**
 * The launcher a command starts itself, if any: `torchrun …`, `python -m torch.distributed.run
 * …` (or the older `.launch`), after leading VAR=value assignments and `exec`/`env`.
 */
export function startsTorchrun(cmd: string): boolean {
  const words = cmd.trim().split(/\s+/);
  let i = 0;
  while (i < words.length && (/^[A-Za-z_][A-Za-z0-9_]*=/.test(words[i]!) || words[i] === 'exec' || words[i] === 'env'))
    i++;
  const head = (words[i] ?? '').split('/').at(-1) ?? '';
  if (head === 'torchrun') return true;
  return (
    /^python[0-9.]*$/.test(head) &&
    words[i + 1] === '-m' &&
    /^torch\.distributed\.(run|launch)$/.test(words[i + 2] ?? '')
  );
}

/** The refusal of a command that starts torchrun itself: what happens under orch, and the fix. */
export const TORCHRUN_IN_CMD =
  "run.cmd starts torchrun, which would start its own worker processes inside each of orch's ranks (one per card): write the program's own command (python3 train.py …) and set run.launcher: torchrun; orch then gives every rank torchrun's environment (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, TORCHELASTIC_RUN_ID, …)";
