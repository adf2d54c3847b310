#!/usr/bin/env bash
# On a machine of W GPUs (the device tool's nvidia-h200-x2, -x4, -x8), from the repo root after
# `../shared/tools/device-kit` here, with carry [".carry"]:
#   source .carry/env.sh && bash bench/multirank/device-run.sh W
# builds graphrt for CUDA with NCCL (graphrt target only: the compiler's error is printed first if
# it fails), then
#  (a) the world-W leave-one-out (bench/multirank/loo-world.yaml with blocks.ranks = W) through
#      `orch submit` in the embedded default;
#  (b1) graphrt alone: W ranks of `graphrt serve --backend cuda`, a long graph-replay rep, kill -9
#      of the last rank mid-replay: how long the others take to exit (the watchdog's ncclCommAbort),
#      and their final error line;
#  (b2) through orch (one worker with all W GPUs, `orch serve`): a W-rank graph-replay block, kill -9
#      of the last rank's pid mid-replay: the others' exit time, the block's failure reason, and
#      `orch status --json` (every card free);
#  (c) a short table, printed last.
# SKIP_LOO=1 skips (a). Logs and results under $OUT (8 files come back: build.log, loo-report.md, loo-events.jsonl,
# loo.stdout, kill.log, orch-kill.log, table.txt).
set -u
W=${1:-2}
OUT=${OUT:-/tmp/multirank-out}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0  # NVLink multicast stays off on these machines
T0=$(date +%s)
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

# --- build: env.sh built everything (its log: /tmp/orch-kit/build.log); else graphrt only ---
[ -f /tmp/orch-kit/build.log ] && cp /tmp/orch-kit/build.log "$OUT/build.log" &&
  grep -n -A6 -E 'nccl_collective.*error|error:.*nccl' "$OUT/build.log" | head -40
if [ ! -x native/build/graphrt ]; then
  { cmake -S native -B native/build -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_CUDA=ON -DGRAPHRT_NCCL=ON &&
    cmake --build native/build --target graphrt -j "$(nproc)"; } >"$OUT/build.log" 2>&1
fi
if [ ! -x native/build/graphrt ]; then
  echo "== BUILD FAILED (graphrt, CUDA + NCCL); the compiler's errors:"
  grep -n -B2 -A8 -E 'error|Error' "$OUT/build.log" | head -80
  exit 1
fi
echo "== built in $(( $(date +%s) - T0 )) s"
nvidia-smi --query-gpu=index,name --format=csv,noheader
native/build/graphrt hello --backend cuda | cut -c1-300

