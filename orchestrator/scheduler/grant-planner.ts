/**
 * Which waiting blocks get which cards now: FIFO gang granting with EASY backfill.
 *
 * Pure: the scheduler hands in the alive cards, the cards held by leases, the running blocks
 * with their expected end, and the waiting blocks in queue order (priority, then submission
 * order). The oldest waiting block that does not fit gets a reservation — the cards that will
 * be free first and the time they will be — and a later block is granted now only if it leaves
 * those cards alone or is expected to end before that time, so it never delays the oldest.
 * A block that no set of alive cards can ever hold takes no reservation (it would block the
 * queue forever); it waits with a reason that says what is missing.
 *
 * Placement: `host` keeps a gang on one host; `spread` (or `host` with `spreadFallback`, when no
 * host holds the gang) takes one host when one holds it, else the fewest hosts, fullest first;
 * the first host's part holds rank 0 and leads the attempt. A gang never mixes the versions its
 * hosts' workers registered (orch, commit, graphrt build): ranks of two builds may disagree on
 * the protocol or on the numbers.
 */

export type Backend = 'cpu' | 'cuda';
export type WantedBackend = Backend | 'auto' | 'any';

export interface CardSlot {
  id: string;
  host: string;
  backend: Backend;
  index: number;
  /** what the host's worker registered: orch version and commit, graphrt build ('' when unknown) */
  version?: string;
}

export interface WaitingBlock {
  key: string;
  ranks: number;
  backend: WantedBackend;
  placement: 'host' | 'spread';
  /** placement host: spread across hosts when no host has enough cards */
  spreadFallback?: boolean;
  expectedMs: number;
}

export interface RunningBlock {
  key: string;
  cards: string[];
  expectedEndMs: number;
}

export interface GrantInput {
  now: number;
  /** every card of an alive host */
  cards: CardSlot[];
  /** cards with a live lease (running blocks, or held by something else) */
  busy: ReadonlySet<string>;
  running: RunningBlock[];
  /** in queue order: the first is the oldest */
  waiting: WaitingBlock[];
}

export interface Grant {
  key: string;
  cards: CardSlot[];
}

export interface GrantDecision {
  grants: Grant[];
  /** why each block that got nothing is still waiting */
  why: Map<string, string>;
}

/** Where a waiting block stands in the queue. */
export interface QueuePosition {
  /** the spec's priority: higher first */
  priority: number;
  /** the experiment's submission order */
  seq: number;
  block: number;
}

/** Queue order: higher priority first, then first submitted, then block index. */
export function compareQueued(a: QueuePosition, b: QueuePosition): number {
  return b.priority - a.priority || a.seq - b.seq || a.block - b.block;
}

export function backendMatches(want: WantedBackend, card: Backend): boolean {
  return want === 'auto' || want === 'any' || want === card;
}

/** The cards for `block` out of `free`, or null; in rank order, rank 0's host first. */
export function fitGang(block: WaitingBlock, free: CardSlot[]): CardSlot[] | null {
  const usable = free.filter((c) => backendMatches(block.backend, c.backend));
  // one version at a time: the version with the most usable cards first
  for (const group of [...byKey(usable, (c) => c.version ?? '').values()].sort((a, b) => b.length - a.length)) {
    const gang = fitOneVersion(block, group);
    if (gang) return gang;
  }
  return null;
}

function fitOneVersion(block: WaitingBlock, usable: CardSlot[]): CardSlot[] | null {
  if (usable.length < block.ranks) return null;
  const hosts = [...byKey(usable, (c) => c.host).entries()].sort((a, b) => a[1].length - b[1].length || a[0].localeCompare(b[0]));
  const ordered = (cs: CardSlot[]) => [...cs].sort((a, b) => a.index - b.index || a.id.localeCompare(b.id));
  // Best fit: the host with the fewest free cards that still holds the gang keeps big holes open.
  const one = hosts.find(([, cs]) => cs.length >= block.ranks);
  if (one) return ordered(one[1]).slice(0, block.ranks);
  if (!spreads(block)) return null;
  // Across hosts: the fewest hosts, so the fullest first (the leading part holds the most ranks).
  const gang: CardSlot[] = [];
  for (const [, cs] of [...hosts].sort((a, b) => b[1].length - a[1].length || a[0].localeCompare(b[0]))) {
    gang.push(...ordered(cs).slice(0, block.ranks - gang.length));
    if (gang.length === block.ranks) return gang;
  }
  return null;
}

function spreads(block: WaitingBlock): boolean {
  return block.placement === 'spread' || block.spreadFallback === true;
}

