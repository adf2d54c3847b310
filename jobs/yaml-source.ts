/**
 * YAML text → plain data, keeping the document so any dotted path maps back to its line.
 * Syntax errors (and duplicate keys, which YAML forbids) come back as issues with lines.
 */
import { isMap, isPair, isScalar, isSeq, LineCounter, parseDocument, type Node } from 'yaml';
import type { SpecIssue } from './errors.ts';

export type PathSegment = string | number;

export interface YamlSource {
  data: unknown;
  /** Syntax problems; when non-empty, `data` must not be used. */
  issues: SpecIssue[];
  /** The 1-based line of the deepest node on `path` (a key's own line for a mapping entry). */
  lineOf(path: readonly PathSegment[]): number | null;
}

export function parseYamlSource(file: string, text: string): YamlSource {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: true, uniqueKeys: true });
  const issues: SpecIssue[] = doc.errors.map((e) => ({
    file,
    line: e.linePos?.[0].line ?? null,
    path: '',
    message: `YAML syntax error: ${firstLine(e.message)}`,
    fix: 'fix the YAML syntax (indentation, quotes, ":" after keys)',
  }));
  const line = (offset: number | undefined): number | null =>
    offset === undefined ? null : lineCounter.linePos(offset).line;

  function lineOf(path: readonly PathSegment[]): number | null {
    let node: unknown = doc.contents;
    let best: number | null = line((node as Node | null)?.range?.[0]);
    for (const seg of path) {
      if (isMap(node)) {
        const pair = node.items.find((p) => isPair(p) && isScalar(p.key) && String(p.key.value) === String(seg));
        if (!pair) return best;
        best = line((pair.key as Node).range?.[0]) ?? best;
        node = pair.value;
      } else if (isSeq(node) && typeof seg === 'number') {
        const item = node.items[seg] as Node | undefined;
        if (!item) return best;
        best = line(item.range?.[0]) ?? best;
        node = item;
      } else {
        return best;
      }
    }
    return best;
  }

  return { data: issues.length === 0 ? doc.toJS() : undefined, issues, lineOf };
}

/** The message without yaml's " at line L, column C:" suffix and source excerpt (the line is ours). */
function firstLine(s: string): string {
  return (s.split('\n')[0] ?? s).replace(/ at line \d+, column \d+:?$/, '');
}

/** `toggles[2]`, `workload.params.hidden`: the path as a user reads it. */
export function formatPath(path: readonly PathSegment[]): string {
  let out = '';
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else out += out === '' ? seg : `.${seg}`;
  }
  return out;
}
