/**
 * A `stopping: sequential` A/B spec whose workload is the resident fixture rank
 * (test/fixtures/ranks/orch-rank.mjs): the treated arm's toggles plant the effect (GRAPH: true is
 * twice as fast; GRAPH: false, STALE: true runs at the control's speed), min_effect sets how wide
 * "no change" is. Six blocks at the most, three looks.
 */
import { fileURLToPath } from 'node:url';

const FIXTURE = fileURLToPath(new URL('../fixtures/ranks/orch-rank.mjs', import.meta.url));

export function sequentialSpec(treatment: string, minEffect: number): string {
  return `name: seq
design: ab
workload:
  runtime: command
  run: { cmd: ${JSON.stringify(`${process.execPath} ${FIXTURE}`)}, mode: resident }
  toggles: { GRAPH: request, STALE: request }
  warmup: 1
  steps: 5
toggles: [GRAPH, STALE]
arms:
  - { name: eager, toggles: { GRAPH: false } }
  - { name: treated, toggles: ${treatment} }
reps: 2
gates: { identity: false }
stopping: { rule: sequential, max_blocks: 6, looks: 3 }
metric: { min_effect: ${minEffect} }
`;
}
