/**
 * Carry-over by preceding arm (orchestrator/stats/carry-over.ts), on seeded experiments ordered by
 * the real planner: a graph arm planted slower right after an eager arm (the H200's unsettled
 * launch state) is flagged and shown in the report; the same experiments without it are not.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { renderMarkdown } from '../../orchestrator/report/render-markdown.ts';
import { analyzeExperiment } from '../../orchestrator/stats/analyze.ts';
import { leaveOneOutProgram, plantRep, type SimParams, seeded, simulateExperiment, twoArms } from './simulate.ts';

const AFTER_EAGER = 1.2;

function graphAndEager(carry: boolean, rest: Partial<SimParams> = {}): SimParams {
  return {
    ...twoArms(1, { blocks: 6, reps: 3, sigma: 0.02 }),
    control: 'eager',
    arms: [
      { name: 'eager', mu: 40, toggles: {} },
      { name: 'graph', mu: 28, toggles: {} },
      { name: 'graph_pdl', mu: 27, toggles: {} },
    ],
    ...(carry ? { carry: [{ arm: 'graph', after: 'eager', log: Math.log(AFTER_EAGER) }] } : {}),
    ...rest,
  };
}

const analyze = (p: SimParams, seed: number) =>
  analyzeExperiment(simulateExperiment(p, seeded(seed), { min_effect: 0.01 }));

test('a graph arm planted slower after the eager arm is flagged, with its size, and the report says so unasked', () => {
  const a = analyze(graphAndEager(true), 41);
  const c = a.carry_over!;
  assert.equal(c.flagged, true, c.message);
  const flagged = c.cells.filter((x) => x.flagged);
  assert.deepEqual(
    flagged.map((x) => `${x.arm}<${x.after}`),
    ['graph<eager'],
  );
  // against graph after itself, which carries nothing: the planted factor, within 3 se of noise
  const cell = flagged[0]!;
  assert.ok(
    Math.abs(Math.log1p(cell.effect!) - Math.log(AFTER_EAGER)) < 3 * 0.02 * Math.sqrt(2 / cell.n),
    `effect ${cell.effect}`,
  );
  const md = renderMarkdown(a);
  assert.match(md, /## Carry-over \(arm × preceding arm\)\n\n\*\*carry-over flagged: graph after eager \+/);
  assert.match(
    md,
    /\| graph \| eager \| \d+ \| graph after itself \| \+\d+\.\d+ % \| \+\d+\.\d+ % \| [^|]+ \| \*\*yes\*\* \|/,
  );
});

test('without planted carry-over nothing is flagged (seeded runs, two and three arms, normal and heavy-tailed noise)', () => {
  const runs = 40;
  let flagged = 0;
  for (let r = 0; r < runs; r++) {
    const p = graphAndEager(false, r % 2 === 0 ? {} : { noise: 't3', arms: graphAndEager(false).arms.slice(0, 2) });
    if (analyze(p, 500 + r).carry_over!.flagged) flagged++;
  }
  // each run's cells are tested at alpha / cells: a flag in more than alpha of the runs is a broken test
  assert.ok(flagged / runs <= 0.05, `flagged in ${flagged} of ${runs} runs without carry-over`);
  const quiet = analyze(graphAndEager(false), 41);
  assert.equal(quiet.carry_over!.flagged, false, quiet.carry_over!.message);
  assert.match(renderMarkdown(quiet), /## Carry-over \(arm × preceding arm\)\n\nno large carry-over: largest /);
});

test('one slow rep is not a carry-over: the cell it lands in moves, its median rep does not', () => {
  const p = leaveOneOutProgram({ pdl: 4.6, kda: 2.7, proj: 1.2 }, true);
  const a = analyzeExperiment(
    plantRep(simulateExperiment(p, seeded(3), { min_effect: 0.01 }), { block: 1, arm: 'all_on', rep: 2 }, 1.3),
  );
  const hit = a.carry_over!.cells.filter((c) => c.arm === 'all_on' && c.effect! > 0.05);
  assert.ok(
    hit.length > 0 && hit.every((c) => c.p! < 0.05 / a.carry_over!.cells.length),
    `the slow rep's cell: ${JSON.stringify(hit)}`,
  );
  assert.equal(a.carry_over!.flagged, false, a.carry_over!.message);
});
