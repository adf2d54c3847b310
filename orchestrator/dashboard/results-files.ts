/**
 * `/results/:id/*`: the files of results/<id>/ served read-only. Only plain files directly or
 * deeper under that directory: the experiment id must be a name (no separators), the resolved
 * real path must stay inside it (no `..`, no symlink out), and nothing but GET is routed.
 */
import { createReadStream, existsSync, readdirSync, realpathSync, statSync } from 'node:fs';
import { extname, join, relative, resolve, sep } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { NAME_PATTERN } from '../../jobs/name-patterns.ts';
import type { DashboardContext } from './dashboard-context.ts';

const TYPES: Record<string, string> = {
  '.json': 'application/json; charset=utf-8',
  '.jsonl': 'text/plain; charset=utf-8',
  '.md': 'text/plain; charset=utf-8',
  '.csv': 'text/csv; charset=utf-8',
  '.yaml': 'text/plain; charset=utf-8',
  '.hash': 'text/plain; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/** The experiment's results directory, or null when there is none. */
export function resultsDir(ctx: DashboardContext, id: string): string | null {
  if (!NAME_PATTERN.test(id) || id === '.' || id === '..') return null;
  const dir = join(resolve(ctx.resultsRoot), id);
  return existsSync(dir) && statSync(dir).isDirectory() ? dir : null;
}

/** Relative paths of every plain file in the experiment's results directory. */
export function listResultFiles(ctx: DashboardContext, id: string): string[] {
  const dir = resultsDir(ctx, id);
  if (dir === null) return [];
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.isDirectory()) walk(join(d, e.name));
      else if (e.isFile()) out.push(relative(dir, join(d, e.name)));
    }
  };
  walk(dir);
  return out.sort();
}

/** The real path of `file` inside the results directory, or null when it would leave it. */
export function resolveResultFile(ctx: DashboardContext, id: string, file: string): string | null {
  const dir = resultsDir(ctx, id);
  if (dir === null || file.includes('\0')) return null;
  const wanted = resolve(dir, file);
  if (!wanted.startsWith(dir + sep) || !existsSync(wanted)) return null;
  const real = realpathSync(wanted);
  const realDir = realpathSync(dir);
  if (!real.startsWith(realDir + sep) || !statSync(real).isFile()) return null;
  return real;
}

export function registerResultFiles(app: FastifyInstance, ctx: DashboardContext): void {
  app.get<{ Params: { id: string; '*': string } }>('/results/:id/*', (req, reply) => {
    const file = resolveResultFile(ctx, req.params.id, req.params['*']);
    if (file === null) {
      return reply.code(404).type('text/plain').send(`No file "${req.params['*']}" in the results of "${req.params.id}" (only files inside results/${req.params.id}/ are served).\n`);
    }
    return reply
      .type(TYPES[extname(file)] ?? 'application/octet-stream')
      .header('x-content-type-options', 'nosniff')
      // an SVG opened on its own runs no script
      .header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'")
      .send(createReadStream(file));
  });
}
