/**
 * The statistical checks of a timed run hold at their stated rates, not always: a 95 % CI misses
 * the truth in one run of twenty, an A/A reads a difference in one of twenty (alpha 0.05), and a
 * planted effect is found with the plan's power. Together they miss now and then by design, and
 * a CI run that fails on that says nothing. A run that misses is run once more, and its misses
 * are what the test asserts: a real fault (a bias, a wrong sign, a broken A/A) misses both.
 * `firstRun`: the first run, made already (its other checks are the caller's).
 */
export async function missedTwice<R>(run: () => Promise<R>, misses: (r: R) => string[], firstRun?: R): Promise<string[]> {
  const first = misses(firstRun ?? (await run()));
  if (first.length === 0) return first;
  console.log(`a statistical miss (${first.join('; ')}): run once more`);
  return misses(await run());
}
