/**
 * Williams designs: orders of n treatments balanced for position and first-order carry-over.
 *
 * For even n one Williams square (n rows) has every treatment once in every position and
 * every ordered pair (i, j), i ≠ j, adjacent (i directly before j) exactly once within rows.
 * For odd n no such single square exists in general (not for 3, 5, 7), so the design is the
 * square plus its mirror (2n rows): every treatment twice in every position, every ordered
 * pair adjacent exactly twice. n = 2 gives the rows AB, BA (the ABBA design).
 */
export function williamsRows(n: number): number[][] {
  if (!Number.isInteger(n) || n < 1) throw new RangeError(`williamsRows: n must be a positive integer, got ${n}`);
  // First row 0, 1, n-1, 2, n-2, …: its consecutive differences 1, -2, 3, -4, … are distinct
  // mod n, so the cyclic shifts of it put every ordered pair side by side exactly once (even n).
  const base = [0, ...zigzagTail(n)];
  const square = Array.from({ length: n }, (_, r) => base.map((x) => (x + r) % n));
  return williamsRowCount(n) === n ? square : [...square, ...square.map((row) => [...row].reverse())];
}

/** Rows of the design for n treatments: n for even n, 2n (the square and its mirror) for odd n. */
export function williamsRowCount(n: number): number {
  return n % 2 === 0 ? n : 2 * n;
}

/** 1, n-1, 2, n-2, … (n-1 values), the tail of the first row after 0. */
function zigzagTail(n: number): number[] {
  const out: number[] = [];
  for (let lo = 1, hi = n - 1, k = 0; out.length < n - 1; k++) {
    out.push(k % 2 === 0 ? lo++ : hi--);
  }
  return out;
}
