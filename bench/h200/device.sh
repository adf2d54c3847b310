#!/usr/bin/env bash
# The whole device call for issue #20 (card busy share), from a clean tree: .carry/orch-head.tar
# (git archive of the commit measured) and .carry/orch-old.tar (the whole tree of the commit
# before, for a before/after in one session) are made here by bench/h200/pack.sh; .carry/ also
# holds the device kit's node and node_modules. Builds graphrt for CUDA (cmake Release, as
# native/bench/run.sh), and the old tree's only where its native/ differs; then runs
# bench/h200/run.sh with OLD_ORCH (the old tree, its worker and CLI) and, if built, OLD_GRAPHRT.
#   device: cd "$(mktemp -d)" && tar -xf REPO/.carry/orch-head.tar && cp -a REPO/.carry . && OUT=$OUT bash bench/h200/device.sh
set -uo pipefail
out=${OUT:-/tmp/orch-h200}
work=/tmp/h200work
old=/tmp/old
mkdir -p "$work" "$old"
t0=$(date +%s)
tar -C "$old" -xf .carry/orch-old.tar
( cmake -S native -B native/build -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_CUDA=ON && cmake --build native/build -j 14 --target graphrt ) >"$work/build-new.log" 2>&1 &
new=$!
same_native=yes; diff -rq native "$old/native" >/dev/null 2>&1 || same_native=no
if [ $same_native = no ]; then
  ( cmake -S "$old/native" -B /tmp/gb-old -DCMAKE_BUILD_TYPE=Release -DGRAPHRT_CUDA=ON && cmake --build /tmp/gb-old -j 4 --target graphrt ) >"$work/build-old.log" 2>&1
  rc_old=$?
fi
wait $new; rc_new=$?
echo "build: new rc=$rc_new, old native/ the same: $same_native${rc_old:+ (old rc=$rc_old)}, in $(( $(date +%s) - t0 )) s" | tee "$work/summary.txt"
[ $rc_new -eq 0 ] || { tail -30 "$work/build-new.log"; mkdir -p "$out"; tar -C "$work" -czf "$out/h200.tgz" .; exit 1; }
source .carry/env.sh
ln -sfn "$PWD/node_modules" "$old/node_modules"
( cd "$old" && node scripts/build-cli.mjs ) >"$work/build-cli-old.log" 2>&1
[ "${rc_old:-1}" -eq 0 ] && export OLD_GRAPHRT=/tmp/gb-old/graphrt
export OLD_ORCH=$old
WORK=$work OUT=$out bash bench/h200/run.sh
