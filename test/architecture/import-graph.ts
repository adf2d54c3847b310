/**
 * The import graph of the repository's TypeScript, read from the files as text: every relative
 * `import … from`, `export … from` and `import()` of each production file, resolved to the file
 * it names. The boundaries test checks docs/ARCHITECTURE.md's arrows against it.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';

export const ROOT = normalize(join(import.meta.dirname, '..', '..'));
export const PRODUCTION = ['jobs', 'store', 'history', 'orchestrator', 'worker', 'cli'] as const;

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return name === 'node_modules' ? [] : tsFiles(p);
    return name.endsWith('.ts') && !name.endsWith('.d.ts') ? [p] : [];
  });
}

const SPECIFIER =
  /(?:^|\n)\s*(?:import|export)\b[^'"`;]*?\bfrom\s*['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/g;

/** file (relative to the root) → the repository files it imports (relative to the root). */
export function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const top of PRODUCTION) {
    for (const file of tsFiles(join(ROOT, top))) {
      const text = readFileSync(file, 'utf8');
      const targets: string[] = [];
      for (const m of text.matchAll(SPECIFIER)) {
        const spec = m[1] ?? m[2];
        if (!spec?.startsWith('.')) continue;
        targets.push(relative(ROOT, normalize(join(dirname(file), spec))));
      }
      graph.set(relative(ROOT, file), targets);
    }
  }
  return graph;
}

/** The folder a file counts under: its top folder, or `orchestrator/<room>` with depth 2. */
export function folderOf(file: string, depth: 1 | 2): string {
  const parts = file.split('/');
  return parts.slice(0, parts[0] === 'orchestrator' && depth === 2 && parts.length > 2 ? 2 : 1).join('/');
}

/** Folder-level edges (from → to), without self-edges. */
export function folderEdges(graph: Map<string, string[]>, depth: 1 | 2, within?: string): Map<string, Set<string>> {
  const edges = new Map<string, Set<string>>();
  for (const [file, targets] of graph) {
    if (within && !file.startsWith(`${within}/`)) continue;
    const from = folderOf(file, depth);
    for (const t of targets) {
      if (within && !t.startsWith(`${within}/`)) continue;
      const to = folderOf(t, depth);
      if (to === from) continue;
      if (!edges.has(from)) edges.set(from, new Set());
      edges.get(from)!.add(to);
    }
  }
  return edges;
}

/** Every cycle's members (strongly connected components of more than one node), Tarjan's algorithm. */
export function cycles(edges: Map<string, Set<string>>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const out: string[][] = [];
  let next = 0;
  const nodes = new Set([...edges.keys(), ...[...edges.values()].flatMap((s) => [...s])]);
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    on.add(v);
    for (const w of edges.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const scc: string[] = [];
      for (let w = stack.pop()!; ; w = stack.pop()!) {
        on.delete(w);
        scc.push(w);
        if (w === v) break;
      }
      if (scc.length > 1) out.push(scc.sort());
    }
  };
  for (const v of nodes) if (!index.has(v)) visit(v);
  return out;
}
