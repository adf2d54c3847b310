#!/usr/bin/env bash
# Issue 40's device call (device truth 2), one H200, within a time budget (TRUTH2_BUDGET_S, default
# 420 s: what is not reached by then is skipped and said so; the tables are printed whatever ran):
#  1. the trace probe through `orch submit` of three programs: the PyTorch example
#     (configs/torch-decode-trace.yaml), a transformers Llama with a StaticCache and random weights
#     (truth2/hf-trace.yaml, hf-llama-decode.py) and the CUDA example (truth2/cuda-trace.yaml);
#     each report's graph step estimate (edge idle + busy + kernels × floor) beside the graph step
#     measured untraced (the counting-off run's graph arm through orch, the CUDA example's at the
#     trace's sizes; the Llama's --standalone);
#  2. counting on and off through orch, the CUDA example (on, off, on, off) and the PyTorch example;
#  3. the injection library loaded and idle (ORCH_INJECT_ONLY=none) outside orch, per-step timed
#     graph and eager steps (the examples' --standalone), against no library, and against the idle
#     library that still subscribes (ORCH_INJECT_IDLE_SUBSCRIBE=1: the behaviour before, the
#     issue's +11-13 %), alternated;
#  2b. which callback costs a graph step: only the graph launch's callback, or every callback but
#     it, through orch (the CUDA example), and each kind alone outside orch (the PyTorch example);
#  4. torch.profiler's launch count against the injection library's, with the API names it saw
#     and the GPU kernels by the API that launched them.
# In that order of need, except that the profiler runs before the idle runs and the second
# counting pair, so a short budget loses repeats first.
# TRUTH2_PARTS (default "1 2 4 3 2b"): the parts to run; "m" alone runs only what 1 needs of 2 (the
# counting-off runs, whose graph arms are the measured graph steps).
# Everything under $OUT (truth2.tgz: results directories and logs); the tables last.
#   source .carry/env.sh && OUT=$OUT bash bench/h200/user-rank/truth2.sh
set -uo pipefail
out=${OUT:-/tmp/orch-truth2}
work=${WORK:-/tmp/truth2}
budget=${TRUTH2_BUDGET_S:-420}
mkdir -p "$out" "$work"
here=bench/h200/user-rank
sum=$work/summary.txt
export ORCH_FROM_SOURCE=1 ORCH_LOG=warn PYTHONDONTWRITEBYTECODE=1
lib=$PWD/native/build/liborch_inject.so
t0=$(date +%s)
left() { echo $(( budget - ($(date +%s) - t0) )); }
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
parts=" ${TRUTH2_PARTS:-1 2 4 3 2b} "
want() { [[ $parts == *" $1 "* ]]; }
: >"$sum"
ls -la "$lib" native/build/graphrt 2>&1 | tee -a "$sum"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader 2>&1 | tee -a "$sum"
python3 -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)' 2>&1 | tail -1 | tee -a "$sum"
# name, spec, timeout: one orch submit, unless the budget is spent
run() {
  if [ "$(left)" -lt 20 ]; then echo "$1: skipped (time budget spent)" | tee -a "$sum"; return; fi
  local a=$(date +%s%N) t=$3
  [ "$t" -gt "$(left)" ] && t=$(left)
  timeout "$t" node bin/orch.mjs submit "$2" --results "$work/$1" >"$work/$1.log" 2>&1
  echo "$1: exit $? in $(ms $a) ms" | tee -a "$sum"
}
# name, timeout, command...: one run outside orch, its last line kept
alone() {
  local name=$1 t=$2; shift 2
  if [ "$(left)" -lt 15 ]; then echo "$name: skipped (time budget spent)" | tee -a "$sum"; return; fi
  [ "$t" -gt "$(left)" ] && t=$(left)
  local a=$(date +%s%N)
  timeout "$t" "$@" >"$work/$name.json" 2>"$work/$name.err"
  echo "$name: exit $? in $(ms $a) ms: $(tail -1 "$work/$name.json" | cut -c1-300)" | tee -a "$sum"
}

# 1. the trace probes, and the untraced graph step of each program. The CUDA example's step
# attends over rows 0..pos of its cache, so its step grows with the position: its untraced graph
# step is measured at the trace's own warm-up and steps (cuda-twin: cuda-off.yaml at the trace
# spec's sizes; cuda-off's 8 + 64 steps reach further, and were 80 µs a step longer in busy time
# on the H100, bench/h200/runs/2026-12-05c/truth2-h100.txt). The PyTorch example and the Llama
# keep static shapes (masked caches), so their steps do not move with the position.
twin_spec() {
  local w s
  w=$(sed -n 's/^  warmup: //p' $here/truth2/cuda-trace.yaml) s=$(sed -n 's/^  steps: //p' $here/truth2/cuda-trace.yaml)
  sed -e 's/^name: cuda-count-off/name: cuda-twin/' -e "s/^  warmup: .*/  warmup: $w/" -e "s/^  steps: .*/  steps: $s/" \
    $here/truth2/cuda-off.yaml >"$work/cuda-twin.yaml"
}
if want 1; then
  run torch-trace configs/torch-decode-trace.yaml 150
  run cuda-trace $here/truth2/cuda-trace.yaml 90
  twin_spec
  run cuda-twin "$work/cuda-twin.yaml" 90
  run hf-trace $here/truth2/hf-trace.yaml 150
  alone hf-standalone 120 python3 $here/hf-llama-decode.py --standalone --steps 32 --warmup 4 --reps 3
