/**
 * orch_rank.py's capture audit (ranklib/python/orch_rank/graphs.py), on its host emulation of a
 * CUDA graph: a body that meets three refused operations on two lines (one of them in a loop) and
 * calls a nested graph fails its capture at the first, and the audit that runs the body once more
 * lists the other line once, with its own line number, runs the nested graph eagerly (no capture,
 * no replay), and leaves the library ready for the next capture. The torch hook is the same `blocked` call on a GPU
 * (bench/h200/user-rank/audit-blockers.py).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const RANKLIB = join(fileURLToPath(new URL('../..', import.meta.url)), 'ranklib/python');

// written to a file: the audit names the program's lines by file, and python -c has none
const PROGRAM = `
import json, os, sys, tempfile
sys.path.insert(0, ${JSON.stringify(RANKLIB)})
from orch_rank import graphs
from orch_rank.errors import CaptureFailed, user_frame
graphs.use_backend("cpu")
state = {"n": 0}

def inner():
    state["n"] += 1

def body():
    graphs.blocked("host copy")  # FIRST
    for _ in range(3):
        graphs.blocked("host sync")  # SECOND
    graphs.graph("inner", inner)

try:
    graphs.graph("outer", body)
    print(json.dumps({"captured": True}))
except CaptureFailed as e:
    print(json.dumps({"first": user_frame(e)["line"], "others": e.others, "counts": graphs.counts()}))
graphs.graph("after", inner)
print(json.dumps({"counts": graphs.counts()}))
`;

test('the audit lists each other blocked line once, at its line, and captures nothing', () => {
  const dir = mkdtempSync(join(tmpdir(), 'orch-audit-'));
  const file = join(dir, 'audit.py');
  writeFileSync(file, PROGRAM);
  const lineOf = (mark: string) => PROGRAM.split('\n').findIndex((l) => l.includes(`# ${mark}`)) + 1;
  const r = spawnSync('python3', [file], { encoding: 'utf8', env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' } });
  rmSync(dir, { recursive: true, force: true });
  assert.equal(r.status, 0, r.stderr);
  const [failed, after] = r.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  assert.equal(failed.first, lineOf('FIRST'), r.stdout);
  assert.deepEqual(failed.others, [{ message: 'host sync', frame: { file, line: lineOf('SECOND') } }]);
  // the outer capture's two eager warm-ups captured the nested graph once and replayed it twice;
  // the audit ran it eagerly: neither a capture nor a replay more
  assert.deepEqual(failed.counts, [1, 2], 'the audit captured or replayed nothing');
  assert.deepEqual(after.counts, [2, 3], 'the next graph captures and replays as ever');
});
