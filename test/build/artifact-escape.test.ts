/**
 * build.artifacts are confined to the build directory: `../../..` (or an absolute path) would
 * make the cache copy a directory outside the build into a path outside the cache. Refused at
 * validate by the schema; the build cache refuses it again (worker/builds/build-cache.ts).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { artifactEscape } from '../../jobs/artifact-path.ts';
import { WorkloadSchema } from '../../jobs/spec.ts';

const workload = (artifacts: string[]) => ({
  runtime: 'command',
  build: { cmd: 'make', artifacts, dir: '/tmp' },
  run: { cmd: './a' },
  toggles: { FAST: { env: 'FAST', on: '1', off: '0' } },
  metric_source: { format: 'regex', pattern: 'x=(?<value>[0-9.]+)', value_group: 'value' },
  warmup: 1,
  steps: 2,
});

test('artifacts outside the build directory are refused at validate; inside ones pass', () => {
  for (const bad of ['../../..', '..', 'out/../../x', '/etc', '.']) {
    const r = WorkloadSchema.safeParse(workload(['out/ok', bad]));
    assert.equal(r.success, false, `${bad} accepted`);
    assert.match(
      JSON.stringify(r.error!.issues),
      /leaves the build directory|is absolute|the build directory itself/,
      bad,
    );
    assert.ok(
      r.error!.issues.some((i) => i.path.join('.') === 'build.artifacts.1'),
      JSON.stringify(r.error!.issues),
    );
  }
  for (const good of ['out/speedy', 'a/../b', 'lib/', './bin/x']) {
    assert.equal(artifactEscape(good), null, good);
    assert.equal(WorkloadSchema.safeParse(workload([good])).success, true, good);
  }
});
