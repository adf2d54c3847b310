/**
 * Equivalence, the reverse of a difference test: two arms count as the same only when the
 * whole CI of their paired relative change lies inside ±tolerance. A CI that merely includes 0
 * is no evidence of sameness — a noisy measurement includes 0 and a 5 % gap alike — so a wide
 * CI fails here where it would be "inconclusive" as a difference.
 */
export function withinTolerance(ci: readonly [number, number], tolerance: number): boolean {
  return ci[0] >= -tolerance && ci[1] <= tolerance;
}