fi
# 2. counting on and off through orch (the off runs' graph arms are the measured graph steps)
want 2 && run cuda-on-1 $here/truth2/cuda-on.yaml 90
{ want 2 || want m; } && run cuda-off-1 $here/truth2/cuda-off.yaml 90
want 2 && run torch-on-1 $here/truth2/torch-on.yaml 120
{ want 2 || want m; } && run torch-off-1 $here/truth2/torch-off.yaml 120
export ORCH_PARAMS='{"layers":24,"hidden":1024,"max_pos":128}'
# 4. torch.profiler against the injection library
want 4 && alone profiler 90 env CUDA_INJECTION64_PATH="$lib" python3 $here/launches-vs-profiler.py --steps 16 --warmup 8
# 3. the idle library outside orch: none, idle (nothing subscribed), idle-subscribed (as before),
# alternated; the second round after the second counting pair
{ want 3 || want 2b; } && [ "$(left)" -gt 30 ] && { nvcc -O2 -std=c++17 -arch=sm_90 -I ranklib/cpp examples/cuda-decode/decode.cu -o "$work/cuda-decode" >"$work/nvcc.log" 2>&1 || tail -5 "$work/nvcc.log" | tee -a "$sum"; }
idle_round() {
  alone idle-cuda-none-$1 30 "$work/cuda-decode" --standalone --steps 128 --warmup 8 --reps 10
  alone idle-cuda-idle-$1 30 env CUDA_INJECTION64_PATH="$lib" ORCH_INJECT_ONLY=none "$work/cuda-decode" --standalone --steps 128 --warmup 8 --reps 10
  alone idle-cuda-subscribed-$1 30 env CUDA_INJECTION64_PATH="$lib" ORCH_INJECT_ONLY=none ORCH_INJECT_IDLE_SUBSCRIBE=1 "$work/cuda-decode" --standalone --steps 128 --warmup 8 --reps 10
  alone idle-torch-none-$1 60 python3 examples/torch-decode/decode.py --standalone --steps 32 --warmup 4 --reps 4
  alone idle-torch-idle-$1 60 env CUDA_INJECTION64_PATH="$lib" ORCH_INJECT_ONLY=none python3 examples/torch-decode/decode.py --standalone --steps 32 --warmup 4 --reps 4
  alone idle-torch-subscribed-$1 60 env CUDA_INJECTION64_PATH="$lib" ORCH_INJECT_ONLY=none ORCH_INJECT_IDLE_SUBSCRIBE=1 python3 examples/torch-decode/decode.py --standalone --steps 32 --warmup 4 --reps 4
}
want 3 && idle_round 1
# 2b. which of the library's callbacks costs a graph step: only some kinds' callbacks enabled
# (ORCH_INJECT_ONLY), the CUDA example through orch (run.env) and the PyTorch example outside it
# (--standalone: the rank library's rep with its per-step reads), against the runs above
only_spec() {
  sed -e "s/^name: cuda-count-on/name: cuda-only-$1/" -e "s/launch_counts: true }/launch_counts: true, env: { ORCH_INJECT_ONLY: \"$2\" } }/" \
    $here/truth2/cuda-on.yaml >"$work/cuda-only-$1.yaml"
}
if want 2b; then
  only_spec graphs graphs
  only_spec nographs kernels,memcpy,memset,syncs
  (unset ORCH_PARAMS; run cuda-only-graphs-1 "$work/cuda-only-graphs.yaml" 90; run cuda-only-nographs-1 "$work/cuda-only-nographs.yaml" 90)
  alone only-cuda-all-1 30 env CUDA_INJECTION64_PATH="$lib" "$work/cuda-decode" --standalone --steps 128 --warmup 8 --reps 10
  for kinds in all graphs kernels memcpy syncs; do
    only=(ORCH_INJECT_ONLY="$kinds"); [ "$kinds" = all ] && only=()
    alone "only-torch-$kinds-1" 60 env CUDA_INJECTION64_PATH="$lib" ${only[@]+"${only[@]}"} python3 examples/torch-decode/decode.py --standalone --steps 32 --warmup 4 --reps 4
  done
fi
want 2 && (unset ORCH_PARAMS; run cuda-on-2 $here/truth2/cuda-on.yaml 90; run cuda-off-2 $here/truth2/cuda-off.yaml 90)
want 3 && idle_round 2
unset ORCH_PARAMS
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw,clocks_throttle_reasons.active --format=csv,noheader >>"$sum" 2>&1
echo "total: $(( $(date +%s) - t0 )) s of a $budget s budget" | tee -a "$sum"

node --import tsx $here/truth2-table.ts "$work" >"$work/tables.md" 2>&1
tar -C "$work" -czf "$out/truth2.tgz" --exclude='*/build' . 2>/dev/null
{ cat "$sum"; echo; cat "$work/tables.md"; } | tee "$out/summary.txt"
