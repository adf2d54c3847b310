#!/usr/bin/env bash
# Issue 40's next device call: is the 0.44-0.49 µs a node that users' graphs pay beyond their eager
# busy time (graphrt's graphs: 0.09-0.15) in how the rank library builds, launches or times a graph,
# or in the kernels? graph-variants.cu times the CUDA example's step as a graph built each way the
# rank library and graphrt differ (capture mode, upload, launch stream, the staging copy), per step
# and back to back, and takes the eager step's traced busy time in a second process (tracing slows
# graphs, so the timed process runs without it). node-cost.sh then runs graphrt's own graphs in the
# same call for comparison.
#   source .carry/env.sh && OUT=$OUT bash bench/h200/user-rank/graph-variants.sh
set -uo pipefail
out=${OUT:-/tmp/orch-graph-variants}
work=${WORK:-/tmp/graph-variants}
mkdir -p "$out" "$work"
here=bench/h200/user-rank
lib=$PWD/native/build/liborch_inject.so
bin=$work/graph-variants
export ORCH_PARAMS='{"layers":24,"hidden":1024,"max_pos":128}'
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader 2>&1 | tee "$work/gpu.txt"
nvcc -O2 -std=c++17 -arch=sm_90 -I ranklib/cpp "$here/graph-variants.cu" native/src/kernel_trace.cpp -ldl -o "$bin" \
  >"$work/nvcc.log" 2>&1 || { tail -20 "$work/nvcc.log"; exit 1; }
"$bin" --steps 64 --warmup 8 --reps "${VARIANT_REPS:-7}" >"$work/variants.jsonl" 2>"$work/variants.err"
echo "graph-variants: exit $?"
CUDA_INJECTION64_PATH="$lib" ORCH_INJECT_TRACE=1 "$bin" --steps 64 --warmup 8 >"$work/traced.jsonl" 2>"$work/traced.err"
echo "graph-variants traced: exit $?"
node -e '
const fs = require("fs"), dir = process.argv[1];
const lines = (f) => { try { return fs.readFileSync(`${dir}/${f}`, "utf8").trim().split("\n").filter(Boolean).map((l) => JSON.parse(l)); } catch { return []; } };
const traced = lines("traced.jsonl")[0];
const busy = traced?.busy_ms_per_step;
console.log(`eager traced busy: ${busy === undefined ? "none (see traced.err)" : `${busy.toFixed(4)} ms a step, ${traced.kernels_per_step} kernels`}`);
console.log("| variant | nodes | per step ms | back to back ms | (per step − busy) ÷ nodes µs | (back to back − busy) ÷ nodes µs |");
console.log("| --- | --- | --- | --- | --- | --- |");
const per = (ms, n) => (busy === undefined ? "—" : (((ms - busy) * 1000) / n).toFixed(3));
for (const v of lines("variants.jsonl"))
  console.log(`| ${v.variant} | ${v.nodes} | ${v.per_step_ms.toFixed(4)} | ${v.back_to_back_ms.toFixed(4)} | ${per(v.per_step_ms, v.nodes)} | ${per(v.back_to_back_ms, v.nodes)} |`);
' "$work" | tee "$out/graph-variants.md"
echo
echo "graphrt's own graphs, the same call (node-cost.sh):"
OUT=$work/node-cost WORK=$work/node-cost-work NODE_COST_REPS=${NODE_COST_REPS:-2} bash "$here/node-cost.sh" | tail -5
tar -C "$work" -czf "$out/graph-variants.tgz" .
