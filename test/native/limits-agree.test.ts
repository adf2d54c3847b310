/**
 * graphrt and `orch validate` refuse exactly the same values: both read native/limits.json
 * (graphrt through the header CMake generates from it). For every bounded graphrt input, at its
 * limit graphrt passes the range check and one past it refuses with BAD_PARAM "out of range";
 * the schema accepts the limit and refuses one past it. To pass a range check without running a
 * workload at that size, each graphrt request also asks for more device memory than the cpu
 * backend allows, so an accepted request ends in the memory refusal instead of a run; that
 * refusal's byte count is compared with jobs/limits.ts's formula.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SpecError, type SpecIssue } from '../../jobs/errors.ts';
import { deviceBytes, LIMITS } from '../../jobs/limits.ts';
import { parseConfigText } from '../../orchestrator/spec/load-spec.ts';
import { only, runGraphrt, skipWithoutBinary as skip } from './graphrt.ts';

const params = LIMITS.graphrt.params;
/** A train workload beyond the cpu backend's device bytes, every param in range. */
const OVER_MEMORY = { workload: 'train', params: { params: params.params!.max, param_size: params.param_size!.max } };

/**
 * graphrt's verdict on a request with these flags added to OVER_MEMORY: `accepted` when the range
 * checks pass (the memory refusal, or a run where the flag itself shrank the workload), or the
 * refusal's message.
 */
function graphrtVerdict(flags: Record<string, number>): 'accepted' | string {
  const args = [
    'run',
    '--backend',
    'cpu',
    '--workload',
    OVER_MEMORY.workload,
    '--params',
    String(OVER_MEMORY.params.params),
    '--param-size',
    String(OVER_MEMORY.params.param_size),
  ];
  for (const [name, value] of Object.entries(flags)) args.push(`--${name.replaceAll('_', '-')}`, String(value));
  const r = runGraphrt(args);
  const err = r.lines.find((l) => l.type === 'error');
  if (err === undefined) return 'accepted';
  if (err.type !== 'error') throw new Error('unreachable');
  assert.equal(err.code, 'BAD_PARAM', JSON.stringify(err));
  return /device memory/.test(err.message) ? 'accepted' : err.message;
}

/** The issues `orch validate` finds in a native workload spec of this kind, params and fields. */
function schemaIssues(kind: string, workload: Record<string, unknown>, extra = ''): SpecIssue[] {
  const text = `name: limits\ndesign: ab\nworkload: ${JSON.stringify({ runtime: 'native', kind, backend: 'cuda', ...workload })}\ntoggles: [graph]\narms: [{ name: a, toggles: { graph: false } }, { name: b, toggles: { graph: true } }]\n${extra}`;
  try {
    parseConfigText('limits.yaml', text);
    return [];
  } catch (err) {
    if (!(err instanceof SpecError)) throw err;
    return err.issues;
  }
}

/** The workload kind whose params include `name`. */
const KIND_OF: Record<string, string> = {
  kernels: 'chain',
  layers: 'decode',
  kernels_per_layer: 'decode',
  hidden: 'decode',
  max_pos: 'decode',
  params: 'train',
  param_size: 'train',
};

