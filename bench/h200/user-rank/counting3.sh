#!/usr/bin/env bash
# Issue 40's counting-cost call after pause (device truth 2, "counting that costs under 1 %"), one
# H200, within COUNTING3_BUDGET_S (default 240 s, the builds included). A rank library now counts a
# rep's warm-up steps and pauses orch's injection library for its timed steps (ranklib/PROTOCOL.md
# "Launch counts and clocks"); this measures what that leaves of counting's cost:
#  1. outside orch (the examples' --standalone: the PyTorch one through orch_rank.py's rep, the
#     CUDA one through orch_rank::RepCounting), eager and graph step medians for: no library; the
#     library counting throughout (ORCH_INJECT_PAUSE=never: every pause refused, as before pause);
#     the warm-up counted and the timed steps paused by cuptiFinalize (ORCH_INJECT_PAUSE=finalize,
#     the default); paused by cuptiUnsubscribe alone (ORCH_INJECT_PAUSE=unsubscribe); two
#     alternated rounds, ratios to no library;
#  2. through `orch submit`, counting on against off: cuda-counted.yaml / cuda-uncounted.yaml (two
#     pairs, alternated) and truth2/torch-on.yaml / torch-off.yaml, and what each report's Launches
#     section says counted them (the warm-up, when the pause held).
# First the builds: liborch_inject.so (the orch_inject target, into WORK; ORCH_INJECT_LIB names it
# to orch's worker) and the CUDA example. Then in order of need: the first pairs of 2., round 1 of
# 1., the second cuda pair, round 2. A step that fails or is not reached, a number the table needs
# that is missing, or a pause that did not hold makes the script exit 1; the table is printed last
# and its last line says which ("counting3: FAILED: ..."). Everything under $OUT (counting3.tgz:
# results directories and logs; summary.txt).
#   source .carry/env.sh && OUT=$OUT bash bench/h200/user-rank/counting3.sh
set -uo pipefail
out=${OUT:-/tmp/orch-counting3}
work=${WORK:-/tmp/counting3}
budget=${COUNTING3_BUDGET_S:-240}
mkdir -p "$out" "$work"
here=bench/h200/user-rank
sum=$work/summary.txt
missing=$work/missing.txt
export ORCH_FROM_SOURCE=1 ORCH_LOG=warn PYTHONDONTWRITEBYTECODE=1
unset ORCH_PARAMS  # each run below says its own sizes
# this tree's library, in a build directory of its own (a carried native/build may be another
# tree's, or predate pause); the worker of every orch submit below is pointed at it
lib=$work/inject-build/liborch_inject.so
export ORCH_INJECT_LIB=$lib
t0=$(date +%s)
left() { echo $(( budget - ($(date +%s) - t0) )); }
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
miss() { echo "$1" | tee -a "$sum" >>"$missing"; }
: >"$sum"
: >"$missing"

# 0. the library with pause (the carried build may predate it) and the CUDA example
cmake -S native -B "$work/inject-build" -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_CUDA=OFF -DORCH_INJECT=ON >"$work/cmake.log" 2>&1 &&
  cmake --build "$work/inject-build" --target orch_inject -j >>"$work/cmake.log" 2>&1 ||
  { tail -20 "$work/cmake.log"; echo "counting3: FAILED: building liborch_inject.so (see cmake.log)"; exit 1; }
nm -D --defined-only "$lib" | grep -q ' orch_inject_pause$' ||
  { echo "counting3: FAILED: $lib has no orch_inject_pause: not this tree's library"; exit 1; }
