// The failing tests of node's TAP, named again at the end of `npm test` (scripts/run-tests.mjs).

/**
 * The failing tests of a TAP text, each with the first lines of its YAML detail (its error, its
 * location). CI shows only the end of a run's output, and the inline files' TAP comes long before
 * that end: these lines are printed again last so that a failure is named where it is read.
 */
export function failuresOf(tap) {
  const lines = tap.split('\n');
  const out = [];
  lines.forEach((line, i) => {
    if (!/^\s*not ok \d+ - /.test(line)) return;
    out.push(line.trim());
    let messageLines = 0; // the lines of a multi-line `error: |-` that follow it
    for (const detail of lines.slice(i + 1, i + 40)) {
      if (/^\s*(\.\.\.|ok \d|not ok \d|# Subtest)/.test(detail)) break;
      if (/^\s*(location|error|expected|actual):/.test(detail)) {
        out.push(`    ${detail.trim()}`);
        messageLines = /^\s*error: [|>]-?$/.test(detail) ? 4 : 0;
      } else if (messageLines > 0 && !/^\s*[a-zA-Z]+:( |$)/.test(detail)) {
        out.push(`      ${detail.trim()}`);
        messageLines -= 1;
      } else messageLines = 0;
    }
  });
  return out;
}
