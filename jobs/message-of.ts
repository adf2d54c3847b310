/**
 * What a caught value says: an Error's message, anything else as text. A `catch` binds `unknown`
 * (a library may throw a string or an object), so `(err as Error).message` would print `undefined`
 * for those; this prints what was thrown.
 */
export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
