/**
 * What a worker lets an experiment run on its host besides graphrt of its own checkout, and what
 * an experiment needs of it. Both are code the submitter chose:
 *
 * - `command`: a command workload, the user's binary and its build (`orch worker --allow-command`);
 * - `build`: a build of a commit (`builds:`): a native spec's builds run that commit's
 *   CMakeLists.txt, a command spec's its recipe (`--allow-build`; `--allow-command` includes it).
 *
 * A worker registers its capabilities with its cards (store/card-registry.ts); submit refuses a
 * spec no registered worker allows, the scheduler grants blocks and build jobs only to hosts that
 * allow them, and the worker refuses what it does not allow anyway.
 */
import { z } from 'zod';

export const CapabilitySchema = z.enum(['command', 'build']);
export type Capability = z.infer<typeof CapabilitySchema>;

/** The flag of `orch worker` that grants each capability. */
export const CAPABILITY_FLAG: Record<Capability, string> = { command: '--allow-command', build: '--allow-build' };

/** A worker's capabilities from its flags: commands include builds. */
export function workerCapabilities(o: { allowCommand?: boolean; allowBuild?: boolean }): Capability[] {
  if (o.allowCommand) return ['command', 'build'];
  return o.allowBuild ? ['build'] : [];
}

/** What an experiment (or one job of it) needs of the worker that runs it: its runtime, and how many commits it builds. */
export function neededCapabilities(runtime: string, commitBuilds: number): Capability[] {
  const need: Capability[] = [];
  if (runtime === 'command') need.push('command');
  if (commitBuilds > 0) need.push('build');
  return need;
}

/** What a spec needs (its workload, its `builds:`). */
export function specNeeds(spec: {
  workload: { runtime: string };
  builds?: Record<string, unknown> | undefined;
}): Capability[] {
  return neededCapabilities(spec.workload.runtime, Object.keys(spec.builds ?? {}).length);
}

/** Whether a card's worker allows everything in `need` (a card registered without capabilities allows none). */
export function allows(card: { caps?: readonly Capability[] | undefined }, need: readonly Capability[]): boolean {
  return need.every((c) => card.caps?.includes(c) === true);
}

/** "a command workload (--allow-command)", for messages. */
export function describeNeed(need: readonly Capability[]): string {
  const what: Record<Capability, string> = { command: 'a command workload', build: 'a build of a commit' };
  return need.map((c) => `${what[c]} (${CAPABILITY_FLAG[c]})`).join(' and ');
}
