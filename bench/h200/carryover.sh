#!/usr/bin/env bash
# The launch state a rep inherits (native/BENCHMARKS.md), on the GPU in one call:
# bench/h200/pdl-state.cu (the state in a program of its own: which launches set and clear it) and,
# with graphrt built for CUDA at native/build/graphrt, bench/h200/eager-carryover.py for the graph
# arm with PDL (all_on) and without (no_pdl) after each conditioner.
#   OUT=$OUT bash bench/h200/carryover.sh     (tables to $OUT/carryover.txt; PDL_STATE=0 skips the program)
set -uo pipefail
out=${OUT:-/tmp/carryover}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$out/card.txt"
{
  if [ "${PDL_STATE:-1}" != 0 ] && nvcc -O2 -arch=sm_90 -o /tmp/pdl-state bench/h200/pdl-state.cu; then
    for nodes in 2000 2790; do echo "== pdl-state $nodes nodes"; /tmp/pdl-state "$nodes" 8; done
  fi
  if [ -x native/build/graphrt ]; then
    for target in all_on no_pdl; do
      echo "== eager-carryover.py (graphrt decode 93 x 30), TARGET=$target"
      TARGET=$target timeout 240 python3 bench/h200/eager-carryover.py native/build/graphrt "${ROUNDS:-6}"
    done
  fi
} 2>&1 | tee "$out/carryover.txt"
