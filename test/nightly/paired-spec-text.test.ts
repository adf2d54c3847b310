/**
 * A paired night rewrites its spec's builds (paired-night.ts): the text it registers must be
 * that rewritten spec, so results/<id>/spec.yaml and spec.hash describe one spec. Checked by
 * loading the registered text again: it must resolve to the same commits and the same hash.
 * Before, the night registered the file as written (refs `main`, `HEAD`) beside the hash of the
 * spec paired with the last good commit.
 */
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { pairSpec } from '../../orchestrator/nightly/paired-night.ts';
import { loadSpec, parseConfigText } from '../../orchestrator/spec/load-spec.ts';
import { plantedRepo, plantedSpec } from '../builds/planted-repo.ts';

const repo = plantedRepo();
after(() => rmSync(join(repo.dir, '..'), { recursive: true, force: true }));

test("a paired night's registered text loads to its spec and its hash", () => {
  repo.git('checkout', '-q', 'main');
  const lastGood = repo.git('rev-parse', 'branch');
  const tonight = repo.git('rev-parse', 'main');
  const file = join(repo.dir, 'perf.yaml');
  writeFileSync(
    file,
    `# tonight against the last good night\n${plantedSpec({
      name: 'perf',
      repo: repo.dir,
      builds: '  last_good: { ref: main }\n  tonight: { ref: HEAD }',
      arms: '  - { name: last_good, build: last_good }\n  - { name: tonight, build: tonight }',
    })}`,
  );
  const paired = pairSpec(loadSpec(file), { commit: lastGood, scheduledAt: 0 }, null);
  assert.equal(paired.loaded.spec.builds?.last_good?.commit, lastGood);
  const registered = (paired.loaded as { text?: string }).text;
  assert.ok(registered !== undefined, 'the paired spec carries the text it registers');
  const again = parseConfigText(file, registered, 'experiment');
  assert.equal(again.kind, 'experiment');
  assert.equal(
    again.kind === 'experiment' && again.hash,
    paired.loaded.hash,
    'the registered text hashes to the registered hash',
  );
  assert.deepEqual(
    again.kind === 'experiment' &&
      Object.fromEntries(Object.entries(again.spec.builds ?? {}).map(([n, b]) => [n, b.commit])),
    { last_good: lastGood, tonight },
  );
  assert.match(
    registered,
    /^# tonight against the last good night\n/,
    'the rest of the text is as written, comments too',
  );
});
