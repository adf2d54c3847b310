#!/usr/bin/env bash
# Issue 27's device call: a user's own programs through `orch submit` on the embedded default
# (node and redis-server from the device kit's .carry/), per rep (before) and resident (after),
# each beside the same program timed by itself outside orch, and the planted stale input on the
# card; then bench/h200/user-rank/table.ts prints the table last. Logs and results directories
# go to $OUT/user-rank.tgz, the table to $OUT/table.md.
#   source .carry/env.sh && OUT=$OUT bash bench/h200/user-rank/run.sh
set -uo pipefail
out=${OUT:-/tmp/orch-user-rank}
work=${WORK:-/tmp/user-rank}
mkdir -p "$out" "$work"
sum=$work/summary.txt
here=bench/h200/user-rank
# the sources as they are (dist/ may be older than this tree); no bytecode left in the checkout
export ORCH_FROM_SOURCE=1 ORCH_LOG=warn PYTHONDONTWRITEBYTECODE=1
export ORCH_PARAMS='{"layers":24,"hidden":1024,"max_pos":128}'
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader | tee "$work/card.txt"
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }

alone() { # name, timeout, command...: the program timed by itself, its JSON line kept
  local name=$1 limit=$2 a=$(date +%s%N); shift 2
  timeout "$limit" "$@" >"$work/$name.json" 2>"$work/$name.err"
  echo "$name (alone): exit $? in $(ms $a) ms: $(tail -1 "$work/$name.json")" | tee -a "$sum"
}
run() { # name, spec, timeout: one orch submit, its results directory under $work/$name
  local a=$(date +%s%N)
  timeout "$3" node bin/orch.mjs submit "$2" --results "$work/$1" >"$work/$1.log" 2>&1
  echo "$1: exit $? in $(ms $a) ms" | tee -a "$sum"
}
dir() { ls -d "$work/$1"/*/ 2>/dev/null | head -1; }

( mkdir -p build && nvcc -O2 -std=c++17 -arch=sm_90 -I ranklib/cpp examples/cuda-decode/decode.cu -o build/cuda-decode ) >"$work/nvcc.log" 2>&1 ||
  { echo "nvcc failed"; tail -20 "$work/nvcc.log"; }
alone torch-alone 240 python3 examples/torch-decode/decode.py --standalone --steps 128 --warmup 8 --reps 10
alone cuda-alone 120 build/cuda-decode --standalone --steps 128 --warmup 8 --reps 10
run torch-resident $here/torch-resident.yaml 300
run torch-stale $here/torch-stale.yaml 120
run cuda-resident $here/cuda-resident.yaml 180
run cuda-stale $here/cuda-stale.yaml 120
[ "${PER_REP:-1}" = 0 ] || run torch-per-rep $here/torch-per-rep.yaml 240
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw,clocks_throttle_reasons.active --format=csv,noheader >>"$work/card.txt" 2>&1

args=()
for n in torch-per-rep torch-resident torch-stale; do d=$(dir $n); [ -n "$d" ] && args+=("$n=$d:$work/torch-alone.json"); done
for n in cuda-resident cuda-stale; do d=$(dir $n); [ -n "$d" ] && args+=("$n=$d:$work/cuda-alone.json#speedup_graph_pdl"); done
node --import tsx $here/table.ts "${args[@]}" >"$work/table.md" 2>&1
for n in torch-per-rep torch-resident cuda-resident; do
  d=$(dir $n); [ -n "$d" ] && { echo "== $n: card time"; sed -n '/^## Card time/,$p' "$d/report.md" | sed -n '5,12p'; } >>"$work/card-time.txt"
done
tar -C "$work" -czf "$out/user-rank.tgz" . 2>/dev/null
cp "$work/table.md" "$out/table.md"
{ cat "$work/card.txt"; cat "$sum"; cat "$work/card-time.txt" 2>/dev/null; echo; cat "$work/table.md"; } | tee "$out/summary.txt"
