#!/usr/bin/env bash
# One device call on a GPU host with no node and no redis-server: orch end to end on the
# embedded default (carried by the device kit into .carry/). Runs the capture probe and the
# card-efficiency leave-one-out through `orch submit`, then the card-busy bench, and prints a
# short table last. Full logs and the results directories go under $OUT.
#   source .carry/env.sh && OUT=/tmp/out bash bench/h200/run.sh
set -uo pipefail
out=${OUT:-/tmp/orch-h200}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$out/card.txt"
node scripts/build-cli.mjs >"$out/build-cli.log" 2>&1 || true
results=$out/results
run() { # name, spec
  local t0=$(date +%s)
  node bin/orch.mjs submit "$2" --results "$results" >"$out/$1.log" 2>&1
  local rc=$?
  echo "$1: exit $rc in $(( $(date +%s) - t0 )) s" | tee -a "$out/summary.txt"
}
run probe configs/capture-probe.yaml
run loo bench/h200/decode-loo-93x30.yaml
BENCH_BACKEND=cuda BENCH_GPU=0 timeout 180 node --import tsx bench/card-busy.ts >"$out/card-busy.txt" 2>&1
echo "card-busy bench: exit $?" | tee -a "$out/summary.txt"
for d in "$results"/*/; do tar -C "$results" -czf "$out/$(basename "$d").tgz" "$(basename "$d")"; done
echo; echo "== probe report (section)"; sed -n '/Capture probe/,/^## [^C]/p' "$results"/capture-probe-*/report.md | head -40
echo; echo "== loo report (head, card time, arms)"; sed -n '1,/^## Arms/p' "$results"/decode-loo-93x30-*/report.md | head -30
sed -n '/Card time/,$p' "$results"/decode-loo-93x30-*/report.md | head -20
echo; echo "== card-busy bench"; tail -20 "$out/card-busy.txt"
echo; cat "$out/summary.txt"
