/**
 * What a command workload needs of a card (`workload.requires`), and whether a card has it.
 *
 * A command runs on any card unless it says otherwise: orch cannot see inside the user's binary,
 * and without this list a CUDA program on a CPU-only cluster failed every block (three times each)
 * instead of being refused once. The list reads as the YAML a user writes:
 *
 *   requires: [cuda]
 *   requires: [cuda, min_memory_gb: 80, compute_capability: "9.0"]
 *
 * which YAML parses to `['cuda', { min_memory_gb: 80 }, { compute_capability: '9.0' }]`. The
 * schema keeps that form (the spec's canonical JSON and hash are of what the user wrote); the
 * scheduler reads it through `cardRequirements`. Cards carry what the worker read from nvidia-smi
 * (jobs/card.ts `memory_mib`, `compute_capability`); a cpu card has neither, so a memory or
 * capability floor names `cuda` too.
 */
import { z } from 'zod';
import { LIMITS, LIMITS_FILE } from './limits.ts';
import { isOneOf } from './one-of.ts';

/** The devices a workload may require; a card's backend. */
export const REQUIRED_DEVICES = ['cuda'] as const;
/** The keys of a one-key entry of the list. */
const FLOOR_KEYS = ['min_memory_gb', 'compute_capability'] as const;
type FloorKey = (typeof FLOOR_KEYS)[number];

/** MiB per GiB: nvidia-smi reports memory.total in MiB; `min_memory_gb` is in GiB (an "80 GB" A100 reports 80 GiB). */
const MIB_PER_GIB = 1024;

const ENTRY_FORMS = `cuda, min_memory_gb: N (GiB) or compute_capability: "X.Y"`;

/** What the scheduler checks a card against; read from a valid list by `cardRequirements`. */
export interface CardRequirements {
  cuda: boolean;
  /** at least this many GiB of memory (nvidia-smi memory.total) */
  minMemoryGb?: number;
  /** at least this compute capability, "major.minor" */
  computeCapability?: string;
}

/** The list as written; each entry is checked in `checkRequires`, with its path and fix. */
export const RequiresSchema = z
  .array(z.union([z.string(), z.record(z.string(), z.unknown())], { error: `each entry is one of ${ENTRY_FORMS}` }))
  .max(LIMITS.orch.list_length.max, { error: `more items than orch plans for (${LIMITS_FILE} orch.list_length)` })
  .superRefine(checkRequires);
export type Requires = z.infer<typeof RequiresSchema>;

const CAPABILITY_PATTERN = /^\d{1,2}\.\d$/;

function checkRequires(list: readonly (string | Record<string, unknown>)[], ctx: z.RefinementCtx): void {
  const seen = new Set<string>();
  const issue = (path: (string | number)[], message: string) => ctx.addIssue({ code: 'custom', path, message });
  list.forEach((entry, i) => {
    if (typeof entry === 'string') {
      if (!isOneOf(REQUIRED_DEVICES, entry)) {
        issue([i], `"${entry}" is not a device orch knows: write cuda (a cpu card runs any command already)`);
        return;
      }
      if (seen.has(entry)) issue([i], `${entry} is listed twice: remove one`);
      seen.add(entry);
      return;
    }
    const keys = Object.keys(entry);
    const key = keys[0];
    if (keys.length !== 1 || key === undefined || !isOneOf(FLOOR_KEYS, key)) {
      issue(
        [i],
        `an entry with keys {${keys.join(', ')}}: each entry is one of ${ENTRY_FORMS}, one per entry (write [cuda, min_memory_gb: 80])`,
      );
      return;
    }
    if (seen.has(key)) issue([i, key], `${key} is listed twice: keep one`);
    seen.add(key);
    const problem = floorProblem(key, entry[key]);
    if (problem) issue([i, key], problem);
  });
  const floors = FLOOR_KEYS.filter((k) => seen.has(k));
  if (floors.length > 0 && !seen.has('cuda'))
    issue(
      [],
      `${floors.join(' and ')} ${floors.length > 1 ? 'are' : 'is'} a GPU's, and only cuda cards report ${floors.length > 1 ? 'them' : 'it'}: add cuda to the list ([cuda, ${floors[0]}: ...])`,
    );
}

/** What is wrong with a floor's value, or null. */
function floorProblem(key: FloorKey, value: unknown): string | null {
  if (key === 'min_memory_gb')
    return typeof value === 'number' && Number.isFinite(value) && value > 0
      ? null
      : `min_memory_gb is the card's memory in GiB, a positive number (got ${JSON.stringify(value)}): e.g. min_memory_gb: 80`;
  if (typeof value === 'number')
    return `compute_capability is read as text "major.minor": quote it (compute_capability: "${Number.isInteger(value) ? value.toFixed(1) : value}"), YAML makes 9.0 the number 9`;
  return typeof value === 'string' && CAPABILITY_PATTERN.test(value)
    ? null
    : `compute_capability is "major.minor" as nvidia-smi's compute_cap prints it (got ${JSON.stringify(value)}): e.g. compute_capability: "9.0"`;
}

