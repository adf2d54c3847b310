/**
 * What the run-as user (worker/run-as.ts) can reach, checked and granted. A path is reachable only when every
 * directory on it, from /, lets that user search it (x). Linux picks one class of bits: the
 * owner's when the user owns the directory, else the group's when its group is the user's
 * primary group (setpriv --clear-groups leaves no other), else the others'. ACLs are not
 * consulted: a directory opened to the user by an ACL alone counts as closed, which makes orch
 * refuse with a clear message rather than start programs that fail with EACCES.
 */
import { closeSync, constants, fchmodSync, fchownSync, fstatSync, openSync, type Stats, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { RunAs } from './run-as.ts';

/** A directory the run-as user cannot search, with what decides it. */
export interface SearchBlocker {
  dir: string;
  mode: number;
  uid: number;
  gid: number;
}

/** Whether `st`'s mode grants `runAs` the permission `perm` (4 read, 2 write, 1 search/execute). */
export function userMay(st: Stats, runAs: RunAs, perm: 4 | 2 | 1): boolean {
  const shift = st.uid === runAs.uid ? 6 : st.gid === runAs.gid ? 3 : 0;
  return (st.mode & (perm << shift)) !== 0;
}

function canSearch(st: Stats, runAs: RunAs): boolean {
  return userMay(st, runAs, 1);
}

/**
 * The first directory on `path` (itself included) that `runAs` cannot search; null when every
 * existing one lets it through (a missing tail is for its creator to open).
 */
export function searchBlocker(path: string, runAs: RunAs): SearchBlocker | null {
  let dir = '/';
  const parts = resolve(path).split('/').filter(Boolean);
  for (let i = 0; i <= parts.length; i++) {
    if (i > 0) dir = join(dir, parts[i - 1]!);
    let st: Stats;
    try {
      st = statSync(dir);
    } catch {
      return null;
    }
    if (!st.isDirectory()) return null;
    if (!canSearch(st, runAs)) return { dir, mode: st.mode & 0o7777, uid: st.uid, gid: st.gid };
  }
  return null;
}

/** `/root (mode 0700, owner uid 0, group gid 0)`: the blocker as a message names it. */
export function describeBlocker(b: SearchBlocker): string {
  return `${b.dir} (mode ${b.mode.toString(8).padStart(4, '0')}, owner uid ${b.uid}, group gid ${b.gid})`;
}

/**
 * Sets `path`'s mode, and its owner or group where given, through a descriptor opened without
 * following a symlink (fchown/fchmod): a link swapped in for a directory orch opens to the
 * run-as user fails here (ELOOP) instead of opening the link's target.
 */
export function setAccess(path: string, mode: number, owner: { uid?: number; gid?: number } = {}): void {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    const st = fstatSync(fd);
    if (owner.uid !== undefined || owner.gid !== undefined) fchownSync(fd, owner.uid ?? st.uid, owner.gid ?? st.gid);
    fchmodSync(fd, mode);
  } finally {
    closeSync(fd);
  }
}
