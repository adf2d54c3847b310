/**
 * A spec of examples/torch-decode/decode.py as a resident rank (on this machine its pure-Python
 * path), for the tests that submit it: the workload and its two toggles written once, the design,
 * the eager and graph arms' GRAPH-on toggles and the rest (`tail`: reps, blocks, gates) per test.
 */
export function torchDecodeSpec(o: {
  name: string;
  design: 'ab' | 'probe';
  steps: number;
  graphToggles: string;
  tail: string;
}): string {
  return `name: ${o.name}
design: ${o.design}
workload:
  runtime: command
  run: { cmd: python3 examples/torch-decode/decode.py, mode: resident, hello_timeout_s: 60 }
  toggles: { GRAPH: request, STALE_INPUT: request }
  warmup: 2
  steps: ${o.steps}
toggles: [GRAPH, STALE_INPUT]
arms:
  - { name: eager, toggles: { GRAPH: false } }
  - { name: graph, toggles: ${o.graphToggles} }
${o.tail}`;
}
