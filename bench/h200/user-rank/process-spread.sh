#!/usr/bin/env bash
# Why does one eager PyTorch step differ by up to 1.8× between processes of the same program
# (truth2.txt, 2026-12-05: 15.4 to 28.1 ms for the torch-decode example; 8.9 and 15.9 ms on
# 2026-12-04) while the graph step moves under 1 %? That spread is what kept issue 40's torch eager
# rows (counting on/off 1.028, idle library 0.897) from measuring the library, and it widens every
# A/A interval of an eager arm. Asked here: is it where the process runs? PROCESS_SPREAD_N processes
# (default 5) of `decode.py --standalone` each way, alternated: unpinned, as orch starts a rank
# today, and pinned with taskset to one core of the GPU's NUMA node (nvidia-smi topo), with the
# machine's topology printed first. Each line: the eager and graph medians of one process.
#   source .carry/env.sh && OUT=$OUT bash bench/h200/user-rank/process-spread.sh
set -uo pipefail
out=${OUT:-/tmp/orch-process-spread}
work=${WORK:-/tmp/process-spread}
mkdir -p "$out" "$work"
n=${PROCESS_SPREAD_N:-5}
{
  echo "nproc $(nproc)"
  lscpu | grep -E '^(Model name|Socket|Core|Thread|NUMA)' || true
  nvidia-smi topo -m 2>&1 | head -4
} | tee "$work/topology.txt"
# The first CPU of the GPU's affinity list ("0-7" or "0,2,4"), else CPU 0.
core=$(nvidia-smi topo -m 2>/dev/null | awk '/^GPU0/ { for (i = 2; i <= NF; i++) if ($i ~ /^[0-9]+([-,][0-9]+)*$/) { print $i; exit } }' | grep -oE '^[0-9]+')
core=${core:-0}
echo "pinned runs: taskset -c $core" | tee -a "$work/topology.txt"
one() { # name, command...
  local name=$1; shift
  timeout 90 "$@" python3 examples/torch-decode/decode.py --standalone --steps 32 --warmup 4 --reps 4 >"$work/$name.json" 2>"$work/$name.err"
  echo "$name: exit $? $(tail -1 "$work/$name.json" | cut -c1-200)"
}
for i in $(seq "$n"); do
  one "free-$i" env
  one "pinned-$i" taskset -c "$core"
done | tee "$work/runs.txt"
node -e '
const fs = require("fs"), dir = process.argv[1];
const rows = { free: [], pinned: [] };
for (const f of fs.readdirSync(dir).filter((f) => /^(free|pinned)-\d+\.json$/.test(f))) {
  try { const j = JSON.parse(fs.readFileSync(`${dir}/${f}`, "utf8").trim().split("\n").pop()); rows[f.split("-")[0]].push(j); } catch {}
}
const med = (a) => { const s = [...a].sort((x, y) => x - y); return s.length === 0 ? NaN : s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2; };
console.log("| processes | n | eager ms: min / median / max | max ÷ min | graph ms: min / median / max | max ÷ min |");
console.log("| --- | --- | --- | --- | --- | --- |");
for (const [k, js] of Object.entries(rows)) {
  const e = js.map((j) => j.eager_ms_median), g = js.map((j) => j.graph_ms_median);
  const f = (a) => `${Math.min(...a).toFixed(2)} / ${med(a).toFixed(2)} / ${Math.max(...a).toFixed(2)}`;
  console.log(`| ${k} | ${js.length} | ${f(e)} | ${(Math.max(...e) / Math.min(...e)).toFixed(3)} | ${f(g)} | ${(Math.max(...g) / Math.min(...g)).toFixed(3)} |`);
}' "$work" | tee "$out/process-spread.md"
tar -C "$work" -czf "$out/process-spread.tgz" .
