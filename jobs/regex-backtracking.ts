/**
 * Refusing a metric regex that can backtrack catastrophically: JavaScript's engine backtracks,
 * and a pattern such as `(\d+)+x` takes seconds on a line of 28 digits — on the worker's event
 * loop, where the lease renewals run, so the gang loses its lease. The classic cause is a
 * quantified group that itself contains a quantifier (star height above one): the engine then
 * tries every way of splitting the input between the inner and the outer repetition. Such a
 * pattern is refused at validate, with the rewrite that avoids it. Pure.
 */

/** A description of the first nested quantifier in `source`, or null when there is none. */
export function nestedQuantifier(source: string): string | null {
  // per open group: where it started and whether something inside it repeats
  const stack: { start: number; repeats: boolean }[] = [];
  let i = 0;
  const quantifierAt = (j: number): number => {
    const c = source[j];
    if (c === '*' || c === '+') return 1;
    if (c === '{') {
      const m = /^\{(\d+)(,(\d*))?\}/.exec(source.slice(j));
      if (m && m[2] !== undefined && (m[3] === '' || Number(m[3]) > 1)) return m[0].length;
    }
    return 0;
  };
  const markInner = () => {
    const top = stack[stack.length - 1];
    if (top) top.repeats = true;
  };
  while (i < source.length) {
    const c = source[i];
    if (c === '\\') {
      i += 2;
    } else if (c === '[') {
      // a class is one atom: skip to its closing bracket
      i++;
      if (source[i] === '^') i++;
      if (source[i] === ']') i++;
      while (i < source.length && source[i] !== ']') i += source[i] === '\\' ? 2 : 1;
      i++;
    } else if (c === '(') {
      stack.push({ start: i, repeats: false });
      i++;
      continue;
    } else if (c === ')') {
      const group = stack.pop();
      i++;
      const q = quantifierAt(i);
      if (group && q > 0) {
        if (group.repeats)
          return `the group ${source.slice(group.start, i)} repeats a repetition (${source.slice(group.start, i + q)})`;
        markInner();
      } else if (group?.repeats) {
        markInner();
      }
      continue;
    } else {
      i++;
    }
    if (quantifierAt(i) > 0) markInner();
  }
  return null;
}
