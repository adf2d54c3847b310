#!/usr/bin/env bash
# examples/cuda-tp's CUDA build (tp.cu) on ONE H200 as a gang of one (WORLD_SIZE=1, blocks.ranks:
# 1) through `orch submit` on the embedded default: the spec's build (examples/cuda-tp/build-cuda.sh,
# nvcc; a gang of one makes no NCCL call, so it runs whether or not the machine has nccl.h), eager
# against graph (the whole step captured by orch_rank::graph), the identity gate on the rank; then
# the same with the planted STALE_INPUT on the graph arm, whose identity gate must fail on rank 0
# at replay 2 (exit 5, invalid). The specs are configs/cuda-tp.yaml with one rank. Results and
# logs go to $OUT/cuda-tp-one-gpu/, the table is printed last (and kept in table.md). About a
# minute: the build is most of it (the second run reuses it from the build cache).
#   source .carry/env.sh && OUT=$OUT bash bench/h200/user-rank/cuda-tp-one-gpu.sh
# CONFIG=configs/cuda-tp-cpu.yaml runs the same on a cpu card (the CPU build): a dry run of the
# script where there is no GPU.
set -uo pipefail
out=${OUT:-/tmp/orch-cuda-tp-one-gpu}/cuda-tp-one-gpu
mkdir -p "$out"
rm -f "$out/exits.txt"
config=${CONFIG:-configs/cuda-tp.yaml}
export ORCH_FROM_SOURCE=1 ORCH_LOG=warn
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/card.txt"
nvcc --version | tail -1 | tee "$out/nvcc.txt"
echo "NCCL for the build: $(examples/cuda-tp/build-cuda.sh --nccl-root)" | tee -a "$out/nvcc.txt"  # none: world 1 only

spec() { # name, graph arm's toggles: $config as a gang of one
  sed -e 's|ranks: 2 }|ranks: 1 }|' \
      -e "s|- { name: graph, toggles: { GRAPH: true } }|- { name: graph, toggles: $2 }|" \
      -e "s|^name: .*|name: $1|" "$config" >"$out/$1.yaml"
  grep -q 'ranks: 1 }' "$out/$1.yaml" && grep -q "toggles: $2 }" "$out/$1.yaml" ||
    { echo "spec $1: $config changed, the sed no longer applies"; exit 2; }
}
spec cuda-tp1 '{ GRAPH: true }'
spec cuda-tp1-stale '{ GRAPH: true, STALE_INPUT: true }'
# the build runs in the first submit, inside its deadline
for name in cuda-tp1 cuda-tp1-stale; do
  a=$(date +%s)
  timeout 150 node bin/orch.mjs submit "$out/$name.yaml" --results "$out/$name" >"$out/$name.log" 2>&1
  echo "$name: exit $? in $(( $(date +%s) - a )) s" | tee -a "$out/exits.txt"
done
grep -q '^cuda-tp1: exit 0 ' "$out/exits.txt" || tail -30 "$out/cuda-tp1.log"  # a build or setup failure

python3 bench/h200/user-rank/gang-table.py "$out" cuda-tp1 cuda-tp1-stale | tee "$out/table.md"
