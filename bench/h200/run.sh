#!/usr/bin/env bash
# One device call on a GPU host with no node and no redis-server: orch end to end on the
# embedded default (carried by the device kit into .carry/). Runs the card-efficiency
# leave-one-out through `orch submit` three times when OLD_ORCH is set (this tree, the worker and
# CLI of OLD_ORCH (a tree of an earlier commit, with OLD_GRAPHRT where its graphrt differs), this
# tree again: a before/after in one session, drift on both sides), accounts each block's leased
# time (bench/h200/account.ts), then the card-busy bench's leave-one-out cell at the same sizes,
# one request at a time and queued one deep (BENCH_QUEUE=0/1), for the worker-side split of the
# gap between reps on this host (its nvidia-smi look included), and prints a short table last.
# Everything goes to $OUT/h200.tgz (logs, results directories) and $OUT/table.txt.
#   source .carry/env.sh && OUT=/tmp/out bash bench/h200/run.sh
set -uo pipefail
out=${OUT:-/tmp/orch-h200}
work=${WORK:-/tmp/h200work}
mkdir -p "$out" "$work"
sum=$work/summary.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$work/card.txt"
node scripts/build-cli.mjs >"$work/build-cli.log" 2>&1 || true
G=native/build/graphrt
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }

run() { # name, spec, results dir, [graphrt], [orch tree]
  local a=$(date +%s%N)
  ORCH_GRAPHRT=${4:-$PWD/$G} node "${5:-.}/bin/orch.mjs" submit "$2" --results "$3" >"$work/$1.log" 2>&1
  local rc=$?
  echo "$1: exit $rc in $(ms $a) ms" | tee -a "$sum"
}
# after, before, after: drift between the runs falls on both sides
run loo bench/h200/decode-loo-93x30.yaml "$work/results"
if [ -n "${OLD_ORCH:-}" ]; then
  run loo-before bench/h200/decode-loo-93x30.yaml "$work/results-before" "${OLD_GRAPHRT:-$PWD/$G}" "$OLD_ORCH"
  run loo-2 bench/h200/decode-loo-93x30.yaml "$work/results-2"
fi
for r in results-before results results-2; do
  for d in "$work/$r"/decode-loo-93x30-*/; do
    [ -d "$d" ] || continue
    { echo "== $r: card time"; sed -n '/^## Card time/,$p' "$d/report.md" | sed -n '1,10p'; echo "== $r: account";
      node --import tsx bench/h200/account.ts "$d"; } >>"$work/tables.txt" 2>&1
  done
done
# The gap's split on this host: the loo's sizes and steps, one block each way (BENCH_CARD_BUSY=0: not run).
[ "${BENCH_CARD_BUSY:-1}" = 0 ] || for q in 0 1; do
  BENCH_QUEUE=$q BENCH_BACKEND=cuda BENCH_GPU=0 BENCH_MODES=loo BENCH_BLOCKS=1 BENCH_LOO_LAYERS=93 BENCH_LOO_STEPS=40 \
    timeout 120 node --import tsx bench/card-busy.ts >"$work/card-busy-q$q.txt" 2>&1
  echo "card-busy bench (BENCH_QUEUE=$q): exit $?" | tee -a "$sum"
done
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw,clocks_throttle_reasons.active --format=csv,noheader >>"$work/card.txt" 2>&1

echo; echo "== loo report (head)"; sed -n '1,/^## Arms/p' "$work"/results/decode-loo-93x30-*/report.md | head -24
tar -C "$work" -czf "$out/h200.tgz" . 2>/dev/null
{ echo; cat "$work/card.txt"; cat "$work/tables.txt"; for q in 0 1; do echo "== card-busy BENCH_QUEUE=$q"; sed -n '/worker-side split/,$p' "$work/card-busy-q$q.txt"; done; echo; cat "$sum"; } | tee "$out/table.txt"
