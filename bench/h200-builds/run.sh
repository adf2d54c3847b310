#!/usr/bin/env bash
# Builds as arms on a GPU host (issue #15), one device call: `orch submit` of a native A/B whose
# two arms are two commits of this repository, each commit's graphrt built there by the worker
# (CUDA, in its own worktree through the build cache and lock, before any card lease), both
# arms resident on the one card and interleaved ABBA. The repository travels as a git bundle
# (.carry/orch.bundle, made here by pack.sh); `mine` is main plus a planted commit that runs the
# chain workload's kernels half again (+50 % kernels per step), so the verdict must be "slower"
# by about that much, with the identity gate passing on both builds' graph arms. A second spec
# measures a build against itself (A/A across two worktrees of one commit): it must not be slower
# or faster. Prints a short table last; logs and results under $OUT.
#   here:   bash bench/h200-builds/pack.sh
#   device: source .carry/env.sh && OUT=$OUT bash bench/h200-builds/run.sh
set -uo pipefail
out=${OUT:-/tmp/orch-h200-builds}
mkdir -p "$out"
here=$(pwd)
work=$(mktemp -d /tmp/orch-builds-XXXX)
echo "git: $(command -v git) flock: $(command -v flock) nvcc: $(command -v nvcc)" | tee "$out/summary.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee -a "$out/summary.txt"
node scripts/build-cli.mjs >"$work/build-cli.log" 2>&1 || true
# this checkout's own graphrt (the worker's), CUDA
t0=$(date +%s)
( cmake -S native -B native/build -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_CUDA=ON && cmake --build native/build -j 16 --target graphrt ) >"$work/build-own.log" 2>&1
echo "own graphrt build: rc=$? in $(( $(date +%s) - t0 )) s" | tee -a "$out/summary.txt"
repo=$work/orch
git clone -q "$here/.carry/orch.bundle" "$repo" && git -C "$repo" checkout -q -B main "$(cat .carry/orch.head)"
g() { git -C "$repo" -c user.email=bench@orch -c user.name=orch-bench "$@"; }
g checkout -qb mine
sed -i 's/k < kernels_;/k < kernels_ + kernels_ \/ 2;/' "$repo/native/src/workloads/chain.cpp"
g commit -qam 'chain: half again as many kernels per step (planted)'
g checkout -q main
spec() { # name, builds, arms[, gates]
  cat <<YAML
name: $1
design: ab
repo: $repo
builds:
$2
workload:
  runtime: native
  backend: cuda
  kind: chain
  params: { kernels: 256 }
  warmup: 4
  steps: 200
toggles: [graph, pdl]
arms:
$3
reps: 6
blocks: { count: 4 }
gates: ${4:-"{ identity: { replays: 7 }, aa: false }"}
metric: { name: ms_per_step, better: lower }
YAML
}
spec graphrt-planted "  main: { ref: main }
  mine: { ref: mine }" "  - { name: main, build: main, toggles: { graph: true, pdl: true } }
  - { name: mine, build: mine, toggles: { graph: true, pdl: true } }" >"$work/planted.yaml"
spec graphrt-same "  main: { ref: main }
  again: { ref: main }" "  - { name: main, build: main, toggles: { graph: true, pdl: true } }
  - { name: again, build: again, toggles: { graph: true, pdl: true } }" >"$work/same.yaml"
# the same A/A with the arms (and so the control and the processes' start order) swapped
spec graphrt-same-swapped "  main: { ref: main }
  again: { ref: main }" "  - { name: again, build: again, toggles: { graph: true, pdl: true } }
  - { name: main, build: main, toggles: { graph: true, pdl: true } }" >"$work/same-swapped.yaml"
results=$work/r; mkdir -p "$results"
export GRAPHRT_CUDA=ON
# Where a difference between two processes of one commit comes from: the A/A without the identity
# gate (each graph then captured at its arm's first rep: arm 0 first in even blocks, arm 1 in odd),
# eager, and graph without PDL.
same_builds="  main: { ref: main }
  again: { ref: main }"
