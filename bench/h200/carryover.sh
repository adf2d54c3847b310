#!/usr/bin/env bash
# The PDL carry-over of native/BENCHMARKS.md on the GPU, in one call: bench/h200/pdl-state.cu (the
# hazard in a program of its own: which launches set and clear the state) and, with graphrt built
# for CUDA at native/build/graphrt, bench/h200/eager-carryover.py (the hazard in graphrt's decode).
#   OUT=$OUT bash bench/h200/carryover.sh     (tables to $OUT/carryover.txt)
set -uo pipefail
out=${OUT:-/tmp/carryover}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$out/card.txt"
nvcc -O2 -arch=sm_90 -o /tmp/pdl-state bench/h200/pdl-state.cu || exit 1
{
  for nodes in 2000 2790; do echo "== pdl-state $nodes nodes"; /tmp/pdl-state "$nodes" 8; done
  if [ -x native/build/graphrt ]; then
    echo "== eager-carryover.py (graphrt decode 93 x 30)"
    timeout 240 python3 bench/h200/eager-carryover.py native/build/graphrt "${ROUNDS:-6}"
  fi
} 2>&1 | tee "$out/carryover.txt"
