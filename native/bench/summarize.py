"""The gate table of native/bench/run.sh, from $OUT/gates.jsonl (one protocol line per row)."""
import json
import sys
from pathlib import Path

out = Path(sys.argv[1])
runs = {}
for raw in (out / "gates.jsonl").read_text().splitlines():
    try:
        row = json.loads(raw)
    except json.JSONDecodeError:
        continue
    r = runs.setdefault(row["gate_run"], {"rc": row["rc"], "want": row["want"], "lines": []})
    r["lines"].append(row["line"])

print(f"{'gate run':40} {'rc':>3} {'want':>4}  result")
bad = 0
for name, r in runs.items():
    by = {}
    for l in r["lines"]:
        by.setdefault(l["type"], []).append(l)
    gate = (by.get("gate") or [None])[0]
    cap = (by.get("capture") or [None])[0]
    rep = (by.get("rep") or [None])[0]
    if gate:
        res = (f"pass={gate['pass']} first_bad_replay={gate['first_bad_replay']} "
               f"nodes={gate['nodes']} launches={gate['launches_per_step']}")
    elif rep:
        res = (f"mode={rep['mode']} capture_ok={cap['ok'] if cap else None} "
               f"nodes={rep['nodes']} launches={rep['launches_per_step']}")
        if cap and not cap["ok"]:
            res += f" reason={cap['reason'][:90]!r}"
        if cap and cap["ok"]:
            res += f" capture_ms={cap['capture_ms']:.1f} instantiate_ms={cap['instantiate_ms']:.1f}"
        if rep.get("clocks"):
            c = rep["clocks"]
            res += f" clocks sm {c['start']['sm_mhz']}->{c['end']['sm_mhz']} MHz reasons {c['end']['reasons']}"
    elif by.get("probe"):
        res = " ".join(f"{p['name']}={p['pass']}" for p in by["probe"])
    else:
        res = "; ".join(l.get("message", l["type"]) for l in r["lines"])[:160]
    ok = r["rc"] == r["want"]
    bad += not ok
    print(f"{name:40} {r['rc']:>3} {r['want']:>4}  {'' if ok else 'UNEXPECTED '}{res}")
print(f"gate runs: {len(runs)}, unexpected exit codes: {bad}")