nvcc -O2 -std=c++17 -arch=sm_90 -I ranklib/cpp examples/cuda-decode/decode.cu -o "$work/cuda-decode" >"$work/nvcc.log" 2>&1 ||
  { tail -20 "$work/nvcc.log"; echo "counting3: FAILED: nvcc examples/cuda-decode/decode.cu (see nvcc.log)"; exit 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader 2>&1 | tee -a "$sum"
echo "build: $(( $(date +%s) - t0 )) s" | tee -a "$sum"

# name, timeout, command...: one run outside orch, its last line kept; a failure or the budget spent is a missing step
alone() {
  local name=$1 t=$2; shift 2
  if [ "$(left)" -lt 10 ]; then miss "$name: skipped (time budget spent)"; return; fi
  [ "$t" -gt "$(left)" ] && t=$(left)
  local a=$(date +%s%N)
  timeout "$t" "$@" >"$work/$name.json" 2>"$work/$name.err"
  local rc=$?
  echo "$name: exit $rc in $(ms $a) ms: $(tail -1 "$work/$name.json" | cut -c1-300)" | tee -a "$sum"
  [ $rc -eq 0 ] || miss "$name: exit $rc (see $name.err)"
}
# name, spec, timeout: one orch submit
run() {
  if [ "$(left)" -lt 15 ]; then miss "$1: skipped (time budget spent)"; return; fi
  local a=$(date +%s%N) t=$3
  [ "$t" -gt "$(left)" ] && t=$(left)
  timeout "$t" node bin/orch.mjs submit "$2" --results "$work/$1" >"$work/$1.log" 2>&1
  local rc=$?
  echo "$1: exit $rc in $(ms $a) ms" | tee -a "$sum"
  # 0 and 3-7, 10: an outcome (orchestrator/report/outcome-exit-code.ts), measured; 1, 2, 8, 9 and
  # a timeout: nothing measured. counting3-table.ts checks that each arm has its median.
  case $rc in 0 | 3 | 4 | 5 | 6 | 7 | 10) ;; *) miss "$1: orch submit exit $rc (see $1.log)" ;; esac
}

# 1. outside orch: no library, counting throughout, paused by finalize, paused by unsubscribe
params='{"layers":24,"hidden":1024,"max_pos":128}'  # the size the specs of 2. give (ORCH_PARAMS of a run)
variant() { # NAME: the environment of that variant
  case $1 in
    none) echo ;;
    always) echo "CUDA_INJECTION64_PATH=$lib ORCH_INJECT_PAUSE=never" ;;
    finalize) echo "CUDA_INJECTION64_PATH=$lib ORCH_INJECT_PAUSE=finalize" ;;
    unsubscribe) echo "CUDA_INJECTION64_PATH=$lib ORCH_INJECT_PAUSE=unsubscribe" ;;
  esac
}
standalone_round() { # round, the variants in this round's order
  local round=$1 v; shift
  for v in "$@"; do
    # shellcheck disable=SC2046  # the variant's assignments, word-split on purpose
    alone "cuda-$v-$round" 30 env ORCH_PARAMS="$params" $(variant "$v") "$work/cuda-decode" --standalone --steps 128 --warmup 8 --reps 10
  done
  for v in "$@"; do
    # shellcheck disable=SC2046
    alone "torch-$v-$round" 60 env ORCH_PARAMS="$params" $(variant "$v") python3 examples/torch-decode/decode.py --standalone --steps 32 --warmup 4 --reps 4
  done
}

# 2. through orch: counting on against off, each pair's order alternated
cuda_pair() { # round, then on off | off on
  local round=$1 side; shift
  for side in "$@"; do
    if [ "$side" = on ]; then run "cuda-on-$round" $here/cuda-counted.yaml 60
    else run "cuda-off-$round" $here/cuda-uncounted.yaml 60; fi
  done
}

# The target is the number through orch: its first pairs run first, then the rounds alternate
cuda_pair 1 on off
run torch-on-1 $here/truth2/torch-on.yaml 90
run torch-off-1 $here/truth2/torch-off.yaml 90
standalone_round 1 none always finalize unsubscribe
cuda_pair 2 off on
standalone_round 2 unsubscribe finalize always none
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw,clocks_throttle_reasons.active --format=csv,noheader >>"$sum" 2>&1
echo "total: $(( $(date +%s) - t0 )) s of a $budget s budget" | tee -a "$sum"

# the table checks every measurement it needs and ends with the verdict line (missing.txt's steps too)
node --import tsx $here/counting3-table.ts "$work" >"$work/table.md" 2>&1
table_rc=$?
tar -C "$work" -czf "$out/counting3.tgz" --exclude=./inject-build --exclude='*/build' . 2>/dev/null
{ cat "$sum"; echo; cat "$work/table.md"; } | tee "$out/summary.txt"
[ $table_rc -eq 0 ] && [ ! -s "$missing" ] || exit 1
