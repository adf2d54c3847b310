#!/usr/bin/env bash
# Issue 28's device call: orch's CUPTI injection library in users' programs on the H200, through
# `orch submit` (embedded default; node and redis-server from .carry/). Counting on and off for the
# CUDA example, alternated (on, off, on, off: drift on both sides), for the cost of counting; the
# PyTorch example in short reps with counts and clocks per rep (is the eager arm's spread the
# card's clock?); torch.profiler's launch count against the injection library's; the trace probe of
# the PyTorch example (busy share and the recoverable estimate per arm, the estimate set beside the
# graph speedup torch-short measured: within 20 %?). Tables last; everything under $OUT/truth.tgz.
#   source .carry/env.sh && OUT=$OUT bash bench/h200/user-rank/truth.sh
set -uo pipefail
out=${OUT:-/tmp/orch-truth}
work=${WORK:-/tmp/truth}
mkdir -p "$out" "$work"
here=bench/h200/user-rank
sum=$work/summary.txt
export ORCH_FROM_SOURCE=1 ORCH_LOG=warn PYTHONDONTWRITEBYTECODE=1
lib=$PWD/native/build/liborch_inject.so
ls -la "$lib" 2>&1 | tee "$sum"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader | tee -a "$sum"
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
run() { # name, spec, timeout
  local a=$(date +%s%N)
  timeout "$3" node bin/orch.mjs submit "$2" --results "$work/$1" >"$work/$1.log" 2>&1
  echo "$1: exit $? in $(ms $a) ms" | tee -a "$sum"
}
dir() { ls -d "$work/$1"/*/ 2>/dev/null | head -1; }
for i in 1 2; do
  run cuda-counted-$i $here/cuda-counted.yaml 120
  run cuda-uncounted-$i $here/cuda-uncounted.yaml 120
done
run torch-short $here/torch-short.yaml 240
run torch-trace $here/torch-trace.yaml 300
a=$(date +%s%N)
CUDA_INJECTION64_PATH=$lib ORCH_PARAMS='{"layers":24,"hidden":1024,"max_pos":128}' timeout 120 python3 $here/launches-vs-profiler.py --steps 16 --warmup 8 >"$work/profiler.json" 2>"$work/profiler.err"
echo "launches-vs-profiler: exit $? in $(ms $a) ms: $(tail -c 600 "$work/profiler.json")" | tee -a "$sum"
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw,clocks_throttle_reasons.active --format=csv,noheader >>"$sum" 2>&1

{
  echo "== counting on vs off (the CUDA example, arm medians in ms; ratio on/off)"
  node --input-type=module -e '
    import { readFileSync, readdirSync } from "node:fs";
    const arms = (n) => { const d = `${process.argv[1]}/${n}`; const r = JSON.parse(readFileSync(`${d}/${readdirSync(d)[0]}/report.json`, "utf8")); return Object.fromEntries(r.arms.map((a) => [a.arm, a.median])); };
    const on = [1, 2].map((i) => arms(`cuda-counted-${i}`)), off = [1, 2].map((i) => arms(`cuda-uncounted-${i}`));
    for (const arm of Object.keys(on[0])) {
      const m = (xs) => xs.reduce((s, x) => s + x[arm], 0) / xs.length;
      console.log(`| ${arm} | on ${on.map((x) => x[arm].toFixed(4)).join(", ")} | off ${off.map((x) => x[arm].toFixed(4)).join(", ")} | on/off ${(m(on) / m(off)).toFixed(4)} |`);
    }' "$work"
  args=()
  for n in cuda-counted-1 cuda-uncounted-1 cuda-counted-2 cuda-uncounted-2 torch-short; do d=$(dir $n); [ -n "$d" ] && args+=("$n=$d"); done
  echo; node --import tsx $here/table.ts "${args[@]}"
  echo; echo "== the trace probe of the PyTorch example against the graph speedup torch-short measured"
  t=$(dir torch-trace); s=$(dir torch-short)
  if [ -n "$t" ]; then sed -n '/^## Trace/,/^## Input/p' "$t/report.md" | head -40; fi
  if [ -n "$t" ] && [ -n "$s" ]; then
    node --input-type=module -e '
      import { readFileSync } from "node:fs";
      const trace = JSON.parse(readFileSync(`${process.argv[1]}/report.json`, "utf8")).trace;
      const arms = Object.fromEntries(JSON.parse(readFileSync(`${process.argv[2]}/report.json`, "utf8")).arms.map((a) => [a.arm, a.median]));
      const eager = trace.arms.find((a) => a.arm === "eager")?.summary;
      if (!eager) { console.log(`eager not traced: ${trace.arms[0]?.reason}`); process.exit(0); }
      const wonMs = arms.eager - arms.graph, estMs = eager.recoverable_ns / 1e6;
      console.log(`| floor ${(trace.floor.ns_per_node ?? NaN).toFixed(3)} ns/node | eager busy ${(eager.busy_share * 100).toFixed(1)} % | recoverable ${estMs.toFixed(4)} ms/step | capture won ${wonMs.toFixed(4)} ms/step (eager ${arms.eager.toFixed(4)}, graph ${arms.graph.toFixed(4)}) | estimate/won ${(estMs / wonMs).toFixed(3)} | within 20 %: ${Math.abs(estMs / wonMs - 1) <= 0.2} |`);
      const graph = trace.arms.find((a) => a.arm === "graph")?.summary;
      if (graph) console.log(`| graph arm: busy ${(graph.busy_share * 100).toFixed(1)} %, recoverable ${(graph.recoverable_ns / 1e6).toFixed(4)} ms/step (near zero expected) |`);' "$t" "$s"
  fi
  for n in cuda-counted-1 torch-short; do
    d=$(dir $n); [ -n "$d" ] || continue
    echo; echo "== $n: launches"; sed -n '/^## Launches/,/^## Card time/p' "$d/report.md" | sed -n '5,12p'
    echo; echo "== $n: clocks per rep"; node --import tsx $here/clocks.ts "$d"
  done
} >"$work/tables.md" 2>&1
tar -C "$work" -czf "$out/truth.tgz" . 2>/dev/null
{ cat "$sum"; echo; cat "$work/tables.md"; } | tee "$out/summary.txt"
