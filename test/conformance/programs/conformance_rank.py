"""The conformance suite's program for orch_rank.py (test/conformance/rank-protocol.test.ts); its
twin is conformance_rank.cpp for orch_rank.h: the same state, steps and outputs, so both answer
the same requests with the same hashes.

State: 8 float64 values, reset to seed + i. A step adds `delta` to each through launch(): 1 with
PDL on, 2 with it off (a value a capture freezes, so a graph replayed under the other PDL setting
gives the other sum). GRAPH on: the step runs as graph("body"). ORCH_PARAMS {"exchange": KEY}
exchanges b"conformance-bytes" under KEY in setup() (counters: exchanged bytes); {"step_exchange":
KEY} exchanges b"step-bytes" under KEY in the process's first step(), inside a request (counters:
step_exchanged, the bytes it got back, when the parameter is given); under the host
phase prepare() checks that no device is visible, and CONFORMANCE_TOUCH_CUDA=1 makes it "initialise
CUDA" as torch reports it (a stand-in torch module: no torch here).
"""

import os
import sys
import types
from array import array

import orch_rank


def add(state, delta):
    for i in range(len(state)):
        state[i] += delta


class Conformance(orch_rank.Program):
    name = "conformance"
    toggles = ["GRAPH", "PDL"]
    graph_toggle = "GRAPH"
    backend = "cpu"

    def prepare(self):
        if os.environ.get("ORCH_HOST_PHASE") == "1" and os.environ.get("CUDA_VISIBLE_DEVICES") != "":
            raise RuntimeError("a device is visible during prepare()")
        if os.environ.get("CONFORMANCE_TOUCH_CUDA") == "1":
            torch = types.ModuleType("torch")
            torch.cuda = types.SimpleNamespace(is_initialized=lambda: True)
            sys.modules["torch"] = torch

    def setup(self, params):
        want = params.get("expect_devices")
        if want is not None and os.environ.get("CUDA_VISIBLE_DEVICES") != want:
            raise RuntimeError(f"CUDA_VISIBLE_DEVICES is {os.environ.get('CUDA_VISIBLE_DEVICES')!r}, not {want!r}")
        self.exchanged = len(orch_rank.exchange(params["exchange"], b"conformance-bytes")) if "exchange" in params else 0
        self.step_key = params.get("step_exchange")
        self.step_exchanged = None  # the first step's exchange: not yet made
        self.state = array("d", [0.0] * 8)

    def reset(self):
        for i in range(8):
            self.state[i] = float(orch_rank.seed() + i)

    def step(self, toggles):
        if self.step_key is not None and self.step_exchanged is None:
            self.step_exchanged = 0  # once, even when it raises
            self.step_exchanged = len(orch_rank.exchange(self.step_key, b"step-bytes"))
        delta = 1.0 if orch_rank.on(toggles["PDL"]) else 2.0
        orch_rank.graph("body", lambda: orch_rank.launch(add, self.state, delta), enabled=toggles["GRAPH"])

    def outputs(self):
        return {"state": self.state}

    def counters(self):
        if self.step_key is None:
            return {"exchanged": self.exchanged}
        return {"exchanged": self.exchanged, "step_exchanged": self.step_exchanged or 0}


orch_rank.serve(Conformance())
