#!/usr/bin/env python3
"""orch_rank's capture audit on a real GPU (ranklib/python/orch_rank/graphs.py): a step with two
capture blockers on two lines — a host-built position copied to the device (as a Hugging Face
Llama's cache_position) and a host sync (.item()) — must answer CAPTURE_FAILED at the first and
list the second in `others`, each at its own line; a step without a blocker captures and replays.
Prints one JSON line per case. On the H200: python3 bench/h200/user-rank/audit-blockers.py"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "ranklib", "python"))
import torch  # noqa: E402
from orch_rank import graphs  # noqa: E402
from orch_rank.errors import CaptureFailed, user_frame  # noqa: E402

graphs.use_backend("cuda")
x = torch.zeros(1024, device="cuda")
pos = [0]


def blocked_step():
    cache_position = torch.arange(pos[0], pos[0] + 1).to("cuda")  # FIRST
    if cache_position.sum().item() < 0:  # SECOND
        raise ValueError("negative")
    x.add_(cache_position.float())
    pos[0] += 1


def clean_step():
    x.mul_(0.5).add_(1.0)


def lines_of(marks):
    src = open(__file__).read().split("\n")
    return {m: next(i + 1 for i, l in enumerate(src) if l.rstrip().endswith(f"# {m}")) for m in marks}


expect = lines_of(["FIRST", "SECOND"])
try:
    graphs.graph("blocked", blocked_step)
    print(json.dumps({"case": "blocked", "ok": False, "why": "captured"}))
except CaptureFailed as e:
    first = user_frame(e)
    others = [o["frame"]["line"] if o["frame"] else None for o in e.others]
    ok = first is not None and first["line"] == expect["FIRST"] and others == [expect["SECOND"]]
    print(json.dumps({"case": "blocked", "ok": ok, "first": first, "message": str(e)[:200], "others": e.others, "expect": expect}))
graphs.graph("clean", clean_step)
graphs.graph("clean", clean_step)
torch.cuda.synchronize()
print(json.dumps({"case": "clean", "ok": graphs.counts() == (1, 2), "counts": graphs.counts(), "torch": torch.__version__}))