aa_arms() { echo "  - { name: main, build: main, toggles: { graph: $1, pdl: $2 } }
  - { name: again, build: again, toggles: { graph: $1, pdl: $2 } }"; }
spec graphrt-same-nogate "$same_builds" "$(aa_arms true true)" "{ identity: false, aa: false }" >"$work/same-nogate.yaml"
spec graphrt-same-eager "$same_builds" "$(aa_arms false false)" >"$work/same-eager.yaml"
spec graphrt-same-nopdl "$same_builds" "$(aa_arms true false)" >"$work/same-nopdl.yaml"
# The same question inside one process: two arms of identical work on chain (it ignores overlap,
# which still makes a capture key, so a graph, of its own), captured in the gates' order.
inproc_arms() { echo "  - { name: $1, toggles: { graph: true, pdl: true, overlap: $2 } }
  - { name: $3, toggles: { graph: true, pdl: true, overlap: $4 } }"; }
spec graphrt-inproc "" "$(inproc_arms plain false overlap true)" | sed '/^builds:$/d; /^repo:/d' | sed 's/^toggles: \[graph, pdl\]/toggles: [graph, pdl, overlap]/' >"$work/inproc.yaml"
spec graphrt-inproc-swapped "" "$(inproc_arms overlap true plain false)" | sed '/^builds:$/d; /^repo:/d' | sed 's/^toggles: \[graph, pdl\]/toggles: [graph, pdl, overlap]/' >"$work/inproc-swapped.yaml"
# A gang of two ranks (nvidia-h200-x2) whose arms run two builds of one commit: each build's
# processes form a gang of their own (own rendezvous, own NCCL communicator), an all-reduce per
# layer inside the captured graph: an A/A across processes with collectives.
cat >"$work/gang-same.yaml" <<YAML
name: graphrt-gang-same
design: ab
repo: $repo
builds:
$same_builds
workload:
  runtime: native
  backend: cuda
  kind: decode
  params: { layers: 16, kernels_per_layer: 12, hidden: 256, max_pos: 64 }
  warmup: 4
  steps: 100
toggles: [graph, pdl, allreduce]
arms:
  - { name: main, build: main, toggles: { graph: true, pdl: true, allreduce: true } }
  - { name: again, build: again, toggles: { graph: true, pdl: true, allreduce: true } }
reps: 6
blocks: { count: 4, ranks: 2 }
gates: { identity: { replays: 7 }, aa: false }
metric: { name: ms_per_step, better: lower }
YAML
# PIN (a CPU list): also run each spec with orch and its ranks pinned there (taskset), to tell a
# host-side difference between the two processes (their CPUs) from a device-side one.
# which CPU each process last ran on (psr), twice a second, for the whole loop
( while :; do date +%s.%N; ps -eo pid,psr,pcpu,args | grep -E '[g]raphrt|[r]edis-server|[o]rch.mjs' | cut -c1-140; sleep 0.5; done ) >"$results/psr.log" 2>&1 &
sampler=$!
for s in ${SPECS:-planted same same-swapped}; do
  for pin in "" ${PIN:-}; do
    t0=$(date +%s)
    if [ -z "$pin" ]; then node bin/orch.mjs submit "$work/$s.yaml" --results "$results" >"$results/$s.log" 2>&1
    else taskset -c "$pin" node bin/orch.mjs submit "$work/$s.yaml" --results "$results" >"$results/$s-pinned.log" 2>&1; fi
    echo "$s${pin:+ pinned to CPUs $pin}: exit $? in $(( $(date +%s) - t0 )) s" | tee -a "$out/summary.txt"
  done
done
kill $sampler
cp "$work"/build-*.log "$results"/; tar -C "$results" -czf "$out/results.tgz" .
echo; echo "== verdicts"; for d in "$work"/r/*/; do echo "$(basename "$d"): $(grep -m1 '^\*\*' "$d/report.md")"; grep -m1 '^| identity' "$d/report.md"; done
echo; cat "$out/summary.txt"
