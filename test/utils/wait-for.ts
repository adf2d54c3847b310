/**
 * Waiting on a condition with an explicit timeout (never a bare sleep as synchronization).
 */
export async function waitFor<T>(
  what: string,
  probe: () => T | Promise<T>,
  opts: { timeoutMs: number; intervalMs?: number },
): Promise<NonNullable<T>> {
  const start = Date.now();
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined && v !== null && v !== false) return v as NonNullable<T>;
    } catch (err) {
      last = err;
    }
    if (Date.now() - start > opts.timeoutMs) {
      throw new Error(`timed out after ${opts.timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    }
    await new Promise((r) => setTimeout(r, opts.intervalMs ?? 20));
  }
}
