/**
 * YAML text → plain data, keeping the document so any dotted path maps back to its line.
 * Syntax errors (and duplicate keys, which YAML forbids) come back as issues with lines, and so
 * do the shapes no spec has and that would exhaust the reader: more than one document, nesting
 * deeper than `orch.spec_file.depth` (yaml's composer and every later walk recurse per level),
 * anchors whose aliases expand past `orch.spec_file.aliases` (a "billion laughs" file).
 *
 * Merge keys (`<<: *defaults`) are read as YAML 1.1 defines them: the shape that lets several arms
 * share one mapping, which CI files (GitLab, docker compose) taught users to write; the alias
 * limit bounds them as it bounds any alias, and the spec hash is of the merged data, so a merged
 * spec and the same spec written out hash alike. A tag other than the plain kinds a spec holds
 * (`!!binary`, `!!set`, `!!timestamp`, a custom `!tag`) is refused by name, with its line: yaml
 * would turn it into a Buffer, a Date or an ignored string that the schema could only call "a
 * mapping" or take silently.
 */
import {
  Composer,
  type CST,
  type Document,
  isMap,
  isPair,
  isScalar,
  isSeq,
  Lexer,
  LineCounter,
  type Node,
  Parser,
  visit,
} from 'yaml';
import type { SpecIssue } from './errors.ts';
import { LIMITS, LIMITS_FILE } from './limits.ts';

export type PathSegment = string | number;

export interface YamlSource {
  data: unknown;
  /** Syntax problems; when non-empty, `data` must not be used. */
  issues: SpecIssue[];
  /** The 1-based line of the deepest node on `path` (a key's own line for a mapping entry). */
  lineOf(path: readonly PathSegment[]): number | null;
}

const MAX_DEPTH = LIMITS.orch.spec_file.depth;
const MAX_ALIASES = LIMITS.orch.spec_file.aliases;

export function parseYamlSource(file: string, text: string): YamlSource {
  const lineCounter = new LineCounter();
  const line = (offset: number | undefined): number | null =>
    offset === undefined ? null : lineCounter.linePos(offset).line;
  const fail = (at: number | undefined, message: string, fix: string, path = ''): YamlSource => ({
    data: undefined,
    issues: [{ file, line: line(at), path, message, fix }],
    lineOf: () => null,
  });

  const nested = firstNestedOnOneLine(text, MAX_DEPTH);
  if (nested !== null) {
    const issue = {
      file,
      line: lineAt(text, nested),
      path: '',
      message: `nesting deeper than ${MAX_DEPTH} levels`,
      fix: `a spec is a few levels deep; flatten it (${LIMITS_FILE} orch.spec_file.depth)`,
    };
    return { data: undefined, issues: [issue], lineOf: () => null };
  }
  const tokens = Array.from(new Parser(lineCounter.addNewLine).parse(text));
  const deep = firstTooDeep(tokens, MAX_DEPTH);
  if (deep !== null) {
    return fail(
      deep,
      `nesting deeper than ${MAX_DEPTH} levels`,
      `a spec is a few levels deep; flatten it (${LIMITS_FILE} orch.spec_file.depth)`,
    );
  }
  const docs: Document.Parsed[] = Array.from(
    new Composer({ uniqueKeys: true, merge: true }).compose(tokens, true, text.length),
  );
  if (docs.length > 1) {
    return fail(
      docs[1]?.range[0],
      `${docs.length} YAML documents (separated by "---"); a config file holds exactly one`,
      'keep one document per file: remove the extra "---" and what follows, or split the file',
    );
  }
  const doc = docs[0] as Document.Parsed;
  const issues: SpecIssue[] = doc.errors.map((e) => ({
    file,
    line: line(e.pos[0]),
    path: '',
    message: `YAML syntax error: ${firstLine(e.message)}`,
    fix: 'fix the YAML syntax (indentation, quotes, ":" after keys)',
  }));
  const tagged = issues.length === 0 ? firstForeignTag(doc) : null;
  if (tagged !== null) {
    return fail(
      tagged.offset,
      `${tagged.written}: a YAML tag orch does not read (a spec holds only text, numbers, booleans, lists and mappings)`,
      `remove ${tagged.written} and write the value as plain text or a number`,
      formatPath(tagged.path),
    );
  }
  let data: unknown;
  if (issues.length === 0) {
    try {
      data = doc.toJS({ maxAliasCount: MAX_ALIASES });
    } catch (err) {
      // yaml throws a ReferenceError when aliases would expand past maxAliasCount.
      if (!(err instanceof ReferenceError)) throw err;
      return fail(
        undefined,
        `anchors and aliases (&a, *a) expand to more than ${MAX_ALIASES} copies`,
        `write the values out, or use fewer aliases (${LIMITS_FILE} orch.spec_file.aliases)`,
      );
    }
    if (dataDepth(data) > MAX_DEPTH) {
      return fail(
        undefined,
        `nesting deeper than ${MAX_DEPTH} levels once aliases are expanded`,
        `use fewer nested aliases (${LIMITS_FILE} orch.spec_file.depth)`,
      );
    }
  }

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

  return { data: issues.length === 0 ? data : undefined, issues, lineOf };
}

