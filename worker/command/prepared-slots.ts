/**
 * The host phase's prepared slots (ranklib/PROTOCOL.md "Host phase"): two per card, its own and
 * a spare, each holding at most one resident rank process started before its lease —
 * ORCH_HOST_PHASE=1, CUDA_VISIBLE_DEVICES empty, no card lock — that has run (or is running) its
 * prepare() and waits for `open`. The own slot holds the next block's process, started by the
 * block on the card or by the build phase; the spare, the block after it's, started by the build
 * phase when an experiment has more blocks than cards (prepare-first.ts): its first block is the
 * spec's own size and may end before the second block's prepare() would, started only then. A
 * rank of the same experiment and build that gets a card of this worker adopts one (take: its own
 * card's own slot, then its spare, else another card's); anything else ends it: another key asked
 * for the card, the slot's keep time ran out, its experiment ended or is being cancelled (the
 * worker's heartbeat looks), the worker stops. A process that answered PREPARE_TOUCHED_CUDA leaves its reason
 * behind, so the rank that comes for it starts inside its lease and says why.
 *
 * Only the worker's own descriptor ever holds a card's lock (worker/rank-process.ts): a prepared
 * process never gets one, so it is never a second process on the card.
 */

import { messageOf } from '../../jobs/message-of.ts';
import type { OrchRankLine } from '../../jobs/orch-rank-protocol.ts';
import type { PreparedLine, RankProtocol } from '../rank-protocol.ts';
import type { RankOp } from '../rank-runner.ts';

/** How long a prepared rank waits for its block at least (the scheduler's next grant, a queue ahead). */
const PREPARED_KEEP_MS = 300_000;

/** How long a prepared rank of a workload whose hello may take `helloTimeoutMs` is kept for its block. */
export function preparedKeepMs(helloTimeoutMs: number): number {
  return Math.max(helloTimeoutMs, PREPARED_KEEP_MS);
}

/** What a prepared process's protocol reports to and how its requests are written, rebound to the rank that adopts it. */
export interface PreparedSink {
  onLine: (line: OrchRankLine, raw: string) => void;
  onStderr: (line: string) => void;
  request: (op: RankOp) => string;
  onExchange?: (line: OrchRankLine) => void;
}

/** A sink for a process nobody adopted yet: its lines go nowhere, and it is sent no request. */
export function unadoptedSink(): PreparedSink {
  return {
    onLine: () => {},
    onStderr: () => {},
    request: (op) => {
      throw new Error(`request ${op.id} to a prepared rank process no rank adopted`);
    },
  };
}

export interface PreparedRank {
  /** experiment and build (preparedKey): only a rank of the same key adopts the process */
  key: string;
  /** the experiment it was started for: ended with it (dropExperiment) */
  experiment: string;
  proto: RankProtocol<OrchRankLine>;
  /** where the process's lines go: nowhere until a rank adopts it */
  sink: PreparedSink;
}

/** What take() found: the process to adopt, the reason it cannot be (start in the lease), or nothing. */
export type Taken = { kind: 'adopt'; rank: PreparedRank } | { kind: 'fallback'; why: string } | { kind: 'none' };

interface Slot {
  rank: PreparedRank;
  /** set when the process ended before its open (PREPARE_TOUCHED_CUDA, a crash in prepare()) */
  why: string | null;
  /** ends the process at `until` unless taken; none while a block of its key runs on the card (keepWhile) */
  timer: NodeJS.Timeout | null;
  until: number | null;
}

/** Which of a card's two slots: its own (the next block's process) or the spare (the block after it's). */
export type SlotKind = 'own' | 'spare';

/** The map key of a card's slot; a card id never holds # (jobs/name-patterns.ts CARD_PATTERN). */
function slotId(cardId: string, kind: SlotKind): string {
  return kind === 'own' ? cardId : `${cardId}#spare`;
}

/** The card's two slots, in the order a rank of the card takes from them. */
function cardSlots(cardId: string): [string, string] {
  return [slotId(cardId, 'own'), slotId(cardId, 'spare')];
}

export class PreparedSlots {
  /** by slotId */
  private readonly slots = new Map<string, Slot>();

  /** Puts `rank` in `cardId`'s slot of `kind`, ending whatever was there; it is ended after `keepMs` unless taken. */
  put(cardId: string, rank: PreparedRank, keepMs: number, kind: SlotKind = 'own'): void {
    const id = slotId(cardId, kind);
    this.dropSlot(id);
    const slot: Slot = { rank, why: null, timer: null, until: null };
    this.arm(id, slot, keepMs);
    this.slots.set(id, slot);
    rank.proto.prepared.catch((err: unknown) => {
      slot.why = messageOf(err);
    });
    void rank.proto.exited.then((e) => {
      if (slot.why === null) slot.why = e.lastError ?? `exited before its open (code ${e.code}, signal ${e.signal})`;
    });
  }