/** What a valid list asks for; none (`undefined`) for an absent list. */
export function cardRequirements(requires: Requires | undefined): CardRequirements | undefined {
  if (requires === undefined) return undefined;
  const out: CardRequirements = { cuda: false };
  for (const entry of requires) {
    if (entry === 'cuda') out.cuda = true;
    else if (typeof entry === 'object') {
      if (typeof entry.min_memory_gb === 'number') out.minMemoryGb = entry.min_memory_gb;
      if (typeof entry.compute_capability === 'string') out.computeCapability = entry.compute_capability;
    }
  }
  return out;
}

/** What a card offers to the check: its backend, and what its worker read from nvidia-smi. */
export interface CardOffer {
  backend: 'cpu' | 'cuda';
  memory_mib?: number | undefined;
  compute_capability?: string | undefined;
}

/** Whether `card` meets `need` (no need: every card). A floor the card did not report is not met. */
export function meetsRequirements(need: CardRequirements | undefined, card: CardOffer): boolean {
  if (need === undefined) return true;
  if (need.cuda && card.backend !== 'cuda') return false;
  if (need.minMemoryGb !== undefined && (card.memory_mib ?? 0) / MIB_PER_GIB < need.minMemoryGb) return false;
  if (need.computeCapability !== undefined) {
    if (card.compute_capability === undefined) return false;
    if (compareCapability(card.compute_capability, need.computeCapability) < 0) return false;
  }
  return true;
}

/** "9.0" against "8.6": by major, then minor. */
export function compareCapability(a: string, b: string): number {
  const [am = 0, an = 0] = a.split('.').map(Number);
  const [bm = 0, bn = 0] = b.split('.').map(Number);
  return am - bm || an - bn;
}

/** The requirement as the user wrote it: `[cuda, min_memory_gb: 80]`. */
export function describeRequirements(need: CardRequirements): string {
  const parts = [
    ...(need.cuda ? ['cuda'] : []),
    ...(need.minMemoryGb !== undefined ? [`min_memory_gb: ${need.minMemoryGb}`] : []),
    ...(need.computeCapability !== undefined ? [`compute_capability: "${need.computeCapability}"`] : []),
  ];
  return `[${parts.join(', ')}]`;
}

/** What a cuda card reported, as the refusal lists it: ` (140 GiB, cc 9.0)`; '' for a cpu card. */
export function describeOffer(card: CardOffer): string {
  if (card.backend !== 'cuda') return '';
  const memory = card.memory_mib === undefined ? null : `${Math.floor(card.memory_mib / MIB_PER_GIB)} GiB`;
  const cc = card.compute_capability === undefined ? null : `cc ${card.compute_capability}`;
  if (memory === null && cc === null) return ' (memory and cc not reported)';
  return ` (${[memory ?? 'memory not reported', cc ?? 'cc not reported'].join(', ')})`;
}

/** Why no card of `cards` meets `need` (`workload.requires [...]; cards: 2 cpu@h1, 1 cuda@h2 (80 GiB, cc 8.0)`), or null when one does. */
export function unmetRequirements(
  need: CardRequirements | undefined,
  cards: readonly (CardOffer & { host: string })[],
): string | null {
  if (need === undefined || cards.some((c) => meetsRequirements(need, c))) return null;
  const count = new Map<string, number>();
  for (const c of cards) {
    const key = `${c.backend}@${c.host}${describeOffer(c)}`;
    count.set(key, (count.get(key) ?? 0) + 1);
  }
  const listed = [...count.entries()].map(([k, n]) => `${n} ${k}`).join(', ');
  return `workload.requires ${describeRequirements(need)}; cards: ${listed || 'none'}`;
}

/** How a submit that no card can run now is refused (--no-wait, the embedded default): `${NO_CARD_CAN_RUN}: <spec file>: <unmet>`. */
export const NO_CARD_CAN_RUN = 'no card here can run this';

/**
 * Why a block that no registered card can run waits (orch status, the dashboard). It starts as the
 * planner's other "no … card is registered" sentences do, so /metrics counts it under the same
 * reason code (orchestrator/dashboard/wait-reason-code.ts `no-cards`).
 */
export function waitingForRequirements(unmet: string): string {
  return `no card is registered that can run this: ${unmet}`;
}
