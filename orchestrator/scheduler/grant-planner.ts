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
 *
 * A card with an end (`until`: its worker's Slurm allocation ends, jobs/card.ts) takes only a
 * block expected to end by then: a block that no card lasting long enough can hold waits with a
 * reason naming the ends, and one that fits elsewhere goes there.
 */

import type { Card } from '../../jobs/card.ts';
import {
  type CardOffer,
  type CardRequirements,
  cardRequirements,
  meetsRequirements,
  unmetRequirements,
  waitingForRequirements,
} from '../../jobs/card-requirements.ts';
import type { Spec } from '../../jobs/spec.ts';

export type Backend = 'cpu' | 'cuda';
export type WantedBackend = Backend | 'auto' | 'any';

/** What a block of this experiment needs from a card's backend: a native spec names one, a command runs anywhere. */
export function wantedBackend(exp: { spec: Pick<Spec, 'workload'> }): WantedBackend {
  const w = exp.spec.workload;
  return w.runtime === 'native' ? w.backend : 'any';
}

/** What a block of this experiment needs of its cards: the backend, and a command workload's `requires`. */
export function cardNeed(exp: { spec: Pick<Spec, 'workload'> }): Pick<WaitingBlock, 'backend' | 'requires'> {
  const w = exp.spec.workload;
  const requires = w.runtime === 'command' ? cardRequirements(w.requires) : undefined;
  return { backend: wantedBackend(exp), ...(requires ? { requires } : {}) };
}

export interface CardSlot {
  id: string;
  host: string;
  backend: Backend;
  index: number;
  /** what the host's worker registered: orch version and commit, graphrt build ('' when unknown) */
  version?: string;
  /** no lease on it past this moment (ms since the epoch): its worker's allocation ends */
  until?: number;
  /** what its worker read from nvidia-smi (jobs/card.ts), for a workload's `requires` */
  memory_mib?: number;
  compute_capability?: string;
}

/** The planner's view of a registered card. */
export function cardSlot(c: Card): CardSlot {
  return {
    id: c.id,
    host: c.host,
    backend: c.backend,
    index: c.index,
    ...(c.version === undefined ? {} : { version: c.version }),
    ...(c.until === undefined ? {} : { until: c.until }),
    ...(c.memory_mib === undefined ? {} : { memory_mib: c.memory_mib }),
    ...(c.compute_capability === undefined ? {} : { compute_capability: c.compute_capability }),
  };
}

export interface WaitingBlock {
  key: string;
  ranks: number;
  backend: WantedBackend;
  /** a command workload's `requires` (jobs/card-requirements.ts); absent: any card of the backend */
  requires?: CardRequirements;
  placement: 'host' | 'spread';
  /** placement host: spread across hosts when no host has enough cards */
  spreadFallback?: boolean;
  expectedMs: number;
  /** false: expectedMs is backfill's guess (no step time of the workload measured yet), never shown */
  expectedKnown?: boolean;
  /**
   * Only cards of these hosts (the hosts where the experiment's builds are ready,
   * build-phase.ts); a block that no set of them can hold waits with `hostsWhy` and takes no
   * reservation, so the cards it cannot use yet go to the blocks behind it.
   */
  hosts?: ReadonlySet<string>;
  hostsWhy?: string;
  /** shapeKey(this block), when the caller made it once for many blocks */
  shape?: string;
}

/** What decides whether a block fits a set of cards, but its allowed hosts: blocks of one shape fit alike. */
export function shapeKey(
  block: Pick<WaitingBlock, 'ranks' | 'backend' | 'requires' | 'placement' | 'spreadFallback'>,
): string {
  const requires = block.requires ? `/${JSON.stringify(block.requires)}` : '';
  return `${block.ranks}/${block.backend}/${block.placement}/${block.spreadFallback === true}${requires}`;
}

export interface RunningBlock {
  key: string;
  cards: string[];
  expectedEndMs: number;
  /** false: the expected end is backfill's guess (no step time of the workload measured yet), never shown */
  known?: boolean;
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
  /**
   * Whether the caller will read the reason of this waiting block (default: every block). The
   * scheduler rewrites a block's reason at most every few seconds, and building 1 500 reason
   * strings on every pass was a large share of its garbage.
   */
  wantWhy?: (key: string) => boolean;
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

/** Whether one card could hold a rank of `block`: its backend, and what the workload requires. */
export function cardServes(block: Pick<WaitingBlock, 'backend' | 'requires'>, card: CardOffer): boolean {
  return backendMatches(block.backend, card.backend) && meetsRequirements(block.requires, card);
}

/** The cards for `block` out of `free`, or null; in rank order, rank 0's host first. */
export function fitGang(block: WaitingBlock, free: CardSlot[]): CardSlot[] | null {
  const usable = free.filter((c) => cardServes(block, c));
  // one version at a time: the version with the most usable cards first
  for (const group of [...byKey(usable, (c) => c.version ?? '').values()].sort((a, b) => b.length - a.length)) {
    const gang = fitOneVersion(block, group);
    if (gang) return gang;
  }
  return null;
}

function fitOneVersion(block: WaitingBlock, usable: CardSlot[]): CardSlot[] | null {
  if (usable.length < block.ranks) return null;
  const hosts = [...byKey(usable, (c) => c.host).entries()].sort(
    (a, b) => a[1].length - b[1].length || a[0].localeCompare(b[0]),
  );
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
  const usable = cards.filter((c) => cardServes(block, c));
  const kind = block.backend === 'auto' || block.backend === 'any' ? '' : `${block.backend} `;
  if (usable.length === 0) {
    if (cards.length === 0) return 'no host is registered (start `orch worker` on a host)';
    const unmet = unmetRequirements(block.requires, cards);
    return unmet ? waitingForRequirements(unmet) : `no ${kind}card is registered (cards: ${summarizeCards(cards)})`;
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
  const [host, n] = [...byKey(usable, (c) => c.host).entries()]
    .map(([h, cs]) => [h, cs.length] as const)
    .sort((a, b) => b[1] - a[1])[0]!;
  const mixed =
    versions.size > 1 ? ` (hosts of different versions never share a gang: ${versionSummary(versions)})` : '';
  return `needs ${block.ranks} ${kind}cards on one host; the largest host, ${host}, has ${n}${mixed}`;
}

function perHost(cards: CardSlot[]): string {
  return [...byKey(cards, (c) => c.host).entries()]
    .sort((a, b) => b[1].length - a[1].length || a[0].localeCompare(b[0]))
    .map(([h, cs]) => `${h}: ${cs.length}`)
    .join(', ');
}

function versionSummary(versions: Map<string, CardSlot[]>): string {
  return [...versions.entries()]
    .map(([v, cs]) => `${[...new Set(cs.map((c) => c.host))].join(',')} at ${v || 'an unknown version'}`)
    .join('; ');
}

export function summarizeCards(cards: CardSlot[]): string {
  const count = new Map<string, number>();
  for (const c of cards) count.set(`${c.backend}@${c.host}`, (count.get(`${c.backend}@${c.host}`) ?? 0) + 1);
  return [...count.entries()].map(([k, n]) => `${n} ${k}`).join(', ');
}

export function planGrants(input: GrantInput): GrantDecision {
  const pass = new GrantPass(input);
  for (const block of input.waiting) pass.decide(block);
  return pass.decision();
}

type HostsKey = ReadonlySet<string> | undefined;

/** One pass of planGrants: the free cards as grants take them, the reservation once made, and the memos that keep a saturated queue cheap. */
class GrantPass {
  private readonly alive: Set<string>;
  private free: CardSlot[];
  private readonly grants: Grant[] = [];
  private readonly why = new Map<string, string>();
  private readonly wantWhy: (key: string) => boolean;
  private reservation: { key: string; at: number; cards: Set<string> } | null = null;
  private readonly nevers = new Map<string, string | null>();
  /** the same for every block of one experiment (one hosts set per experiment and pass) */
  private readonly onHosts = new Map<ReadonlySet<string>, Map<string, string | null>>();
  // Free cards only shrink during a pass and the reservation, once made, stays: a shape (on one
  // set of allowed hosts) that did not fit once does not fit any later block either. Without
  // this every one of 1 500 waiting blocks grouped and sorted the free cards up to three times
  // per pass; with it a saturated queue costs a map lookup per block. One memo for the free
  // cards, one for the free cards outside the reservation; keyed by allowed hosts, then shape.
  private readonly noFitFree = new Map<HostsKey, Set<string>>();
  private readonly noFitOutside = new Map<HostsKey, Set<string>>();

  /** some card has an end: which cards a block may use then depends on how long it runs */
  private readonly bounded: boolean;

  constructor(private readonly input: GrantInput) {
    this.alive = new Set(input.cards.map((c) => c.id));
    this.free = input.cards.filter((c) => !input.busy.has(c.id));
    this.wantWhy = input.wantWhy ?? (() => true);
    this.bounded = input.cards.some((c) => c.until !== undefined);
  }

  decision(): GrantDecision {
    return { grants: this.grants, why: this.why };
  }

  /** Grants `block` its gang now, reserves cards for it (the oldest that does not fit), backfills it, or says why it waits. */
  decide(block: WaitingBlock): void {
    const { now } = this.input;
    // the same answer for every block of one shape: once per shape, not once per waiting block;
    // with cards that end, blocks of one shape but another length fit differently
    const shape = (block.shape ?? shapeKey(block)) + (this.bounded ? `/${block.expectedMs}` : '');
    let never = this.nevers.get(shape);
    if (never === undefined) {
      never = neverFits(block, this.input.cards) ?? this.endsTooSoon(block);
      this.nevers.set(shape, never);
    }
    if (never) {
      this.why.set(block.key, never);
      return;
    }
    const cards = this.lasting(block, this.input.cards);
    const allowed = block.hosts;
    if (allowed !== undefined && this.neverOn(allowed, shape, () => neverFits(block, within(allowed, cards)))) {
      this.why.set(block.key, block.hostsWhy ?? 'waiting for its builds');
      return;
    }
    if (!this.reservation) {
      const gang = this.fitsFree(block, shape);
      if (gang) {
        this.take(block, gang);
        return;
      }
      const r = reserve(
        block,
        this.lasting(block, within(allowed, this.free)),
        this.input.running,
        this.alive,
        within(allowed, cards),
        now,
      );
      this.reservation = r;
      this.why.set(block.key, r.reason);
      return;
    }
    this.backfill(block, shape, this.reservation);
  }

  /** Backfill: only cards the reservation does not need, or an end before it starts. With no free card left (most passes at scale, once their grants are made) nothing fits. */
  private backfill(
    block: WaitingBlock,
    shape: string,
    reservation: { key: string; at: number; cards: Set<string> },
  ): void {
    const allowed = block.hosts;
    let gang: CardSlot[] | null = null;
    if (this.free.length > 0 && !failed(this.noFitOutside, allowed, shape)) {
      const res = reservation.cards;
      gang = fitGang(
        block,
        this.lasting(block, within(allowed, this.free)).filter((c) => !res.has(c.id)),
      );
      if (!gang) fail(this.noFitOutside, allowed, shape);
    }
    if (!gang && this.input.now + block.expectedMs <= reservation.at) gang = this.fitsFree(block, shape);
    if (gang) {
      this.take(block, gang);
      return;
    }
    if (!this.wantWhy(block.key)) return;
    this.why.set(
      block.key,
      this.fitsFree(block, shape)
        ? `behind ${reservation.key} (FIFO: starting now would delay it; ${block.expectedKnown === false ? 'its duration unknown: no step time of its workload measured yet' : `expected ${Math.round(block.expectedMs / 1000)} s`})`
        : `waiting for ${block.ranks} free card(s) (behind ${reservation.key})`,
    );
  }

  /** The cards of `cs` that last until `block` is expected to end (all of them when no card has an end). */
  private lasting(block: WaitingBlock, cs: CardSlot[]): CardSlot[] {
    if (!this.bounded) return cs;
    const ends = this.input.now + block.expectedMs;
    return cs.filter((c) => c.until === undefined || c.until >= ends);
  }

  /** Why `block` fits the alive cards but none that last until it would end, or null. */
  private endsTooSoon(block: WaitingBlock): string | null {
    const { cards, now } = this.input;
    if (!this.bounded || !neverFits(block, this.lasting(block, cards))) return null;
    const ending = [
      ...byKey(
        cards.filter((c) => c.until !== undefined),
        (c) => c.host,
      ).entries(),
    ].map(
      ([host, cs]) => `${host} in ${Math.max(0, Math.floor((Math.min(...cs.map((c) => c.until!)) - now) / 1000))} s`,
    );
    return `expected to take ${Math.ceil(block.expectedMs / 1000)} s, longer than the allocations left to the cards it fits (no lease past an allocation's end: ${ending.join(', ')}); it waits for a worker whose allocation lasts long enough (orch slurm up --time)`;
  }

  private neverOn(hosts: ReadonlySet<string>, shape: string, f: () => string | null): string | null {
    let m = this.onHosts.get(hosts);
    if (!m) {
      m = new Map();
      this.onHosts.set(hosts, m);
    }
    if (!m.has(shape)) m.set(shape, f());
    return m.get(shape)!;
  }

  /** A gang of the free cards now (a failure memoised by hosts and shape). */
  private fitsFree(block: WaitingBlock, shape: string): CardSlot[] | null {
    if (this.free.length === 0 || failed(this.noFitFree, block.hosts, shape)) return null;
    const gang = fitGang(block, this.lasting(block, within(block.hosts, this.free)));
    if (!gang) fail(this.noFitFree, block.hosts, shape);
    return gang;
  }

  private take(block: WaitingBlock, gang: CardSlot[]): void {
    this.grants.push({ key: block.key, cards: gang });
    const taken = new Set(gang.map((c) => c.id));
    this.free = this.free.filter((c) => !taken.has(c.id));
  }
}

function failed(memo: Map<HostsKey, Set<string>>, hosts: HostsKey, shape: string): boolean {
  return memo.get(hosts)?.has(shape) === true;
}

function fail(memo: Map<HostsKey, Set<string>>, hosts: HostsKey, shape: string): void {
  let m = memo.get(hosts);
  if (!m) {
    m = new Set();
    memo.set(hosts, m);
  }
  m.add(shape);
}

function within(allowed: HostsKey, cs: CardSlot[]): CardSlot[] {
  return allowed === undefined ? cs : cs.filter((c) => allowed.has(c.host));
}

/** When the holder's cards are expected free, as a user reads it: a guess or a passed estimate is said to be one. */
function expectedFree(r: RunningBlock, at: number, now: number): string {
  if (r.known === false) return `held by ${r.key}, its end unknown (no step time of its workload measured yet)`;
  if (r.expectedEndMs <= now) return `held by ${r.key}, past its expected end`;
  return `expected in ~${Math.ceil((at - now) / 1000)} s (held by ${r.key})`;
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
  const pool = [...free];
  // Cards per host in the pool: a gang can fit only once some host (or, spread, all of them
  // together) has `ranks` of them, so fitGang runs only then. Trying every running attempt's end
  // in turn was most of a pass with 500 attempts running.
  const perHost = new Map<string, number>();
  for (const c of pool) perHost.set(c.host, (perHost.get(c.host) ?? 0) + 1);
  let most = Math.max(0, ...perHost.values());
  const ends = [...running].sort((a, b) => a.expectedEndMs - b.expectedEndMs);
  for (const r of ends) {
    for (const id of r.cards) {
      const c = alive.has(id) ? byId.get(id) : undefined;
      if (!c) continue;
      pool.push(c);
      const n = (perHost.get(c.host) ?? 0) + 1;
      perHost.set(c.host, n);
      most = Math.max(most, n);
    }
    if ((spreads(block) ? pool.length : most) < block.ranks) continue;
    const gang = fitGang(block, pool);
    if (gang) {
      const at = Math.max(now, r.expectedEndMs);
      return {
        key: block.key,
        at,
        cards: new Set(gang.map((c) => c.id)),
        reason: `waiting for ${block.ranks} free card(s); ${expectedFree(r, at, now)}`,
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
