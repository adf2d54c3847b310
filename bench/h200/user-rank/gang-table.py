#!/usr/bin/env python3
"""The table of a gang's runs through `orch submit`, printed as markdown.

    gang-table.py OUT NAME...

OUT holds exits.txt (lines "NAME: exit CODE in S s") and, per NAME, the results directory
OUT/NAME/<experiment>/ (report.json, events.jsonl). One row per run and arm: exit, verdict, reps
measured of planned, median ms/step and, on the graph arm, each rank's identity gate (pass, mode,
message) or error; then per run graph/eager, the ratio of the medians. Used by gang-one-gpu.sh
(torch-tp) and cuda-tp-one-gpu.sh (cuda-tp).
"""

import glob
import json
import os
import sys


def first_bad(gate):
    """Where a failed gate's graph side first differed from eager ("" when it did not)."""
    if gate.get("first_bad_replay") is None:
        return ""
    return f"replay {gate['first_bad_replay']} output {gate.get('first_bad_output')} "


def gates_of(events):
    ranked = [e for e in events if e.get("rank") != ""]
    gates = [
        f"{e['rank']}: {e['event'].get('pass')}, {e['event'].get('mode')}, {first_bad(e['event'])}"
        f"{str(e['event'].get('message') or e['event'].get('reason') or '')[:80]}"
        for e in ranked
        if e["event"].get("type") == "gate"
    ]
    gates += [
        f"{e['rank']}: error {e['event'].get('code')}: {str(e['event'].get('message'))[:80]}"
        for e in ranked
        if e["event"].get("type") == "error"
    ]
    return "; ".join(gates)


def main(out, names):
    exits = dict(line.split(": exit ", 1) for line in open(os.path.join(out, "exits.txt")).read().splitlines())
    print("| run | exit | verdict | arm | reps | median ms/step | identity gate (rank: pass, mode, message) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    ratios = []
    for name in names:
        reports = sorted(glob.glob(os.path.join(out, name, "*", "report.json")))
        if not reports:
            print(f"| {name} | {exits.get(name, '?')} | no report | | | | see {name}.log |")
            continue
        report = json.load(open(reports[0]))
        events = [json.loads(line) for line in open(os.path.join(os.path.dirname(reports[0]), "events.jsonl"))]
        medians = {}
        for a in report["arms"]:
            medians[a["arm"]] = a["median"]
            median = "—" if a["median"] is None else f"{a['median']:.4f}"
            gates = gates_of(events) if a["arm"] == "graph" else ""
            print(
                f"| {name} | {exits.get(name, '?')} | {report['verdict']} | {a['arm']} | {a['n']}/{a['planned']} | {median} | {gates} |"
            )
        if medians.get("graph") and medians.get("eager"):
            ratios.append(f"{name}: graph/eager {medians['graph'] / medians['eager']:.3f}")
    if ratios:
        print()
        print("; ".join(ratios))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
