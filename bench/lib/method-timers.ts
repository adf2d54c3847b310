/**
 * Wall time and calls of async methods, by wrapping them on their prototypes: where a grant pass
 * spends its time (BENCH_PROFILE=1 in bench/scheduler-scale.ts) without touching the code measured.
 * Wall time of overlapping calls adds up: read it as "time awaited", next to the call count.
 */
export interface MethodTime {
  name: string;
  calls: number;
  ms: number;
}

export class MethodTimers {
  private readonly times = new Map<string, MethodTime>();

  wrap(name: string, proto: object, methods: string[]): void {
    const p = proto as Record<string, (...a: unknown[]) => Promise<unknown>>;
    for (const m of methods) {
      const orig = p[m];
      if (typeof orig !== 'function') throw new Error(`${name} has no method ${m}`);
      const t: MethodTime = { name: `${name}.${m}`, calls: 0, ms: 0 };
      this.times.set(t.name, t);
      p[m] = async function (this: unknown, ...args: unknown[]) {
        const t0 = performance.now();
        try {
          return await orig.apply(this, args);
        } finally {
          t.calls += 1;
          t.ms += performance.now() - t0;
        }
      };
    }
  }

  table(): MethodTime[] {
    return [...this.times.values()].filter((t) => t.calls > 0).sort((a, b) => b.ms - a.ms);
  }
}
