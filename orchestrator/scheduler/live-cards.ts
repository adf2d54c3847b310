/**
 * The grant pass's view of the live cards, read again at most every CARDS_TTL_MS and in the
 * background (the pass goes on with the last list): they change when a host registers or stops
 * heartbeating, and reading and validating every card on every pass cost a round trip and a
 * tenth of the scheduler's CPU. A card of a host that just died may be granted meanwhile, as
 * within its alive key's TTL before; the attempt is lost and tried again.
 */
import type { Card } from '../../jobs/card.ts';
import type { CardRegistry } from '../../store/card-registry.ts';
import { type CardSlot, cardSlot } from './grant-planner.ts';

/** How long a pass uses the live cards read before. */
const CARDS_TTL_MS = 500;

export class LiveCards {
  private live: { at: number; cards: Promise<Card[]> } | null = null;
  private readonly slotsOf = new WeakMap<Card[], CardSlot[]>();

  /** `changed`: cards came or went since the last list (a pass on them now, not at the next event or tick). */
  constructor(
    private readonly registry: CardRegistry,
    private readonly changed: () => void,
  ) {}

  async current(): Promise<Card[]> {
    const now = Date.now();
    if (!this.live || now - this.live.at > CARDS_TTL_MS) {
      const refresh = { at: now, cards: this.registry.liveCards() };
      const prior = this.live;
      this.live = refresh;
      refresh.cards.catch(() => {
        if (this.live === refresh) this.live = prior;
      });
      // the first read of a term is waited for; later ones serve the next pass
      if (prior) {
        const ids = (cs: Card[]) => cs.map((c) => c.id).join(',');
        void Promise.all([prior.cards, refresh.cards]).then(
          ([a, b]) => ids(a) !== ids(b) && this.changed(),
          () => undefined,
        );
        return prior.cards.catch(() => refresh.cards);
      }
    }
    return this.live.cards;
  }

  /** The planner's view of the cards: one copy per list read, not one per pass. */
  slots(cards: Card[]): CardSlot[] {
    let slots = this.slotsOf.get(cards);
    if (!slots) {
      slots = cards.map(cardSlot);
      this.slotsOf.set(cards, slots);
    }
    return slots;
  }

  /** The term ended: its next pass reads the cards first. */
  forget(): void {
    this.live = null;
  }
}
