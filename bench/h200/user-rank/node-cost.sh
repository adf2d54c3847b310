#!/usr/bin/env bash
# Issue 40's calibration question: what a graph adds per node beyond its kernels' traced busy time,
# on graphrt's chain (one tiny kernel, repeated: what orch's trace probe calibrates on today) and on
# graphrt's decode workload (distinct kernels doing a decode step's work, like a user's program).
# Per workload: NODE_COST_REPS graph reps (the floor: median step over nodes), one eager rep traced by
# orch's injection library (kernel_busy_ns: busy time per kernel), one eager rep untraced; prints
# floor, busy per kernel and floor − busy per node. On the H200 (2026-12-05, truth2.sh) three
# programs' graph steps paid 0.44-0.49 µs a node beyond their eager busy time, the chain 0.14 µs.
#   source .carry/env.sh && OUT=$OUT bash bench/h200/user-rank/node-cost.sh
set -uo pipefail
# Each rep's lines under WORK, packed into $OUT/node-cost.tgz (the device brings a few files back,
# not one per rep), the table beside it.
out=${OUT:-/tmp/orch-node-cost}
work=${WORK:-/tmp/node-cost}
mkdir -p "$out" "$work"
g=native/build/graphrt
lib=$PWD/native/build/liborch_inject.so
reps=${NODE_COST_REPS:-3}
run() { # name, env..., -- graphrt args...
  local name=$1; shift
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  env ${envs[@]+"${envs[@]}"} "$g" run --backend cuda "$@" --warmup 4 --steps 32 >"$work/$name.jsonl" 2>"$work/$name.err"
  echo "$name: exit $?"
}
for w in "chain --kernels 256" "decode --layers 24 --hidden 1024 --max-pos 128" "decode --layers 24 --hidden 256 --max-pos 128"; do
  set -- $w
  name=$1-$(echo "$w" | tr -dc '0-9' | cut -c1-12)
  for i in $(seq "$reps"); do run "$name-graph-$i" -- --workload $w --graph; done
  run "$name-eager-traced" CUDA_INJECTION64_PATH="$lib" ORCH_INJECT_TRACE=1 -- --workload $w
  run "$name-eager" -- --workload $w
done
node -e '
const fs = require("fs"), dir = process.argv[1];
const rep = (f) => { try { return fs.readFileSync(`${dir}/${f}.jsonl`, "utf8").trim().split("\n").map((l) => JSON.parse(l)).find((l) => l.type === "rep"); } catch { return undefined; } };
const med = (a) => { const s = [...a].sort((x, y) => x - y); return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2; };
const names = [...new Set(fs.readdirSync(dir).filter((f) => f.endsWith("-eager.jsonl")).map((f) => f.replace(/-eager\.jsonl$/, "")))];
console.log("| workload | nodes | graph step ms | floor µs/node | eager step ms | traced busy µs/kernel | floor − busy µs/node | traced busy ms/step |");
console.log("| --- | --- | --- | --- | --- | --- | --- | --- |");
for (const n of names) {
  const graphs = fs.readdirSync(dir).filter((f) => f.startsWith(`${n}-graph-`) && f.endsWith(".jsonl")).map((f) => rep(f.replace(/\.jsonl$/, ""))).filter(Boolean);
  const t = rep(`${n}-eager-traced`), e = rep(`${n}-eager`);
  if (graphs.length === 0) { console.log(`| ${n} | no graph rep |`); continue; }
  const nodes = graphs[0].nodes, step = med(graphs.map((r) => med(r.step_ms)));
  const floor = (step * 1e6) / nodes / 1000, busy = t?.kernel_busy_ns === undefined ? NaN : t.kernel_busy_ns / 1000;
  console.log(`| ${n} | ${nodes} | ${step.toFixed(4)} | ${floor.toFixed(3)} | ${e ? med(e.step_ms).toFixed(4) : "—"} | ${busy.toFixed(3)} | ${(floor - busy).toFixed(3)} | ${((busy * (t?.launches_per_step ?? nodes)) / 1000).toFixed(4)} |`);
}' "$work" | tee "$out/node-cost.md"
tar -C "$work" -czf "$out/node-cost.tgz" .
