#!/usr/bin/env bash
# On a machine of two GPUs (the device tool's nvidia-h200-x2), from the repo root after
# `source .carry/env.sh`: a 2-rank decode with the all-reduce toggle through `orch submit`,
#  1. spread: two workers as two hosts (g0, g1), one GPU each, NCCL kept off peer-to-peer and
#     shared memory so it goes through sockets as across hosts; rank 0 on g0 listens on TCP;
#  2. one worker with both GPUs (the Unix-socket rendezvous; NCCL free to use NVLink).
# Results and logs go to $OUT (default /tmp/gpu-spread-out).
set -u
OUT=${OUT:-/tmp/gpu-spread-out}
mkdir -p "$OUT"
ORCH="node bin/orch.mjs"
PASS=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
export ORCH_CLUSTER_SECRET=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
redis-server --port 6391 --requirepass "$PASS" --maxmemory-policy noeviction --save '' --appendonly no --daemonize yes --logfile "$OUT/redis.log"
export REDIS_URL="redis://:$PASS@127.0.0.1:6391" ORCH_LOG=warn ORCH_ADVERTISE_ADDR=127.0.0.1
SPEC="$OUT/tp2-decode.yaml"
cat > "$SPEC" <<'YAML'
name: tp2-decode
design: ab
workload:
  runtime: native
  backend: cuda
  kind: decode
  params: { layers: 8, kernels_per_layer: 12 }
  warmup: 5
  steps: 50
toggles: [graph, allreduce]
arms:
  - { name: eager, toggles: { allreduce: true } }
  - { name: graph, toggles: { graph: true, allreduce: true } }
reps: 5
blocks: { count: 1, ranks: 2, placement: spread }
gates:
  identity: { replays: 7 }
  aa: false
metric: { name: ms_per_step, better: lower }
YAML
pids=()
stop() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; pids=(); }
run() { # run NAME PREFIX: submit, then print the summary
  local name=$1
  timeout 200 $ORCH submit "$SPEC" --results "$OUT/$name" >"$OUT/$name.stdout" 2>"$OUT/$name.stderr"; echo "== $name: exit $?"
  tail -c 3000 "$OUT/$name.stdout"; tail -5 "$OUT/$name.stderr"
}
nvidia-smi --query-gpu=index,name,uuid --format=csv,noheader
native/build/graphrt hello --backend cuda | cut -c1-400
# 1. spread over two "hosts", sockets only
export ORCH_PREFIX=spread
NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 $ORCH worker --host g0 --cards 0 --graphrt native/build/graphrt >"$OUT/w-g0.log" 2>&1 & pids+=($!)
NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 $ORCH worker --host g1 --cards 1 --graphrt native/build/graphrt >"$OUT/w-g1.log" 2>&1 & pids+=($!)
$ORCH serve >"$OUT/serve-spread.log" 2>&1 & pids+=($!)
sleep 3
run spread
stop
# 2. both GPUs under one worker
export ORCH_PREFIX=one
$ORCH worker --host g2 --cards 0,1 --graphrt native/build/graphrt >"$OUT/w-g2.log" 2>&1 & pids+=($!)
$ORCH serve >"$OUT/serve-one.log" 2>&1 & pids+=($!)
sleep 3
run one
stop
grep -h '"level":[56]0' "$OUT"/w-*.log | cut -c1-400 | tail -5
redis-cli -p 6391 -a "$PASS" --no-auth-warning shutdown nosave >/dev/null 2>&1