describe('graphrt and the schema agree at every limit of native/limits.json', () => {
  for (const [name, range] of Object.entries(params)) {
    it(`param ${name}: ${range.min}..${range.max}`, { skip }, () => {
      for (const [value, inRange] of [
        [range.max, true],
        [range.max + 1, false],
        [range.min, true],
        [range.min - 1, false],
      ] as const) {
        const verdict = graphrtVerdict({ [name]: value });
        if (inRange) assert.equal(verdict, 'accepted', `graphrt refused ${name}=${value}`);
        else assert.match(verdict, /out of range/, `graphrt at ${name}=${value}`);
        const kind = KIND_OF[name];
        assert.ok(kind, `no workload kind for param ${name}: add it to KIND_OF`);
        const issues = schemaIssues(kind, { params: { [name]: value } }).filter(
          (i) => i.path === `workload.params.${name}`,
        );
        assert.equal(issues.length === 0, inRange, `schema at ${name}=${value}: ${JSON.stringify(issues)}`);
      }
    });
  }

  for (const field of ['steps', 'warmup'] as const) {
    const range = LIMITS.graphrt[field];
    it(`${field}: ${range.min}..${range.max}`, { skip }, () => {
      for (const [value, inRange] of [
        [range.max, true],
        [range.max + 1, false],
        [range.min, true],
        [range.min - 1, false],
      ] as const) {
        const verdict = graphrtVerdict({ [field]: value });
        assert.match(verdict, inRange ? /^accepted$/ : /out of range/, `graphrt at ${field}=${value}`);
        const issues = schemaIssues('chain', { [field]: value }).filter((i) => i.path === `workload.${field}`);
        assert.equal(issues.length === 0, inRange, `schema at ${field}=${value}: ${JSON.stringify(issues)}`);
      }
    });
  }

  it(`identity replays: graphrt's max ${LIMITS.graphrt.replays.max} is the schema's max`, { skip }, () => {
    const max = LIMITS.graphrt.replays.max;
    for (const [value, inRange] of [
      [max, true],
      [max + 1, false],
    ] as const) {
      const verdict = graphrtVerdict({ identity: value });
      assert.match(verdict, inRange ? /^accepted$/ : /out of range/, `graphrt at replays=${value}`);
      const issues = schemaIssues('chain', {}, `gates: { identity: { replays: ${value} } }\n`).filter(
        (i) => i.path === 'gates.identity.replays',
      );
      assert.equal(issues.length === 0, inRange, `schema at replays=${value}: ${JSON.stringify(issues)}`);
    }
  });

  it("ranks: graphrt's --world bound is blocks.ranks's", { skip }, () => {
    const max = LIMITS.graphrt.world.max;
    for (const [value, inRange] of [
      [max, true],
      [max + 1, false],
    ] as const) {
      // A rendezvous path that cannot be bound (and writes nothing): past the flag checks, it fails at once.
      const r = runGraphrt([
        'run',
        '--backend',
        'cpu',
        '--world',
        String(value),
        '--rank',
        '0',
        '--rendezvous',
        '/nonexistent/orch-limits/rv.sock',
        '--rendezvous-timeout-ms',
        '1',
      ]);
      const err = only(r.lines, 'error');
      assert.equal(/--world is at most/.test(err.message), !inRange, `--world ${value}: ${err.message}`);
      const issues = schemaIssues('chain', {}, `blocks: { ranks: ${value} }\n`).filter(
        (i) => i.path === 'blocks.ranks',
      );
      assert.equal(issues.length === 0, inRange, `schema at ranks=${value}: ${JSON.stringify(issues)}`);
    }
  });

  it('device bytes: graphrt reports the bytes the formula computes, and both refuse above the cpu bound', {
    skip,
  }, () => {
    const cases: { workload: string; params: Record<string, number> }[] = [
      OVER_MEMORY,
      { workload: 'decode', params: { layers: 256, kernels_per_layer: 12, hidden: 1024, max_pos: 65536 } },
      { workload: 'decode', params: { layers: 16, kernels_per_layer: 12, hidden: 1024, max_pos: 65536 } },
      // The smallest train over the cpu bound: one param_size step below fits.
      {
        workload: 'train',
        params: { params: 512, param_size: Math.floor(LIMITS.graphrt.device_bytes.max.cpu / (28 * 512)) + 1 },
      },
    ];
    for (const c of cases) {
      const args = ['run', '--backend', 'cpu', '--workload', c.workload];
      for (const [k, v] of Object.entries(c.params)) args.push(`--${k.replaceAll('_', '-')}`, String(v));
      const err = only(runGraphrt(args).lines, 'error');
      const bytes = deviceBytes(c.workload, c.params);
      assert.ok(bytes > LIMITS.graphrt.device_bytes.max.cpu, `${JSON.stringify(c)} is not over the cpu bound`);
      assert.match(
        err.message,
        new RegExp(`need ${bytes} bytes`),
        `${JSON.stringify(c)}: formula ${bytes}, graphrt: ${err.message}`,
      );
      const issues = schemaIssues(c.workload, { backend: 'cpu', params: c.params }).filter(
        (i) => i.path === 'workload.params',
      );
      assert.equal(issues.length, 1, `schema: ${JSON.stringify(issues)}`);
      assert.match(issues[0]!.message, new RegExp(`needs ${bytes} bytes`));
    }
    const fits = { params: 512, param_size: Math.floor(LIMITS.graphrt.device_bytes.max.cpu / (28 * 512)) };
    assert.ok(deviceBytes('train', fits) <= LIMITS.graphrt.device_bytes.max.cpu);
    assert.deepEqual(
      schemaIssues('train', { backend: 'cpu', params: fits }).filter((i) => i.path === 'workload.params'),
      [],
    );
  });
});