function byKey<T>(items: T[], key: (t: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  // in place: copying the group on every add made grouping 512 cards quadratic
  for (const t of items) {
    const k = key(t);
    const group = out.get(k);
    if (group) group.push(t);
    else out.set(k, [t]);
  }
  return out;
}

/** Why `block` can never run on `cards` (no host, set of hosts or backend big enough), or null if it can. */
export function neverFits(block: WaitingBlock, cards: CardSlot[]): string | null {
  if (fitGang(block, cards)) return null;
  const usable = cards.filter((c) => backendMatches(block.backend, c.backend));
  const kind = block.backend === 'auto' || block.backend === 'any' ? '' : `${block.backend} `;
  if (usable.length === 0) {
    return cards.length === 0
      ? 'no host is registered (start `orch worker` on a host)'
      : `no ${kind}card is registered (cards: ${summarizeCards(cards)})`;
  }
  const versions = byKey(usable, (c) => c.version ?? '');
  if (spreads(block)) {
    const [version, largest] = [...versions.entries()].sort((a, b) => b[1].length - a[1].length)[0]!;
    const mixed =
      versions.size > 1 && usable.length >= block.ranks
        ? `; the hosts run ${versions.size} different versions and a gang never mixes versions (${versionSummary(versions)}): upgrade the hosts to one version`
        : '';
    return `needs ${block.ranks} ${kind}cards across hosts; the largest possible gang is ${largest.length} (${perHost(largest)}${version && versions.size > 1 ? `, version ${version}` : ''})${mixed}`;
  }
  const [host, n] = [...byKey(usable, (c) => c.host).entries()].map(([h, cs]) => [h, cs.length] as const).sort((a, b) => b[1] - a[1])[0]!;
  const mixed = versions.size > 1 ? ` (hosts of different versions never share a gang: ${versionSummary(versions)})` : '';
  return `needs ${block.ranks} ${kind}cards on one host; the largest host, ${host}, has ${n}${mixed}`;
}

function perHost(cards: CardSlot[]): string {
  return [...byKey(cards, (c) => c.host).entries()].sort((a, b) => b[1].length - a[1].length || a[0].localeCompare(b[0])).map(([h, cs]) => `${h}: ${cs.length}`).join(', ');
}

function versionSummary(versions: Map<string, CardSlot[]>): string {
  return [...versions.entries()].map(([v, cs]) => `${[...new Set(cs.map((c) => c.host))].join(',')} at ${v || 'an unknown version'}`).join('; ');
}

export function summarizeCards(cards: CardSlot[]): string {
  const count = new Map<string, number>();
  for (const c of cards) count.set(`${c.backend}@${c.host}`, (count.get(`${c.backend}@${c.host}`) ?? 0) + 1);
  return [...count.entries()].map(([k, n]) => `${n} ${k}`).join(', ');
}

export function planGrants(input: GrantInput): GrantDecision {
  const { now, cards } = input;
  const alive = new Set(cards.map((c) => c.id));
  let free = cards.filter((c) => !input.busy.has(c.id));
  const grants: Grant[] = [];
  const why = new Map<string, string>();
  let reservation: { key: string; at: number; cards: Set<string> } | null = null;
  const nevers = new Map<string, string | null>();

  for (const block of input.waiting) {
    // the same answer for every block of one shape: once per shape, not once per waiting block
    const shape = `${block.ranks}/${block.backend}/${block.placement}/${block.spreadFallback === true}`;
    if (!nevers.has(shape)) nevers.set(shape, neverFits(block, cards));
    const never = nevers.get(shape);
    if (never) {
      why.set(block.key, never);
      continue;
    }
    if (!reservation) {
      const gang = fitGang(block, free);
      if (gang) {
        grants.push({ key: block.key, cards: gang });
        const taken = new Set(gang.map((c) => c.id));
        free = free.filter((c) => !taken.has(c.id));
        continue;
      }
      const r = reserve(block, free, input.running, alive, cards, now);
      reservation = r;
      why.set(block.key, r.reason);
      continue;
    }
    // Backfill: only cards the reservation does not need, or an end before it starts.
    const outside = free.filter((c) => !reservation!.cards.has(c.id));
    let gang = fitGang(block, outside);
    if (!gang && now + block.expectedMs <= reservation.at) gang = fitGang(block, free);
    if (gang) {
      grants.push({ key: block.key, cards: gang });
      const taken = new Set(gang.map((c) => c.id));
      free = free.filter((c) => !taken.has(c.id));
      continue;
    }
    why.set(
      block.key,
      fitGang(block, free)
        ? `behind ${reservation.key} (FIFO: starting now would delay it; expected ${Math.round(block.expectedMs / 1000)} s)`
        : `waiting for ${block.ranks} free card(s) (behind ${reservation.key})`,
    );
  }
  return { grants, why };
}

/** The earliest time the oldest block fits as running blocks end, and the cards it will take. */
function reserve(
  block: WaitingBlock,
  free: CardSlot[],
  running: RunningBlock[],
  alive: Set<string>,
  cards: CardSlot[],
  now: number,
): { key: string; at: number; cards: Set<string>; reason: string } {
  const byId = new Map(cards.map((c) => [c.id, c]));
  let pool = [...free];
  const ends = [...running].sort((a, b) => a.expectedEndMs - b.expectedEndMs);
  for (const r of ends) {
    pool = pool.concat(r.cards.filter((id) => alive.has(id)).map((id) => byId.get(id)!));
    const gang = fitGang(block, pool);
    if (gang) {
      const at = Math.max(now, r.expectedEndMs);
      return {
        key: block.key,
        at,
        cards: new Set(gang.map((c) => c.id)),
        reason: `waiting for ${block.ranks} free card(s); expected in ~${Math.ceil((at - now) / 1000)} s (held by ${r.key})`,
      };
    }
  }
  // Held by something orch does not know the end of (a foreign lease): reserve every fitting card.
  const gang = fitGang(block, cards) ?? [];
  return {
    key: block.key,
    at: Number.POSITIVE_INFINITY,
    cards: new Set(gang.map((c) => c.id)),
    reason: `waiting for ${block.ranks} free card(s) (held by leases orch did not grant to a running block)`,
  };
}
