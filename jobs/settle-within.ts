/**
 * Waits for `work` at most `ms`: true when it settled (either way) in time, false when the time
 * ran out. For shutdown steps that talk to a Redis that may be gone: ioredis queues a command
 * until it reconnects (maxRetriesPerRequest: null), so the step would otherwise never end, and
 * what it was for (a lease release, a queue's close) is covered by a TTL anyway.
 */
export async function settleWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
    timer.unref();
  });
  try {
    return await Promise.race([
      work.then(
        () => true,
        () => true,
      ),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}
