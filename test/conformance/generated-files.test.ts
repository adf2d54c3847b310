/**
 * Every file generated from the rank protocol's description (jobs/rank-protocol-render.ts) is
 * committed as the description renders it now, byte for byte: a change to the description without
 * `npm run gen:protocol` fails here, naming the file. And the facts it states are not written by
 * hand a second time in the libraries or native/.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  GENERATED_PATHS,
  renderNativeHeader,
  renderProtocolJson,
  renderPython,
  withCppSection,
} from '../../jobs/rank-protocol-render.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8');

test('the generated protocol files are up to date (npm run gen:protocol)', () => {
  const wanted: Array<[string, string]> = [
    [GENERATED_PATHS.json, renderProtocolJson()],
    [GENERATED_PATHS.python, renderPython()],
    [GENERATED_PATHS.cpp, withCppSection(read(GENERATED_PATHS.cpp))],
    [GENERATED_PATHS.native, renderNativeHeader()],
  ];
  const stale = wanted.filter(([path, text]) => read(path) !== text).map(([path]) => path);
  assert.deepEqual(stale, [], `stale: ${stale.join(', ')}; run npm run gen:protocol`);
});

test('the line limit, the protocol name and the injection ABI are stated only in the generated parts', () => {
  const py = ['protocol.py', 'channel.py', 'device_counters.py', 'device_trace.py', 'exchange.py']
    .map((f) => read(`ranklib/python/orch_rank/${f}`))
    .join('\n');
  assert.doesNotMatch(py, /1 << 20|1048576|"orch-rank"|^ABI = \d/m, 'orch_rank.py restates a protocol constant');
  const cpp = read(GENERATED_PATHS.cpp).split('// END GENERATED PROTOCOL CONSTANTS')[1] ?? '';
  assert.doesNotMatch(
    cpp,
    /1024 \* 1024|1048576|kInjectAbi = \d/,
    'orch_rank.h restates a protocol constant outside its generated section',
  );
  assert.doesNotMatch(read('native/src/request.cpp'), /"split_combine",/, "graphrt's toggle list is written by hand");
  assert.doesNotMatch(
    read('native/inject/orch_inject.h'),
    /#define ORCH_INJECT_ABI \d/,
    'the injection ABI is written by hand',
  );
});
