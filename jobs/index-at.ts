/**
 * `xs[i]` read as what it must be: the element, or an error naming what was missing. Under
 * noUncheckedIndexedAccess an index reads as `T | undefined`; where the index comes from the same
 * record's own length (a gang's rank over its job's cards, a field over its split line) this says
 * so at run time instead of asserting it to the compiler (`xs[i] as T`), so a record that breaks
 * the rule fails here, by name, not later as an `undefined` card.
 */
export function indexAt<T>(xs: readonly T[], i: number, what: string): T {
  const x = xs[i];
  if (x === undefined) throw new Error(`no ${what} at index ${i} (${xs.length} in all)`);
  return x;
}
