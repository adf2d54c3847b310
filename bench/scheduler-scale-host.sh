#!/usr/bin/env bash
# The scheduler at scale (bench/scheduler-scale.ts) on a host with cores to spare, before and
# after in one call: here the scheduler, redis-server and the stand-in hosts share 2 cores, and
# the grant latency (so utilisation) measures that contention as much as the scheduler.
#
# Here:   git archive <base commit> --prefix=base/ | gzip > .carry/base.tar.gz
#         bash ../shared/tools/device-kit          (node, redis-server, node_modules into .carry/)
# There:  source .carry/env.sh && OUT=$OUT RUNS=3 BENCH_FLEET_PROCS=8 bash bench/scheduler-scale-host.sh
# Runs base and this tree alternated, one seed per pair (BENCH_SEED=i), and prints a table of
# each run's main rows last; every run's full output is under $OUT. Without .carry/base.tar.gz
# only this tree runs (its column alone).
set -euo pipefail
OUT=${OUT:-/tmp/scale-out}
RUNS=${RUNS:-3}
mkdir -p "$OUT"
base=/tmp/scale-base
sides=(head)
if [ -f .carry/base.tar.gz ]; then
  sides=(base head)
  rm -rf "$base" && mkdir -p "$base"
  tar -C "$base" -xzf .carry/base.tar.gz
  ln -sfn "$PWD/node_modules" "$base/base/node_modules"
  # one harness for both: this tree's bench/ (stand-in hosts, metrics, BENCH_FLEET_PROCS) drives the base's scheduler
  cp -r bench/. "$base/base/bench/"
fi
echo "host: $(nproc) cores, $(uname -r), node $(node --version), $(redis-server --version | head -c 40)" | tee "$OUT/host.txt"
for i in $(seq "$RUNS"); do
  if [ "${sides[0]}" = base ]; then
    (cd "$base/base" && BENCH_RUNS=1 BENCH_SEED="$i" node --import tsx bench/scheduler-scale.ts) > "$OUT/base-$i.txt" 2>&1 || echo "base run $i failed" >&2
  fi
  BENCH_RUNS=1 BENCH_SEED="$i" node --import tsx bench/scheduler-scale.ts > "$OUT/head-$i.txt" 2>&1 || echo "head run $i failed" >&2
done
rows=('grants/s (median 1 s window' 'grants/s (first to last' 'card utilisation' 'held by a host' 'steady %' 'steady window' 'longest 8-rank head wait' 'its backfill bound' 'blocks over bound' 'card held by two gangs' 'Redis MiB per 10 000' 'CPU ms per grant while granting' '  redis-server |' 'one scheduler core could carry' 'first submission → first grant' 'release → next grant' 'grant → host job received' 'running %')
{
  printf 'metric'
  for i in $(seq "$RUNS"); do for w in "${sides[@]}"; do printf ' | %s %s' "$w" "$i"; done; done
  printf '\n'
  for r in "${rows[@]}"; do
    printf '%s' "$(grep -F -m1 -- "$r" "$OUT/head-1.txt" | cut -d'|' -f1 | sed 's/ *$//')"
    for i in $(seq "$RUNS"); do
      for w in "${sides[@]}"; do printf ' | %s' "$(grep -F -m1 -- "$r" "$OUT/$w-$i.txt" | cut -d'|' -f2 | xargs)"; done
    done
    printf '\n'
  done
} | tee "$OUT/table.txt"