/** The tags of the plain kinds: what a tag may name (`!!str 1` keeps a number as text). */
const PLAIN_TAGS = new Set(['str', 'int', 'float', 'bool', 'null', 'seq', 'map'].map((t) => `tag:yaml.org,2002:${t}`));

/** The first node with a tag outside PLAIN_TAGS, as it was written (`!!binary`, `!foo`), or null. */
function firstForeignTag(
  doc: Document.Parsed,
): { written: string; offset: number | undefined; path: PathSegment[] } | null {
  let found: { written: string; offset: number | undefined; path: PathSegment[] } | null = null;
  visit(doc, {
    Node(_, node, ancestors) {
      if (node.tag === undefined || PLAIN_TAGS.has(node.tag)) return undefined;
      const path: PathSegment[] = [];
      ancestors.forEach((a, i) => {
        if (isPair(a) && isScalar(a.key)) path.push(String(a.key.value));
        else if (isSeq(a)) path.push(a.items.indexOf((ancestors[i + 1] ?? node) as never));
      });
      found = { written: node.tag.replace(/^tag:yaml\.org,2002:/, '!!'), offset: node.range?.[0], path };
      return visit.BREAK;
    },
  });
  return found;
}

/** The 1-based line of a character offset (before the parser has counted any lines). */
function lineAt(text: string, offset: number): number {
  let line = 1;
  for (let i = text.indexOf('\n'); i >= 0 && i < offset; i = text.indexOf('\n', i + 1)) line++;
  return line;
}

/** The lexer's markers that stand for no source text (document start, flow end, scalar start). */
const MARKERS = new Set(['\x02', '\x18', '\x1f']);

/**
 * The offset where more than `max` collections are open on one line (flow brackets, plus the
 * block indicators "- ", "? ", ": " of that line), or null. yaml's parser slows down
 * quadratically with such nesting (a second for 20 000 "[" on a loaded machine), so the lexer's
 * token stream is read first and stopped at the first offending token: that costs the same
 * whatever the size of the file. Nesting built by indentation needs about depth² characters
 * (under 1 500 levels in a spec file), which the parser handles fast; firstTooDeep bounds it.
 */
function firstNestedOnOneLine(text: string, max: number): number | null {
  let offset = 0;
  let flow = 0;
  let block = 0;
  for (const token of new Lexer().lex(text)) {
    if (token === '[' || token === '{') flow++;
    else if (token === ']' || token === '}') flow = Math.max(0, flow - 1);
    else if (flow === 0 && (token === '-' || token === '?' || token === ':')) block++;
    else if (token.includes('\n')) block = 0;
    if (flow + block > max) return offset;
    if (!MARKERS.has(token)) offset += token.length;
  }
  return null;
}

/**
 * The offset of the first collection nested deeper than `max` in the parser's tokens, or null.
 * Iterative: the parser builds this tree without recursion, so it is safe to walk before the
 * composer (which recurses per level) ever sees it.
 */
function firstTooDeep(tokens: readonly CST.Token[], max: number): number | null {
  const stack: { token: CST.Token | null | undefined; depth: number }[] = tokens.map((token) => ({ token, depth: 0 }));
  while (stack.length > 0) {
    const { token, depth } = stack.pop() as { token: CST.Token | null | undefined; depth: number };
    if (token === null || token === undefined) continue;
    if (token.type === 'document') {
      stack.push({ token: token.value, depth });
    } else if (token.type === 'block-map' || token.type === 'block-seq' || token.type === 'flow-collection') {
      if (depth + 1 > max) return token.offset;
      for (const item of token.items) {
        stack.push(
          { token: 'key' in item ? item.key : undefined, depth: depth + 1 },
          { token: item.value, depth: depth + 1 },
        );
      }
    }
  }
  return null;
}

/** The nesting depth of plain data (aliases already expanded), without recursion. */
function dataDepth(data: unknown): number {
  let deepest = 0;
  const stack: { value: unknown; depth: number }[] = [{ value: data, depth: 0 }];
  while (stack.length > 0) {
    const { value, depth } = stack.pop() as { value: unknown; depth: number };
    if (typeof value !== 'object' || value === null) continue;
    deepest = Math.max(deepest, depth + 1);
    if (deepest > MAX_DEPTH) return deepest;
    for (const child of Object.values(value)) stack.push({ value: child, depth: depth + 1 });
  }
  return deepest;
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
