#!/usr/bin/env bash
# Issue 42's device call: card-time3.yaml (torch-decode after a multi-GB host-side load, 6 small
# blocks, A/A twin) run twice through `orch submit` on the embedded default: the load in setup()
# (inside each block's lease) and in prepare() (the worker's host phase: the next block's process
# loads while the block before holds the card). Both runs go through the host phase (`import torch`
# is in prepare() in both); they differ only in where the load is. Blocks are fixed (6): auto-sized
# blocks are not built yet. Prints last, per run: wall time, the Card time
# rows (leased, start-up, busy share), the ranks' prepare_ms/setup_ms from the hello lines, and
# the report's A/A lines. Logs and results directories go to $OUT/card-time3.tgz.
#   source .carry/env.sh && OUT=$OUT bash bench/h200/user-rank/card-time3.sh
# CT3_GB (default 4): the file's size. 8 GB from /dev/urandom takes about a minute here, too much
# of the ~8 minutes; the file's pages are dropped after each read, so every block reads the disk.
set -uo pipefail
out=${OUT:-/tmp/orch-card-time3}
work=${WORK:-/tmp/card-time3}
gb=${CT3_GB:-4}
mkdir -p "$out" "$work"
here=bench/h200/user-rank
export ORCH_FROM_SOURCE=1 ORCH_LOG=warn PYTHONDONTWRITEBYTECODE=1
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader | tee "$work/card.txt"

a=$(date +%s%N)
dd if=/dev/urandom of="$work/blob.bin" bs=64M count=$((gb * 16)) iflag=fullblock status=none
echo "blob: ${gb} GiB of random bytes in $(ms $a) ms" | tee "$work/summary.txt"

for where in setup prepare; do
  spec=$work/card-time3-$where.yaml
  sed -e "s|^name: card-time3|name: card-time3-$where|" \
      -e "s|mode: resident,|mode: resident, env: { CT3_LOAD: $where, CT3_FILE: $work/blob.bin },|" "$here/card-time3.yaml" >"$spec"
  a=$(date +%s%N)
  timeout 280 node bin/orch.mjs submit "$spec" --results "$work/$where" >"$work/$where.log" 2>&1
  echo "load in $where(): exit $? in $(ms $a) ms" | tee -a "$work/summary.txt"
done
rm -f "$work/blob.bin"

{
  cat "$work/card.txt" "$work/summary.txt"
  for where in setup prepare; do
    d=$(ls -d "$work/$where"/*/ 2>/dev/null | head -1)
    echo; echo "== load in $where()"
    [ -z "$d" ] && { echo "no results directory; log tail:"; tail -20 "$work/$where.log"; continue; }
    sed -n '/^## Card time/,/^## /p' "$d/report.md" | grep '^|' | head -12
    grep -rhoE '"(prepare_ms|setup_ms)":[0-9.]+' "$d" 2>/dev/null | sort | uniq -c | sort -rn | head -8
    grep -E 'A/A' "$d/report.md" | head -6
  done
} >"$work/table.md" 2>&1
tar -C "$work" -czf "$out/card-time3.tgz" . 2>/dev/null
cp "$work/table.md" "$out/table.md"
cat "$work/table.md"
