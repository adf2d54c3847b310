#!/usr/bin/env python3
"""torch-tp: one decode step of a tensor-parallel MLP stack as an orch rank of a gang (orch_rank).

Every rank holds a 1/WORLD_SIZE shard of each layer: the up projection split by its output rows
(column-parallel), the down projection by its input columns (row-parallel), so each layer is
    x += all_reduce(down_shard(silu(up_shard(rms(x)))))
with exactly one all-reduce per layer and no other communication. The full weights are made on
the host from the seed and sliced: every rank, and every world size, computes the same model.

The process group comes from the environment the worker sets for a gang (MASTER_ADDR,
MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK): nccl on a GPU, gloo on the CPU.

- step(): stage this step's input row into the static `x`, then the body, eager or through
  orch_rank.graph with GRAPH. On a GPU the capture holds the NCCL all-reduces (torch.cuda.graph
  captures NCCL collectives). On the CPU (gloo) there is nothing to capture a collective into: the
  graph arm raises orch_rank's CaptureFailed with the reason, so orch reports the arm as not
  measured and measures eager.
- STALE_INPUT, the planted bug, on one rank only (rank 1, or rank 0 in a gang of one): with GRAPH
  on, that rank skips the staging, so its replays read a stale input. Its stale partial sum
  reaches every rank through the all-reduce: the identity gate fails on every rank of the gang.

    python3 tp.py      # serves the orch-rank protocol (ORCH_PARAMS: the params)
"""

from __future__ import annotations

import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "ranklib", "python"))
import orch_rank  # noqa: E402
from orch_rank.errors import CaptureFailed  # noqa: E402

DEFAULTS = {"layers": 4, "hidden": 256, "ffn": 1024, "inputs": 16, "seed": 1}
EPS = 1e-6


def checked(params: dict, world: int) -> dict:
    unknown = sorted(set(params) - set(DEFAULTS))
    if unknown:
        raise ValueError(f"unknown param(s) {unknown}: torch-tp takes {sorted(DEFAULTS)}")
    p = {**DEFAULTS, **params}
    for name, value in p.items():
        if not (isinstance(value, int) and not isinstance(value, bool) and (value >= 1 or name == "seed")):
            raise ValueError(f"param {name} must be an integer >= 1, not {value!r}")
    if p["ffn"] % world != 0:
        raise ValueError(f"param ffn ({p['ffn']}) must divide by the gang's WORLD_SIZE ({world})")
    return p


def stale_rank(world: int) -> int:
    """The one rank STALE_INPUT acts on."""
    return 1 if world > 1 else 0


class TensorParallel(orch_rank.Program):
    name = "torch-tp"
    toggles = ["GRAPH", "STALE_INPUT"]
    graph_toggle = "GRAPH"

    def setup(self, params):
        # cuBLAS repeats its results bit for bit only with a fixed workspace (torch's reproducibility notes)
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        import torch
        import torch.distributed as dist

        self.torch, self.dist = torch, dist
        self.rank, self.world = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
        p = checked(params, self.world)
        self.cuda = torch.cuda.is_available()
        if self.cuda:
            # the worker gives each rank its card(s) in CUDA_VISIBLE_DEVICES: usually one, device 0
            local = int(os.environ.get("LOCAL_RANK", "0"))
            torch.cuda.set_device(local if torch.cuda.device_count() > local else 0)
            torch.backends.cuda.matmul.allow_tf32 = False
            dev = torch.device("cuda", torch.cuda.current_device())
        else:
            self.backend = "cpu"
            dev = torch.device("cpu")
        if not dist.is_initialized():
            dist.init_process_group("nccl" if self.cuda else "gloo", init_method="env://", rank=self.rank, world_size=self.world)
        self.dev = dev
        h, f, w = p["hidden"], p["ffn"], self.world
        shard = slice(self.rank * (f // w), (self.rank + 1) * (f // w))
        g = torch.Generator().manual_seed(p["seed"])
        self.layers = []
        for _ in range(p["layers"]):
            up = torch.randn(f, h, generator=g) / math.sqrt(h)  # column-parallel: rows split
            down = torch.randn(h, f, generator=g) / math.sqrt(f)  # row-parallel: columns split
            self.layers.append({
                "n": torch.ones(h, device=dev),
                "up": up[shard].contiguous().to(dev),
                "down": down[:, shard].contiguous().to(dev),
            })  # fmt: skip
        self.inputs = (torch.randn(p["inputs"], h, generator=g)).to(dev)
        self.x = torch.zeros(h, device=dev)
        self.partial = torch.zeros(h, device=dev)
        self.y = torch.zeros(h, device=dev)
        self.reset()

    def reset(self):
        self.x.copy_(self.inputs[0])
        self.y.zero_()
        self.k = 0  # steps since reset: which input this step stages

    def body(self):
        F, torch = self.torch.nn.functional, self.torch
        h = self.x
        for w in self.layers:
            a = F.silu(F.linear(h * torch.rsqrt(h.pow(2).mean() + EPS) * w["n"], w["up"]))
            self.partial.copy_(F.linear(a, w["down"]))
            self.dist.all_reduce(self.partial)  # the layer's one collective
            h = h + self.partial
        self.y.copy_(h)

    def step(self, toggles):
        graph = orch_rank.on(toggles["GRAPH"])
        if graph and not self.cuda:
            raise CaptureFailed(
                "torch-tp: no CUDA graph on the CPU: the gloo all-reduce runs on the host and cannot be captured; "
                "the graph arm needs a GPU (nccl), eager is measured"
            )
        if not (graph and orch_rank.on(toggles["STALE_INPUT"]) and self.rank == stale_rank(self.world)):
            self.x.copy_(self.inputs[self.k % len(self.inputs)])
        self.k += 1
        orch_rank.graph("tp", self.body, enabled=toggles["GRAPH"])

    def outputs(self):
        return {"y": self.y}


if __name__ == "__main__":
    orch_rank.serve(TensorParallel())
