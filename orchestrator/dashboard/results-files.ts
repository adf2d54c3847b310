/**
 * `/results/:id/*`: the files of results/<id>/ served read-only. Only plain files under that
 * directory, reached without following any symbolic link: the experiment id must be a name (no
 * separators), results/<id> itself must be a real directory (a link to /etc is refused), every
 * component of the path below it is lstat'ed (a link anywhere is refused), and the file is opened
 * with O_NOFOLLOW and checked to be the one inspected. Only the results root itself may be a link
 * (the user's choice of where results live). Nothing but GET is routed. spec.yaml is served with
 * its env values masked (redact-secrets.ts).
 */
import {
  closeSync,
  constants,
  createReadStream,
  fstatSync,
  lstatSync,
  openSync,
  readdirSync,
  readFileSync,
  realpathSync,
  type Stats,
} from 'node:fs';
import { extname, join, resolve } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { NAME_PATTERN } from '../../jobs/name-patterns.ts';
import type { DashboardContext } from './dashboard-context.ts';
import { redactSpecYaml } from './redact-secrets.ts';

const TYPES: Record<string, string> = {
  '.json': 'application/json; charset=utf-8',
  '.jsonl': 'text/plain; charset=utf-8',
  '.md': 'text/plain; charset=utf-8',
  '.csv': 'text/csv; charset=utf-8',
  '.yaml': 'text/plain; charset=utf-8',
  '.hash': 'text/plain; charset=utf-8',
  '.svg': 'image/svg+xml',
};
/** Deeper than any results directory orch writes. */
const MAX_COMPONENTS = 16;
/** The file served through redactSpecYaml (read whole: orch's limits keep a spec small). */
const SPEC_FILE = 'spec.yaml';

function lstatOrNull(path: string): Stats | null {
  try {
    return lstatSync(path);
  } catch {
    return null;
  }
}

/** The experiment's results directory (a real directory, not a link), or null when there is none. */
export function resultsDir(ctx: DashboardContext, id: string): string | null {
  if (!NAME_PATTERN.test(id) || id === '.' || id === '..') return null;
  let root: string;
  try {
    root = realpathSync(resolve(ctx.resultsRoot));
  } catch {
    return null;
  }
  const dir = join(root, id);
  return lstatOrNull(dir)?.isDirectory() ? dir : null;
}

/** Relative paths of every plain file in the experiment's results directory (links not followed). */
export function listResultFiles(ctx: DashboardContext, id: string): string[] {
  const dir = resultsDir(ctx, id);
  if (dir === null) return [];
  const out: string[] = [];
  const walk = (rel: string[]) => {
    if (rel.length >= MAX_COMPONENTS) return;
    for (const e of readdirSync(join(dir, ...rel), { withFileTypes: true })) {
      if (e.isDirectory()) walk([...rel, e.name]);
      else if (e.isFile()) out.push([...rel, e.name].join('/'));
    }
  };
  walk([]);
  return out.sort();
}

export interface OpenedResultFile {
  fd: number;
  name: string;
}

/**
 * Opens `file` (a path relative to results/<id>/) when every component of it is a real directory
 * and its last a plain file, none a link; null otherwise. The caller closes the descriptor.
 */
export function openResultFile(ctx: DashboardContext, id: string, file: string): OpenedResultFile | null {
  const dir = resultsDir(ctx, id);
  const parts = file.split('/');
  if (
    dir === null ||
    file.includes('\0') ||
    parts.length > MAX_COMPONENTS ||
    parts.some((p) => p === '' || p === '.' || p === '..')
  )
    return null;
  let at = dir;
  let st: Stats | null = null;
  for (const [i, part] of parts.entries()) {
    at = join(at, part);
    st = lstatOrNull(at);
    const last = i === parts.length - 1;
    if (st === null || (last ? !st.isFile() : !st.isDirectory())) return null;
  }
  let fd: number;
  try {
    fd = openSync(at, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch {
    return null;
  }
  // the file opened is the one inspected (not swapped for another between the two)
  const opened = fstatSync(fd);
  if (!opened.isFile() || opened.ino !== st!.ino || opened.dev !== st!.dev) {
    closeSync(fd);
    return null;
  }
  return { fd, name: parts[parts.length - 1]! };
}

export function registerResultFiles(app: FastifyInstance, ctx: DashboardContext): void {
  app.get<{ Params: { id: string; '*': string } }>('/results/:id/*', (req, reply) => {
    const file = openResultFile(ctx, req.params.id, req.params['*']);
    if (file === null) {
      return reply
        .code(404)
        .type('text/plain')
        .send(
          `No file "${req.params['*']}" in the results of "${req.params.id}" (only plain files inside results/${req.params.id}/ are served, never through a symbolic link).\n`,
        );
    }
    reply
      .type(TYPES[extname(file.name)] ?? 'application/octet-stream')
      .header('x-content-type-options', 'nosniff')
      // an SVG opened on its own runs no script
      .header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'");
    if (file.name === SPEC_FILE) {
      try {
        return reply.send(redactSpecYaml(readFileSync(file.fd, 'utf8')));
      } finally {
        closeSync(file.fd);
      }
    }
    return reply.send(createReadStream('', { fd: file.fd }));
  });
}
