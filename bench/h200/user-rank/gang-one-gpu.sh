#!/usr/bin/env bash
# examples/torch-tp on ONE H200 as a gang of one (WORLD_SIZE=1, blocks.ranks: 1) through
# `orch submit` on the embedded default: torch.distributed with nccl from the worker's rendezvous
# environment, eager against graph (the NCCL all-reduce of each layer captured with
# torch.cuda.graph), the identity gate on the rank; then the same with the planted STALE_INPUT on
# the graph arm, whose identity gate must fail (exit 5, invalid). The specs are configs/torch-tp.yaml
# with the device's python3 (torch 2.11 + CUDA), one rank and GPU sizes. Results and logs go to
# $OUT/gang-one-gpu/, the table is printed last (and kept in $OUT/gang-one-gpu/table.md). <= 3 min.
#   source .carry/env.sh && OUT=$OUT bash bench/h200/user-rank/gang-one-gpu.sh
set -uo pipefail
out=${OUT:-/tmp/orch-gang-one-gpu}/gang-one-gpu
mkdir -p "$out"
export ORCH_FROM_SOURCE=1 ORCH_LOG=warn PYTHONDONTWRITEBYTECODE=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/card.txt"
python3 -c 'import torch, torch.distributed as d; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version(), "nccl available", d.is_nccl_available())' | tee "$out/torch.txt"

spec() { # name, graph arm's toggles: configs/torch-tp.yaml for one GPU rank
  sed -e 's|cmd: /usr/bin/python3 |cmd: python3 |' \
      -e 's|ranks: 2|ranks: 1|' \
      -e 's|params: { layers: 4, hidden: 256, ffn: 1024 }|params: { layers: 8, hidden: 1024, ffn: 4096 }|' \
      -e 's|warmup: 4|warmup: 8|' -e 's|steps: 16|steps: 64|' -e 's|reps: 4|reps: 6|' \
      -e "s|- { name: graph, toggles: { GRAPH: true } }|- { name: graph, toggles: $2 }|" \
      -e "s|^name: torch-tp|name: $1|" configs/torch-tp.yaml >"$out/$1.yaml"
  grep -q 'ranks: 1' "$out/$1.yaml" && grep -q 'cmd: python3 ' "$out/$1.yaml" || { echo "spec $1: configs/torch-tp.yaml changed, the sed no longer applies"; exit 2; }
}
spec tp1 '{ GRAPH: true }'
spec tp1-stale '{ GRAPH: true, STALE_INPUT: true }'
for name in tp1 tp1-stale; do
  a=$(date +%s)
  timeout 150 node bin/orch.mjs submit "$out/$name.yaml" --results "$out/$name" >"$out/$name.log" 2>&1
  echo "$name: exit $? in $(( $(date +%s) - a )) s" | tee -a "$out/exits.txt"
done

python3 bench/h200/user-rank/gang-table.py "$out" tp1 tp1-stale | tee "$out/table.md"
