/**
 * The statistical checks of a timed run hold at their stated rates, not always: a 95 % CI misses
 * the truth in one run of twenty, an A/A reads a difference in one of twenty (alpha 0.05), and a
 * planted effect is found with the plan's power. Together they miss now and then by design, and
 * a CI run that fails on that says nothing. A run that misses is run once more, and its misses
 * are what the test asserts: a real fault (a bias, a wrong sign, a broken A/A) misses both.
 * `firstRun`: the first run, made already (its other checks are the caller's).
 */
export async function missedTwice<R>(
  run: () => Promise<R>,
  misses: (r: R) => string[],
  firstRun?: R,
): Promise<string[]> {
  return (await runDecided(run, misses, firstRun)).misses;
}

/** As missedTwice, with the run its misses come from, for the checks that read that run further. */
export async function runDecided<R>(
  run: () => Promise<R>,
  misses: (r: R) => string[],
  firstRun?: R,
): Promise<{ run: R; misses: string[] }> {
  const first = firstRun ?? (await run());
  const firstMisses = misses(first);
  if (firstMisses.length === 0) return { run: first, misses: firstMisses };
  console.log(`a statistical miss (${firstMisses.join('; ')}): run once more`);
  const second = await run();
  return { run: second, misses: misses(second) };
}
