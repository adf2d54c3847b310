/**
 * A spec of test/fixtures/ranks/startup-rank.py as a resident rank: a program whose prepare() and
 * setup() sleep (a slow start: weights, a model build) and whose reps are short, for the tests of
 * card time's start-up split and of auto block sizing. `tail` holds reps and blocks.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PROGRAM = join(ROOT, 'test/fixtures/ranks/startup-rank.py');

export function slowStartSpec(
  name: string,
  o: { prepareS: number; setupS: number; stepMs?: number; helloTimeoutS?: number; tail: string },
): string {
  return `name: ${name}
design: ab
workload:
  runtime: command
  run:
    cmd: python3 ${PROGRAM}
    mode: resident
    hello_timeout_s: ${o.helloTimeoutS ?? 60}
    env: { PYTHONPATH: ${join(ROOT, 'ranklib/python')}, PYTHONDONTWRITEBYTECODE: '1', PREPARE_S: '${o.prepareS}', SETUP_S: '${o.setupS}', STEP_MS: '${o.stepMs ?? 0}' }
  toggles: { GRAPH: request }
  warmup: 1
  steps: 2
toggles: [GRAPH]
arms:
  - { name: eager, toggles: { GRAPH: false } }
  - { name: graph, toggles: { GRAPH: true } }
gates: { identity: { toggle: GRAPH, replays: 3 } }
${o.tail}`;
}
