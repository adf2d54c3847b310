#!/usr/bin/env python3
"""Does an eager rep change how fast the next graph reps run? One resident `graphrt serve` on the
GPU, decode 93 x 30 at hidden 256 (the leave-one-out of decode-loo-93x30.yaml). Each trial runs a
conditioner rep (an eager arm, or nothing), then two reps of all_on (graph, pdl, overlap,
split_combine); conditioners are shuffled per round (seeded). Prints, per conditioner, the median
ms/step of the all_on rep right after it and of the one after that, with the ratio to all_on after
all_on. Seen in orch's leave-one-out on the H200: graph reps after the `base` arm (eager, every
toggle off) ran ~18 % slower until a `no_graph` rep (eager with pdl, overlap, split_combine).
TARGET=no_pdl measures the graph arm without PDL (graph, overlap, split_combine) instead of all_on.
  python3 bench/h200/eager-carryover.py native/build/graphrt [rounds]"""
import json, os, random, statistics, subprocess, sys

binary = sys.argv[1]
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 6
params = {"layers": 93, "kernels_per_layer": 30, "hidden": 256, "max_pos": 4096}
if os.environ.get("SMOKE"):  # a quick check of the script on the CPU backend
    params = {"layers": 2, "kernels_per_layer": 12, "hidden": 64, "max_pos": 64}
backend = os.environ.get("GRAPHRT_BACKEND", "cuda")
ALL = {"pdl": True, "overlap": True, "split_combine": True}
conditioners = {
    "none (the target again)": None,
    "eager, all off (base)": {},
    "eager + pdl": {"pdl": True},
    "eager + overlap": {"overlap": True},
    "eager + split_combine": {"split_combine": True},
    "eager + all three (no_graph)": dict(ALL),
    "graph, all off": {"graph": True},
}
p = subprocess.Popen([binary, "serve", "--backend", backend], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
hello = p.stdout.readline()
n = 0

def rep(arm, toggles, steps=40):
    global n
    n += 1
    req = {"id": str(n), "op": "rep", "arm": arm, "workload": "decode", "params": params, "toggles": toggles, "warmup": 4, "steps": steps}
    p.stdin.write(json.dumps(req) + "\n")
    while True:
        line = json.loads(p.stdout.readline())
        if line.get("type") == "rep":
            return statistics.median(line["step_ms"])
        if line.get("type") == "error":
            raise SystemExit(f"error: {line}")

target = os.environ.get("TARGET", "all_on")
measured = {"graph": True, **ALL} if target == "all_on" else {"graph": True, "overlap": True, "split_combine": True}
for _ in range(3):
    rep(target, measured)  # warm: capture and settle
seen = {k: ([], []) for k in conditioners}
rng = random.Random(1)
for _ in range(rounds):
    order = list(conditioners)
    rng.shuffle(order)
    for k in order:
        if conditioners[k] is not None:
            rep(k, conditioners[k], steps=20)
        seen[k][0].append(rep(target, measured))
        seen[k][1].append(rep(target, measured))
p.stdin.close()
p.wait()
ref = statistics.median(seen["none (the target again)"][0])
print(f"{target} ms/step (median of its 40 steps), {rounds} rounds; ratio to {target} after {target} ({ref:.3f} ms)")
print(f"{'conditioner':32} | {'1st after':>16} | {'ratio':>6} | {'2nd after':>16} | {'ratio':>6} | 1st, every round")
for k, (a, b) in seen.items():
    ma, mb = statistics.median(a), statistics.median(b)
    print(f"{k:32} | {ma:16.3f} | {ma/ref:6.3f} | {mb:16.3f} | {mb/ref:6.3f} | {' '.join(f'{x:.2f}' for x in a)}")
