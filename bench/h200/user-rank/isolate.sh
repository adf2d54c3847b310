#!/usr/bin/env bash
# Where do count mode's cost and the PyTorch eager arm's spread come from? Outside orch, each
# program's own --standalone timing (no per-step reads, no worker):
#  1. the CUDA example without and with orch's injection library (CUPTI callbacks alone), alternated;
#  2. the PyTorch example alone, and with nvidia-smi queried in a loop beside it (what the worker's
#     foreign-process look runs before every rep on a GPU host), alternated;
#  3. the PyTorch example with the injection library.
# One JSON line per run in $OUT/isolate.txt.
#   source .carry/env.sh && OUT=$OUT bash bench/h200/user-rank/isolate.sh
set -uo pipefail
out=${OUT:-/tmp/orch-isolate}
mkdir -p "$out"
log=$out/isolate.txt
lib=$PWD/native/build/liborch_inject.so
export ORCH_PARAMS='{"layers":24,"hidden":1024,"max_pos":128}' PYTHONDONTWRITEBYTECODE=1
nvcc -O2 -std=c++17 -arch=sm_90 -I ranklib/cpp examples/cuda-decode/decode.cu -o /tmp/cuda-decode >"$out/nvcc.log" 2>&1 || tail -5 "$out/nvcc.log"
line() { echo "$1 $(tail -1 "$2" | cut -c1-400)" | tee -a "$log"; }
for i in 1 2 3; do
  timeout 60 /tmp/cuda-decode --standalone --steps 128 --warmup 8 --reps 10 >/tmp/c0.json 2>/dev/null; line "cuda none $i" /tmp/c0.json
  CUDA_INJECTION64_PATH=$lib timeout 60 /tmp/cuda-decode --standalone --steps 128 --warmup 8 --reps 10 >/tmp/c1.json 2>/dev/null; line "cuda inject $i" /tmp/c1.json
done
smi_loop() { while :; do nvidia-smi --query-compute-apps=gpu_uuid,pid,process_name --format=csv,noheader >/dev/null 2>&1; done; }
for i in 1 2; do
  timeout 120 python3 examples/torch-decode/decode.py --standalone --steps 64 --warmup 8 --reps 6 >/tmp/t0.json 2>/dev/null; line "torch alone $i" /tmp/t0.json
  smi_loop & pid=$!
  timeout 120 python3 examples/torch-decode/decode.py --standalone --steps 64 --warmup 8 --reps 6 >/tmp/t1.json 2>/dev/null; line "torch +nvidia-smi loop $i" /tmp/t1.json
  kill $pid 2>/dev/null; wait $pid 2>/dev/null
done
CUDA_INJECTION64_PATH=$lib timeout 120 python3 examples/torch-decode/decode.py --standalone --steps 64 --warmup 8 --reps 6 >/tmp/t2.json 2>/dev/null; line "torch inject" /tmp/t2.json
( time nvidia-smi --query-compute-apps=gpu_uuid,pid,process_name --format=csv,noheader ) 2>&1 | tail -3 | tee -a "$log"
# What each kind of callback costs a graph step of PyTorch (per-step timing, as in orch's reps):
# the injection library counting only one kind (native/inject ORCH_INJECT_ONLY), or none at all.
for only in none graphs kernels memcpy,memset,syncs; do
  ORCH_INJECT_ONLY=$only CUDA_INJECTION64_PATH=$lib timeout 120 python3 examples/torch-decode/decode.py --standalone --steps 64 --warmup 8 --reps 4 >/tmp/t3.json 2>/dev/null; line "torch inject only=$only" /tmp/t3.json
done
timeout 120 python3 examples/torch-decode/decode.py --standalone --steps 64 --warmup 8 --reps 4 >/tmp/t4.json 2>/dev/null; line "torch alone 3" /tmp/t4.json
