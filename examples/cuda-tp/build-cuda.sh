#!/usr/bin/env bash
# Builds examples/cuda-tp/tp.cu with nvcc into $1 (default build/cuda-tp), from the repo root.
# NCCL is on (-DORCH_RANK_NCCL, linked) where nccl.h is found: $NCCL_HOME/include, the CUDA
# toolkit's include, /usr/include, /usr/local/include, or the nvidia-nccl wheel of python3 (the
# one torch brings). Without it the binary serves a gang of one (no NCCL call is made there) and
# refuses more ranks at setup with the fix. Which of the two was built is the last line on stderr.
# CUDA_ARCH (default sm_90) picks the GPU architecture. `build-cuda.sh --nccl-root` prints where
# it would take NCCL from ("none": a gang of one only) and builds nothing.
set -euo pipefail
out=${1:-build/cuda-tp}
arch=${CUDA_ARCH:-sm_90}
here=$(dirname "$0")
command -v nvcc >/dev/null || { echo "cuda-tp: nvcc is not on PATH: install the CUDA toolkit (nvcc 12 or later) or add its bin/ to PATH" >&2; exit 2; }

nvcc_include=$(dirname "$(command -v nvcc)")/../include
wheel=$(python3 -c 'import nvidia.nccl as n; print(list(n.__path__)[0])' 2>/dev/null || true)
nccl_root=
for root in ${NCCL_HOME:-} "$(dirname "$nvcc_include")" /usr /usr/local ${wheel:-}; do
  if [ -f "$root/include/nccl.h" ]; then nccl_root=$root; break; fi
done

if [ "$out" = --nccl-root ]; then echo "${nccl_root:-none}"; exit 0; fi

nccl_flags=()
if [ -n "$nccl_root" ]; then
  # the library beside the header (lib, lib64, or the multiarch dir); a wheel ships only libnccl.so.2
  so=$(ls "$nccl_root"/lib*/libnccl.so* "$nccl_root"/lib/*/libnccl.so* 2>/dev/null | head -1 || true)
  [ -n "$so" ] || { echo "cuda-tp: $nccl_root/include/nccl.h but no libnccl.so* under $nccl_root/lib*: install NCCL's library (libnccl2) or point NCCL_HOME at a full NCCL" >&2; exit 2; }
  lib=$(dirname "$so")
  name=$([ -e "$lib/libnccl.so" ] && echo nccl || echo :libnccl.so.2)
  nccl_flags=(-DORCH_RANK_NCCL -I "$nccl_root/include" -L "$lib" "-l$name" -Xlinker -rpath -Xlinker "$lib")
fi

mkdir -p "$(dirname "$out")"
nvcc -O2 -std=c++17 -arch="$arch" -I ranklib/cpp "$here/tp.cu" -o "$out" -ldl "${nccl_flags[@]}"
if [ -n "$nccl_root" ]; then
  echo "cuda-tp: built $out with NCCL ($nccl_root): any WORLD_SIZE" >&2
else
  echo "cuda-tp: built $out without NCCL (no nccl.h under \$NCCL_HOME, the CUDA toolkit, /usr, /usr/local or python3's nvidia-nccl): a gang of one only" >&2
fi
