import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { submitExperiment } from '../../orchestrator/experiment/submit.ts';
import { loadSpec } from '../../orchestrator/spec/load-spec.ts';

/**
 * Submits `count` copies of `yaml` through the production submit path, 100 at a time, with ids
 * `<name>-<n>` given, so a test can name them.
 */
export async function submitMany(
  redis: Redis,
  prefix: string,
  dir: string,
  name: string,
  yaml: string,
  count: number,
): Promise<void> {
  const file = join(dir, `${name}.yaml`);
  writeFileSync(file, yaml);
  const loaded = loadSpec(file);
  for (let i = 0; i < count; i += 100) {
    await Promise.all(
      Array.from({ length: Math.min(100, count - i) }, (_, k) =>
        submitExperiment({ redis, prefix, loaded, id: `${name}-${i + k}` }),
      ),
    );
  }
}