# --- (a) leave-one-out at world W, embedded default ---
loo_rc=skipped; loo_s=0
if [ "${SKIP_LOO:-0}" != 1 ]; then  # SKIP_LOO=1: the kill tests alone
SPEC=/tmp/loo-world-$W.yaml
sed "s/ranks: 2 }/ranks: $W }/" bench/multirank/loo-world.yaml >"$SPEC"
ta=$(date +%s)
REDIS_URL= ORCH_PREFIX= ORCH_LOG=warn timeout 300 node bin/orch.mjs submit "$SPEC" --results /tmp/loo >"$OUT/loo.stdout" 2>&1
loo_rc=$?
loo_s=$(( $(date +%s) - ta ))
echo "== (a) loo world $W: exit $loo_rc in $loo_s s"
LOO=$(ls -d /tmp/loo/*/ 2>/dev/null | head -1)
[ -n "$LOO" ] && cp "$LOO/report.md" "$OUT/loo-report.md" && cp "$LOO/events.jsonl" "$OUT/loo-events.jsonl"
[ -n "$LOO" ] && sed -n '/^## Gates/,/^## Paired/p;/^## Leave-one-out/,/^## Order/p;/^## Ranks/,$p' "$LOO/report.md" | head -80
fi

# --- (b1) graphrt alone: the watchdog ---
LONG='{"id":"long","workload":"decode","params":{"layers":8,"kernels_per_layer":12},"toggles":{"graph":true,"allreduce":true},"warmup":2,"steps":100000}'
RV=$(mktemp -d)
pids=()
for r in $(seq 0 $((W - 1))); do
  ( echo "$LONG"; sleep 120 ) | CUDA_VISIBLE_DEVICES=$r native/build/graphrt serve --backend cuda --world "$W" --rank "$r" --rendezvous "$RV/rv.sock" >"/tmp/rank$r.out" 2>"/tmp/rank$r.err" &
  pids+=($!)
done
sleep 6  # NCCL init, prepare, capture; then the replays run for tens of seconds
victim=${pids[$((W - 1))]}
alive_before=0; for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive_before=$((alive_before + 1)); done
t0=$(now_ms); kill -9 "$victim"
b1_ms=""
for p in "${pids[@]:0:$((W - 1))}"; do
  while kill -0 "$p" 2>/dev/null; do sleep 0.01; [ $(( $(now_ms) - t0 )) -gt 10000 ] && break; done
  b1_ms="$b1_ms $(( $(now_ms) - t0 ))"
done
{
  echo "alive before the kill: $alive_before of $W; rank $((W - 1)) (pid $victim) killed; others gone after (ms):$b1_ms"
  for r in $(seq 0 $((W - 1))); do echo "-- rank $r stdout tail"; tail -c 600 "/tmp/rank$r.out"; echo "-- rank $r stderr tail"; tail -c 600 "/tmp/rank$r.err"; done
} >"$OUT/kill.log" 2>&1
for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
echo "== (b1) graphrt alone:$b1_ms ms"; grep -h '"type":"error"' /tmp/rank*.out | cut -c1-300

# --- (b2) through orch: a worker with all W GPUs ---
PASS=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
redis-server --port 6392 --requirepass "$PASS" --maxmemory-policy noeviction --save '' --appendonly no --daemonize yes --logfile /tmp/redis-kill.log
export REDIS_URL="redis://:$PASS@127.0.0.1:6392" ORCH_LOG=warn ORCH_PREFIX=kill
cards=$(seq -s, 0 $((W - 1)))
node bin/orch.mjs worker --host x --cards "$cards" --graphrt native/build/graphrt >/tmp/w-kill.log 2>&1 & wpid=$!
node bin/orch.mjs serve >/tmp/serve-kill.log 2>&1 & spid=$!
KSPEC=/tmp/kill-$W.yaml
cat >"$KSPEC" <<YAML
name: kill-world-$W
design: ab
workload:
  runtime: native
  backend: cuda
  kind: decode
  params: { layers: 8, kernels_per_layer: 12 }
  warmup: 2
  steps: 100000
toggles: [graph, allreduce]
arms:
  - { name: a, toggles: { graph: true, allreduce: true } }
  - { name: b, toggles: { allreduce: true } }
reps: 2
blocks: { count: 1, ranks: $W }
gates:
  identity: { replays: 7 }
  aa: false
metric: { name: ms_per_step, better: lower }
YAML
sleep 3
timeout 120 node bin/orch.mjs submit "$KSPEC" --results /tmp/kill >/tmp/submit-kill.out 2>&1 & subpid=$!
rpids=()
for _ in $(seq 1 600); do
  mapfile -t rpids < <(pgrep -f "graphrt serve .*--world $W" | sort -n)
  [ "${#rpids[@]}" -ge "$W" ] && break
  sleep 0.05
done
sleep 8  # rendezvous, NCCL init, identity gate, then the rep's replays (about 30 s of steps)
victim=$(pgrep -f "graphrt serve .*--rank $((W - 1))( |$)" | head -1)
t0=$(now_ms); kill -9 "$victim"
b2_ms=""
for p in "${rpids[@]}"; do
  [ "$p" = "$victim" ] && continue
  while kill -0 "$p" 2>/dev/null; do sleep 0.01; [ $(( $(now_ms) - t0 )) -gt 10000 ] && break; done
  b2_ms="$b2_ms $(( $(now_ms) - t0 ))"
done
wait "$subpid"; sub_rc=$?
sleep 1
{
  echo "ranks: ${rpids[*]}; rank $((W - 1)) (pid $victim) killed; others gone after (ms):$b2_ms; submit exit $sub_rc"
  echo "-- submit output"; tail -c 2500 /tmp/submit-kill.out
  echo "-- orch status --json"; node bin/orch.mjs status --json 2>&1 | head -c 3000
  echo; echo "-- GPU processes"; nvidia-smi --query-compute-apps=pid,name --format=csv,noheader
  echo "-- worker log tail"; tail -c 3000 /tmp/w-kill.log
} >"$OUT/orch-kill.log" 2>&1
kill "$wpid" "$spid" 2>/dev/null; wait "$wpid" "$spid" 2>/dev/null
redis-cli -p 6392 -a "$PASS" --no-auth-warning shutdown nosave >/dev/null 2>&1
echo "== (b2) through orch:$b2_ms ms; submit exit $sub_rc"
grep -h -o 'RANK_[A-Z]*[^"]*\|rank [0-9] on card[^"]*' /tmp/submit-kill.out | head -3 | cut -c1-300

# --- (c) the table ---
{
  echo "| world $W | result |"
  echo "| --- | --- |"
  echo "| (a) loo-world submit | exit $loo_rc, $loo_s s |"
  echo "| (b1) graphrt alone, rank $((W - 1)) killed mid-replay | others exited after$b1_ms ms |"
  echo "| (b2) orch block, rank $((W - 1)) killed mid-replay | others exited after$b2_ms ms; submit exit $sub_rc |"
  echo "| GPU processes left | $(nvidia-smi --query-compute-apps=pid --format=csv,noheader | wc -l) |"
} >"$OUT/table.txt"
echo "== total $(( $(date +%s) - T0 )) s"
cat "$OUT/table.txt"
