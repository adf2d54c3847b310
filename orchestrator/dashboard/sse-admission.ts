/**
 * How many live feeds (SSE connections) the dashboard holds: at most `perClient` per client
 * address and `total` in all; one beyond is answered 503 with Retry-After at once, before it costs
 * a socket's lifetime, a render or a Redis read. Every connection held is bounded in what it costs
 * (live-hub.ts), so these two numbers bound the dashboard's memory and work however many clients
 * try: it shares its process with the scheduler under `orch serve --http`.
 */
export interface SseLimits {
  /** connections held per client IP address */
  perClient: number;
  /** connections held in all */
  total: number;
}

export const DEFAULT_SSE_LIMITS: SseLimits = { perClient: 8, total: 256 };
/** Seconds a refused client is told to wait before trying again. */
export const SSE_RETRY_AFTER_S = 10;

export type Admission = { ok: true; release: () => void } | { ok: false; why: string };

export class SseAdmission {
  private held = 0;
  private readonly perIp = new Map<string, number>();

  constructor(readonly limits: SseLimits) {
    for (const [k, v] of Object.entries(limits)) {
      if (!Number.isSafeInteger(v) || v < 1) throw new Error(`SSE limit ${k} is ${v}: it must be a positive integer`);
    }
  }

  get total(): number {
    return this.held;
  }

  admit(ip: string): Admission {
    const mine = this.perIp.get(ip) ?? 0;
    if (mine >= this.limits.perClient)
      return {
        ok: false,
        why: `this client (${ip}) holds ${mine} live feeds already, the most one client may (${this.limits.perClient})`,
      };
    if (this.held >= this.limits.total)
      return {
        ok: false,
        why: `the dashboard holds ${this.held} live feeds already, the most it serves (${this.limits.total})`,
      };
    this.held++;
    this.perIp.set(ip, mine + 1);
    let released = false;
    return {
      ok: true,
      release: () => {
        if (released) return;
        released = true;
        this.held--;
        const left = (this.perIp.get(ip) ?? 1) - 1;
        if (left <= 0) this.perIp.delete(ip);
        else this.perIp.set(ip, left);
      },
    };
  }
}