  /**
   * The prepared process of `key` for the rank that got `cardId`: the card's own slot's, then its
   * spare's, else one waiting in another card's slot of this worker (it sees no device before its
   * open, so any card will do: the build phase prepares the first blocks' ranks before the
   * scheduler picks their cards). A process of another key in either of the card's slots is ended.
   */
  take(cardId: string, key: string): Taken {
    const mine = cardSlots(cardId);
    for (const id of mine) {
      const slot = this.slots.get(id);
      if (slot !== undefined && slot.rank.key !== key) this.dropIf(id, slot);
    }
    const from = [...mine, ...this.slots.keys()].find((id) => this.slots.get(id)?.rank.key === key);
    const slot = from === undefined ? undefined : this.slots.get(from);
    if (from === undefined || slot === undefined) return { kind: 'none' };
    this.slots.delete(from);
    this.disarm(slot);
    if (slot.why !== null || slot.rank.proto.state !== 'preparing') {
      this.end(slot);
      return { kind: 'fallback', why: slot.why ?? `the prepared process was ${slot.rank.proto.state}` };
    }
    return { kind: 'adopt', rank: slot.rank };
  }

  /**
   * The card's prepared process `proto`, if still in its slot, will not be adopted: it is ended and
   * `why` left behind, so the rank that comes for the card starts inside its lease and says why.
   */
  fail(cardId: string, proto: RankProtocol<OrchRankLine>, why: string): void {
    const slot = cardSlots(cardId)
      .map((id) => this.slots.get(id))
      .find((s) => s?.rank.proto === proto);
    if (slot === undefined) return;
    slot.why = why;
    this.end(slot);
  }

  /** Ends the card's prepared processes, both slots' (cancel, the card dropped). */
  drop(cardId: string): void {
    for (const id of cardSlots(cardId)) this.dropSlot(id);
  }

  /** The experiments whose processes wait in a slot. */
  experiments(): string[] {
    return [...new Set([...this.slots.values()].map((s) => s.rank.experiment))];
  }

  /** Ends every prepared process of `experiment` (it ended or is being cancelled: no block of it will come for them). */
  dropExperiment(experiment: string): number {
    let n = 0;
    for (const [id, slot] of [...this.slots])
      if (slot.rank.experiment === experiment) {
        this.dropIf(id, slot);
        n++;
      }
    return n;
  }

  /** Ends every prepared process (the worker stops). */
  dropAll(): void {
    for (const id of [...this.slots.keys()]) this.dropSlot(id);
  }

  /** The key of the process in the card's slot of `kind`, or null (for status and tests). */
  keyOf(cardId: string, kind: SlotKind = 'own'): string | null {
    return this.slots.get(slotId(cardId, kind))?.rank.key ?? null;
  }

  /** When the process in the card's slot of `kind` is ended unless taken (ms since the epoch); null while kept for a running block, or none there. */
  endsAt(cardId: string, kind: SlotKind = 'own'): number | null {
    return this.slots.get(slotId(cardId, kind))?.until ?? null;
  }

  /** Whether either of the card's slots holds a process of `key` (the next block's rank is on its way). */
  holds(cardId: string, key: string): boolean {
    return cardSlots(cardId).some((id) => this.slots.get(id)?.rank.key === key);
  }

  /**
   * The card's processes of `key` wait for their blocks as long as `running` (a block of the same
   * key on the card) runs, and `keepMs` from its end: a block may hold the card longer than any
   * fixed keep time (blocks sized so start-up is 5 % of one last ten minutes), and the next block
   * comes only after it.
   */
  keepWhile(cardId: string, key: string, keepMs: number, running: Promise<unknown>): void {
    for (const id of cardSlots(cardId)) {
      const slot = this.slots.get(id);
      if (slot?.rank.key !== key) continue;
      this.disarm(slot);
      void running.finally(() => {
        if (this.slots.get(id) === slot) this.arm(id, slot, keepMs);
      });
    }
  }

  private arm(id: string, slot: Slot, keepMs: number): void {
    this.disarm(slot);
    slot.timer = setTimeout(() => this.dropIf(id, slot), keepMs);
    slot.timer.unref();
    slot.until = Date.now() + keepMs;
  }

  private disarm(slot: Slot): void {
    if (slot.timer !== null) clearTimeout(slot.timer);
    slot.timer = null;
    slot.until = null;
  }

  private dropSlot(id: string): void {
    const slot = this.slots.get(id);
    if (slot !== undefined) this.dropIf(id, slot);
  }

  private dropIf(id: string, slot: Slot): void {
    if (this.slots.get(id) !== slot) return;
    this.slots.delete(id);
    this.disarm(slot);
    this.end(slot);
  }

  private end(slot: Slot): void {
    // the group's rest dies with it (spawnRank's endGroup runs at its exit)
    slot.rank.proto.kill();
  }
}

/**
 * The process's `prepared` line, or why there is none: it ended before (PREPARE_TOUCHED_CUDA, a
 * crash), or its prepare() ran past `helloMs` (workload.run.hello_timeout_s bounds prepare() as it
 * bounds a start inside the lease), and it is then ended: never waited on without a deadline, as a
 * rank that waits holds its card.
 */
export async function preparedWithin(
  proto: RankProtocol<OrchRankLine>,
  helloMs: number,
): Promise<PreparedLine | Error> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<Error>((res) => {
    timer = setTimeout(() => {
      proto.kill();
      res(new Error(`prepare() did not end within workload.run.hello_timeout_s (${helloMs / 1000} s)`));
    }, helloMs);
  });
  try {
    return await Promise.race([proto.prepared.catch((err: unknown) => new Error(messageOf(err))), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** The slot key: one experiment's build (the card is named only at `open`). */
export function preparedKey(experiment: string, artifactDir: string | null): string {
  return JSON.stringify([experiment, artifactDir]);
}
