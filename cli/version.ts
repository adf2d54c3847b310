/**
 * `orch --version`: package.json's version and, in a git checkout, the commit it runs —
 * read from .git (HEAD, the ref it names, packed-refs) without spawning git, so it costs a few
 * file reads. `unknown` where there is no checkout or the files do not say.
 */
import { readFileSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { PackageJsonSchema } from '../jobs/package-json.ts';
import { parseStored } from '../jobs/parse-stored.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

export function orchVersion(root = ROOT): { version: string; commit: string } {
  const file = `${root}package.json`;
  const pkg = parseStored(PackageJsonSchema, readFileSync(file, 'utf8'), file);
  return { version: pkg.version, commit: gitCommit(root) ?? 'unknown' };
}

export function versionLine(): string {
  const v = orchVersion();
  return `orch ${v.version} (commit ${v.commit === 'unknown' ? v.commit : v.commit.slice(0, 12)})`;
}

const SHA = /^[0-9a-f]{40}(?:[0-9a-f]{24})?$/;

function gitCommit(root: string): string | null {
  try {
    const gitDir = gitDirOf(root);
    const head = readFileSync(`${gitDir}/HEAD`, 'utf8').trim();
    if (SHA.test(head)) return head; // detached
    const ref = /^ref: (refs\/\S+)$/.exec(head)?.[1];
    if (!ref) return null;
    // a linked worktree keeps HEAD in its own dir, refs in the common one
    const common = commonDirOf(gitDir);
    for (const dir of [gitDir, common]) {
      try {
        const sha = readFileSync(`${dir}/${ref}`, 'utf8').trim();
        if (SHA.test(sha)) return sha;
      } catch {
        // not a loose ref here
      }
    }
    const packed = readFileSync(`${common}/packed-refs`, 'utf8');
    for (const line of packed.split('\n')) {
      const [sha, name] = line.split(' ');
      if (name === ref && sha && SHA.test(sha)) return sha;
    }
    return null;
  } catch {
    return null;
  }
}

/** `.git` is a directory, or (worktree, submodule) a file `gitdir: PATH`. */
function gitDirOf(root: string): string {
  const dotGit = `${root}.git`;
  if (statSync(dotGit).isDirectory()) return dotGit;
  const target = /^gitdir: (.+)$/m.exec(readFileSync(dotGit, 'utf8'))?.[1]?.trim();
  if (!target) throw new Error('.git names no gitdir');
  return target.startsWith('/') ? target : `${root}${target}`;
}

function commonDirOf(gitDir: string): string {
  try {
    const rel = readFileSync(`${gitDir}/commondir`, 'utf8').trim();
    return rel.startsWith('/') ? rel : `${gitDir}/${rel}`;
  } catch {
    return gitDir;
  }
}
