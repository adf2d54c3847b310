// The failing tests of node's TAP, named again at the end of `npm test` (scripts/run-tests.mjs).

/** The keys of a failure's YAML detail that say what failed; the rest (stack, duration) is noise here. */
const KEPT = new Set(['location', 'error', 'expected', 'actual']);
/** The lines kept of one key's value: a deep-equal's diff of a list of misses fits, a dump does not. */
const MAX_VALUE_LINES = 24;

/**
 * The failing tests of a TAP text, each with its location, its error and the expected and actual
 * values, whole up to MAX_VALUE_LINES lines each. CI shows only the end of a run's output, and the
 * inline files' TAP comes long before that end: these lines are printed again last so that a
 * failure is named, with what it read, where it is read. (Four lines of error were kept before:
 * CI's failure of a statistical test was cut at the `+ [` that began its list of misses.)
 */
export function failuresOf(tap) {
  const lines = tap.split('\n');
  const out = [];
  lines.forEach((line, i) => {
    if (!/^\s*not ok \d+ - /.test(line)) return;
    out.push(line.trim());
    out.push(...keptDetail(yamlBlockAfter(lines, i)));
  });
  return out;
}

/** The lines of the `---` ... `...` block that follows line `i`, or none. */
function yamlBlockAfter(lines, i) {
  if (!/^\s*---\s*$/.test(lines[i + 1] ?? '')) return [];
  const end = lines.findIndex((l, k) => k > i + 1 && /^\s*\.\.\.\s*$/.test(l));
  return lines.slice(i + 2, end === -1 ? lines.length : end);
}

/** The kept keys of a YAML detail block with their values' lines, re-indented under the test. */
function keptDetail(block) {
  const keyIndent = block.length > 0 ? block[0].search(/\S/) : 0;
  const out = [];
  let keeping = false;
  let valueLines = 0;
  for (const line of block) {
    const indent = line.search(/\S/);
    if (indent === keyIndent) {
      const key = /^\s*([A-Za-z_]+):/.exec(line)?.[1];
      keeping = key !== undefined && KEPT.has(key);
      valueLines = 0;
      if (keeping) out.push(`    ${line.trim()}`);
    } else if (keeping) {
      valueLines += 1;
      if (valueLines <= MAX_VALUE_LINES) out.push(`      ${line.slice(keyIndent + 2)}`);
      else if (valueLines === MAX_VALUE_LINES + 1) out.push('      (more lines in the TAP above)');
    }
  }
  return out;
}
