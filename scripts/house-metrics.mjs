// The house in numbers, over orch's production TypeScript (cli/ jobs/ orchestrator/ store/
// worker/; not test/ or bench/): files, lines, lines over 200 characters, type assertions (`x as
// T`, `<T>x`; `as const` is no cast), non-null assertions (`x!`), and the branches on the command
// runtime (`=== 'command'` / `!== 'command'`). Comments and string literals are blanked first, so
// prose that says "as" counts nothing. Duplicate pairs are the library's `duplicates` (not a
// project dependency): run it beside this.
//
// Usage: node scripts/house-metrics.mjs [REV]   (REV: a commit, read through git; default the working tree)

import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

const ROOTS = ['cli', 'jobs', 'orchestrator', 'store', 'worker'];
const rev = process.argv[2];

function filesOf(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...filesOf(p));
    else if (name.endsWith('.ts')) out.push(p);
  }
  return out;
}

const sources = rev
  ? execFileSync('git', ['ls-tree', '-r', '--name-only', rev, '--', ...ROOTS], { encoding: 'utf8' })
      .split('\n')
      .filter((f) => f.endsWith('.ts'))
      .map((f) => [f, execFileSync('git', ['show', `${rev}:${f}`], { encoding: 'utf8', maxBuffer: 1 << 26 })])
  : ROOTS.flatMap(filesOf).map((f) => [f, readFileSync(f, 'utf8')]);

/** The text with comments and string literals blanked (template literals' ${...} kept as code). */
function codeOnly(text) {
  let out = '';
  let i = 0;
  const stack = []; // open template literals, each with its brace depth
  while (i < text.length) {
    const c = text[i];
    const n = text[i + 1];
    if (stack.length > 0 && stack[stack.length - 1].inText) {
      if (c === '\\') i += 2;
      else if (c === '`') {
        stack.pop();
        out += '``';
        i++;
      } else if (c === '$' && n === '{') {
        stack[stack.length - 1].inText = false;
        stack[stack.length - 1].depth = 0;
        out += '${';
        i += 2;
      } else i++;
      continue;
    }
    if (c === '/' && n === '/') {
      while (i < text.length && text[i] !== '\n') i++;
    } else if (c === '/' && n === '*') {
      const end = text.indexOf('*/', i + 2);
      const body = text.slice(i, end < 0 ? text.length : end + 2);
      out += body.replace(/[^\n]/g, ' ');
      i += body.length;
    } else if (c === "'" || c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== c && text[j] !== '\n') j += text[j] === '\\' ? 2 : 1;
      out += `${c}${c}`;
      i = j + 1;
    } else if (c === '`') {
      stack.push({ inText: true, depth: 0 });
      i++;
    } else {
      if (stack.length > 0) {
        const top = stack[stack.length - 1];
        if (c === '{') top.depth++;
        else if (c === '}') {
          if (top.depth === 0) {
            top.inText = true;
            i++;
            continue;
          }
          top.depth--;
        }
      }
      out += c;
      i++;
    }
  }
  return out;
}

let lines = 0;
let long = 0;
let casts = 0;
let nonNull = 0;
let commandBranches = 0;
for (const [, text] of sources) {
  const all = text.split('\n');
  lines += all.length - (text.endsWith('\n') ? 1 : 0);
  long += all.filter((l) => l.length > 200).length;
  const code = codeOnly(text);
  casts += (code.match(/[\w)\]'"`>]\s+as\s+(?!const\b)[\w{([]/g) ?? []).length;
  nonNull += (code.match(/[\w)\]]!(?=[.[(),;\s])(?!=)/g) ?? []).length;
  commandBranches += (text.match(/[!=]== 'command'/g) ?? []).length;
}
const rows = [
  ['files', sources.length],
  ['lines', lines],
  ['lines over 200 characters', long],
  ['type assertions (as T)', casts],
  ['non-null assertions (x!)', nonNull],
  ["branches on 'command'", commandBranches],
];
console.log(`house of ${rev ?? 'the working tree'} (${ROOTS.join(' ')}):`);
for (const [k, v] of rows) console.log(`  ${k.padEnd(28)} ${v}`);
