#!/usr/bin/env python3
"""torch-decode: one token of a small transformer's decode as an orch rank (orch_rank).

With torch and a GPU the model is torch's, float32 on the card; without either it is the same
model in pure Python, each "kernel" a function over lists launched with orch_rank.launch, so
that GRAPH captures through the library's host emulation of a CUDA graph. Either way:

- step(): host-side staging of this step's token into the static input, then the body (embed,
  the layers, final norm and vocab projection into `logits`, position advance), run eagerly or
  through orch_rank.graph with GRAPH. The position lives on the device and advances there: the
  captured body never reads a host value that changes between steps.
- STALE_INPUT, the planted bug: with GRAPH on the staging is skipped. reset() stages token 0, so
  replay 1 computes eager step 1 and replay 2 reads a stale token: the identity gate fails there.

    python3 decode.py                  # serves the orch-rank protocol (ORCH_PARAMS: the params)
    python3 decode.py --standalone     # times eager and graph by themselves, one JSON line
    python3 decode.py --per-rep        # one rep as a per_rep command (DECODE_GRAPH=1: graph), metric lines
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "ranklib", "python"))
import orch_rank  # noqa: E402

# The params: the sizes are the torch model's; the pure-Python model keeps its own, a step of
# milliseconds (a spec sized for a GPU must not make it take minutes), and takes seed and prompt.
# compile: 1 runs each layer's feed-forward through torch.compile (inductor's fused kernels, compiled
# in setup(): seconds from a warm cache, a minute or more from a cold one — the start-up a block
# pays; orch keeps TORCHINDUCTOR_CACHE_DIR across blocks); the pure-Python model ignores it.
DEFAULTS = {"layers": 24, "hidden": 1024, "max_pos": 128, "vocab": 256, "seed": 1, "prompt": 64, "compile": 0}
PYTHON_SIZES = {"layers": 2, "hidden": 16, "max_pos": 16, "vocab": 32}
EPS = 1e-6


def import_torch():
    """torch when it is installed, else None; no CUDA call (prepare() runs with no device)."""
    # cuBLAS repeats its results bit for bit only with a fixed workspace (torch's reproducibility
    # notes), and the eager steps and the capture run on different streams: set before cuBLAS starts
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    try:
        import torch
    except ImportError:
        return None
    return torch


def torch_on_gpu():
    """torch when it is installed and sees a GPU, else None."""
    torch = import_torch()
    return torch if torch is not None and torch.cuda.is_available() else None


def host_weights(torch, p: dict) -> dict:
    """The model's weights in host memory, seeded: the same numbers on any card. The host half of
    the start, which prepare() runs before the lease (ranklib/PROTOCOL.md "Host phase")."""
    h, f, v = p["hidden"], 4 * p["hidden"], p["vocab"]
    torch.manual_seed(p["seed"])

    def weight(rows: int, cols: int):
        return torch.randn(rows, cols) / math.sqrt(cols)

    embed = torch.randn(v, h)
    layers = [{"wq": weight(h, h), "wk": weight(h, h), "wv": weight(h, h), "wo": weight(h, h),
               "up": weight(f, h), "down": weight(h, f)} for _ in range(p["layers"])]  # fmt: skip
    return {"embed": embed, "layers": layers, "head": weight(v, h)}


def checked(params: dict) -> dict:
    unknown = sorted(set(params) - set(DEFAULTS))
    if unknown:
        raise ValueError(f"unknown param(s) {unknown}: torch-decode takes {sorted(DEFAULTS)}")
    p = {**DEFAULTS, **params}
    for name, value in p.items():
        least = {"vocab": 2, "compile": 0}.get(name, 1)
        if name != "seed" and not (isinstance(value, int) and not isinstance(value, bool) and value >= least):
            raise ValueError(f"param {name} must be an integer >= {least}, not {value!r}")
    if not isinstance(p["seed"], int) or isinstance(p["seed"], bool):
        raise ValueError(f"param seed must be an integer, not {p['seed']!r}")
    return p


def prompt_tokens(seed: int, n: int, vocab: int) -> list[int]:
    """A seeded prompt whose consecutive tokens differ, so a stale token always shows."""
    rng = random.Random(seed)
    tokens = [rng.randrange(vocab)]
    while len(tokens) < n:
        tokens.append((tokens[-1] + 1 + rng.randrange(vocab - 1)) % vocab)
    return tokens


class TorchModel:
    """The model on the card. Every buffer the body writes is allocated here and written in place."""

    def __init__(self, torch, p: dict, host: dict | None = None) -> None:
        self.torch, self.F = torch, torch.nn.functional
        # bit-exact float32 on both sides of the identity gate
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cudnn.enabled = False
        h, v, n = p["hidden"], p["vocab"], p["max_pos"]
        dev = torch.device("cuda")
        host = host if host is not None else host_weights(torch, p)
        self.embed = host["embed"].to(dev)
        self.layers = [
            {**{name: w.to(dev) for name, w in layer.items()}, "n1": torch.ones(h, device=dev), "n2": torch.ones(h, device=dev)}
            for layer in host["layers"]
        ]  # fmt: skip
        self.norm, self.head = torch.ones(h, device=dev), host["head"].to(dev)
        self.k_cache = torch.zeros(p["layers"], n, h, device=dev)
        self.v_cache = torch.zeros(p["layers"], n, h, device=dev)
        self.rows = torch.arange(n, device=dev)
        self.max_pos, self.scale = n, 1 / math.sqrt(h)
        self.pos = torch.zeros(1, dtype=torch.long, device=dev)
        self.tok = torch.zeros(1, dtype=torch.long, device=dev)
        self.logits = torch.zeros(v, device=dev)
        self.ffn = torch.compile(self.feed_forward, dynamic=False) if p["compile"] else self.feed_forward
        if p["compile"]:
            self.ffn(torch.zeros(h, device=dev), self.layers[0]["n2"], self.layers[0]["up"], self.layers[0]["down"])
            torch.cuda.synchronize()  # the compile happens here, in setup(), not in the first timed step

    def feed_forward(self, x, n2, up, down):
        F = self.F
        return F.linear(F.silu(F.linear(self.rms(x, n2), up)), down)

    def rms(self, x, w):
        return x * self.torch.rsqrt(x.pow(2).mean() + EPS) * w

    def reset(self, token: int) -> None:
        for t in (self.k_cache, self.v_cache, self.pos, self.logits):
            t.zero_()
        self.tok.fill_(token)

    def stage(self, token: int) -> None:
        self.tok.fill_(token)

    def body(self) -> None:
        F = self.F
        x = F.embedding(self.tok, self.embed)[0]
        later = self.rows > self.pos  # the rows not written yet, masked: shapes stay static
        for i, w in enumerate(self.layers):
            h = self.rms(x, w["n1"])
            q, k, v = F.linear(h, w["wq"]), F.linear(h, w["wk"]), F.linear(h, w["wv"])
            kc, vc = self.k_cache[i], self.v_cache[i]
            kc.index_copy_(0, self.pos, k.unsqueeze(0))
            vc.index_copy_(0, self.pos, v.unsqueeze(0))
            scores = (F.linear(q, kc) * self.scale).masked_fill(later, -math.inf)
            x = x + F.linear(self.torch.softmax(scores, 0) @ vc, w["wo"])
            x = x + self.ffn(x, w["n2"], w["up"], w["down"])
        self.logits.copy_(F.linear(self.rms(x, self.norm), self.head))
        self.pos.add_(1).remainder_(self.max_pos)


# The pure-Python model's kernels: each writes its first argument in place and reads the others
# when it runs (a replay reads a list's contents then, as a kernel reads device memory).


def k_embed(out, table, tok):
    out[:] = table[tok[0]]


def k_rmsnorm(out, x, w):
    r = 1 / math.sqrt(sum(a * a for a in x) / len(x) + EPS)
    out[:] = [a * r * g for a, g in zip(x, w)]


def k_matvec(out, rows, x):
    out[:] = [sum(a * b for a, b in zip(row, x)) for row in rows]


def k_kv_write(k_cache, v_cache, k, v, pos):
    k_cache[pos[0]][:] = k
    v_cache[pos[0]][:] = v


def k_attention(out, q, k_cache, v_cache, pos, scale):
    scores = [sum(a * b for a, b in zip(row, q)) * scale if i <= pos[0] else -math.inf for i, row in enumerate(k_cache)]
    top = max(scores)
    e = [math.exp(s - top) for s in scores]  # exp(-inf) is 0.0: the masked rows add nothing
    total = sum(e)
    out[:] = [sum(e[i] * v_cache[i][j] for i in range(len(e))) / total for j in range(len(out))]


def k_add(x, y):
    x[:] = [a + b for a, b in zip(x, y)]


def k_silu(x):
    x[:] = [a * (0.5 + 0.5 * math.tanh(0.5 * a)) for a in x]  # a·sigmoid(a), no overflow


def k_advance(pos, max_pos):
    pos[0] = (pos[0] + 1) % max_pos


class PythonModel:
    """The same model over Python lists; `pos` and `tok` are one-element lists (device state)."""

    def __init__(self, p: dict) -> None:
        rng = random.Random(p["seed"])
        h, f, v, n = p["hidden"], 4 * p["hidden"], p["vocab"], p["max_pos"]

        def weight(rows: int, cols: int):
            return [[rng.gauss(0, 1 / math.sqrt(cols)) for _ in range(cols)] for _ in range(rows)]

        self.embed = [[rng.gauss(0, 1) for _ in range(h)] for _ in range(v)]
        self.layers = [
            {"n1": [1.0] * h, "wq": weight(h, h), "wk": weight(h, h), "wv": weight(h, h),
             "wo": weight(h, h), "n2": [1.0] * h, "up": weight(f, h), "down": weight(h, f)}
            for _ in range(p["layers"])
        ]  # fmt: skip
        self.norm, self.head = [1.0] * h, weight(v, h)
        self.k_cache = [[[0.0] * h for _ in range(n)] for _ in range(p["layers"])]
        self.v_cache = [[[0.0] * h for _ in range(n)] for _ in range(p["layers"])]
        self.max_pos, self.scale = n, 1 / math.sqrt(h)
        self.pos, self.tok = [0], [0]
        self.x, self.xn, self.q, self.k, self.v = ([0.0] * h for _ in range(5))
        self.attn, self.o, self.up = [0.0] * h, [0.0] * h, [0.0] * f
        self.logits = [0.0] * v

    def reset(self, token: int) -> None:
        for cache in (*self.k_cache, *self.v_cache):
            for row in cache:
                row[:] = [0.0] * len(row)
        self.pos[0] = 0
        self.tok[0] = token
        self.logits[:] = [0.0] * len(self.logits)

    def stage(self, token: int) -> None:
        self.tok[0] = token

    def body(self) -> None:
        launch = orch_rank.launch
        launch(k_embed, self.x, self.embed, self.tok)
        for i, w in enumerate(self.layers):
            launch(k_rmsnorm, self.xn, self.x, w["n1"])
            launch(k_matvec, self.q, w["wq"], self.xn)
            launch(k_matvec, self.k, w["wk"], self.xn)
            launch(k_matvec, self.v, w["wv"], self.xn)
            launch(k_kv_write, self.k_cache[i], self.v_cache[i], self.k, self.v, self.pos)
            launch(k_attention, self.attn, self.q, self.k_cache[i], self.v_cache[i], self.pos, self.scale)
            launch(k_matvec, self.o, w["wo"], self.attn)
            launch(k_add, self.x, self.o)
            launch(k_rmsnorm, self.xn, self.x, w["n2"])
            launch(k_matvec, self.up, w["up"], self.xn)
            launch(k_silu, self.up)
            launch(k_matvec, self.o, w["down"], self.up)
            launch(k_add, self.x, self.o)
        launch(k_rmsnorm, self.xn, self.x, self.norm)
        launch(k_matvec, self.logits, self.head, self.xn)
        launch(k_advance, self.pos, self.max_pos)


class Decode(orch_rank.Program):
    name = "torch-decode"
    toggles = ["GRAPH", "STALE_INPUT"]
    graph_toggle = "GRAPH"

    def prepare(self):
        # imports and the weights in host memory, before the lease when orch starts this process in
        # its host phase (no device visible: nothing here may touch CUDA); setup() moves them over
        self.host = None
        torch = import_torch()
        # no CUDA query before the lease (it would cache "no GPU"): the driver's /proc entry says
        # whether this host has NVIDIA cards at all; without, setup() builds the pure-Python model
        if torch is not None and os.path.exists("/proc/driver/nvidia/version"):
            p = checked(json.loads(os.environ.get("ORCH_PARAMS") or "{}"))
            self.host = (p, host_weights(torch, p))

    def setup(self, params):
        torch = torch_on_gpu()
        p = checked(params)
        if torch is None:
            p.update(PYTHON_SIZES)
            print(f"torch-decode: no torch or no GPU: the pure-Python model at {PYTHON_SIZES}", file=sys.stderr)
        prepared = getattr(self, "host", None)
        host = prepared[1] if prepared is not None and prepared[0] == p else None
        self.host = None  # the card holds them now
        self.model = TorchModel(torch, p, host) if torch else PythonModel(p)
        self.tokens = prompt_tokens(p["seed"], p["prompt"], p["vocab"])
        self.reset()

    def reset(self):
        self.model.reset(self.tokens[0])
        self.k = 0  # steps since reset: which token this step stages

    def step(self, toggles):
        if not (orch_rank.on(toggles["GRAPH"]) and orch_rank.on(toggles["STALE_INPUT"])):
            self.model.stage(self.tokens[self.k % len(self.tokens)])
        self.k += 1
        orch_rank.graph("decode", self.model.body, enabled=toggles["GRAPH"])

    def outputs(self):
        return {"logits": self.model.logits}


def standalone(steps: int, warmup: int, reps: int) -> None:
    """The eager and graph arms timed by the library alone, interleaved (ABBA), one JSON line."""
    params = json.loads(os.environ.get("ORCH_PARAMS") or "{}")
    runner = orch_rank.Runner(Decode())
    runner.start(params)
    arms = {"eager": {"GRAPH": False}, "graph": {"GRAPH": True}}
    medians: dict[str, list[float]] = {arm: [] for arm in arms}
    counted = "no rep"
    for r in range(reps):
        for arm in ("eager", "graph") if r % 2 == 0 else ("graph", "eager"):
            rep = runner.rep(arms[arm], warmup, steps)
            if rep["mode"] != arm:
                raise SystemExit(f"the {arm} arm ran in {rep['mode']} mode")
            medians[arm].append(statistics.median(rep["step_ms"]))
            launches = rep.get("launches", {})
            counted = launches.get("counted") or f"none: {launches.get('reason', '')}"
    eager, graph = statistics.median(medians["eager"]), statistics.median(medians["graph"])
    assert runner.backend is not None
    print(json.dumps({
        "eager_ms_median": eager, "graph_ms_median": graph, "speedup": eager / graph,
        "backend": runner.backend.name, "timing": runner.clock.name,
        "counted": counted,  # the last rep's launches.counted: warmup where the library paused for the timed steps
    }))  # fmt: skip


def per_rep() -> None:
    """One rep the way a per_rep command workload runs it (a fresh process per rep: the baseline a
    resident rank replaces): sizes from ORCH_PARAMS, steps from ORCH_WARMUP/ORCH_STEPS, the graph
    arm by DECODE_GRAPH=1; one JSON line per step on stdout, {"step": i, "ms": t}, warm-up first."""
    runner = orch_rank.Runner(Decode())
    runner.start(json.loads(os.environ.get("ORCH_PARAMS") or "{}"))
    rep = runner.rep({"GRAPH": os.environ.get("DECODE_GRAPH") == "1"}, int(os.environ.get("ORCH_WARMUP", "8")), int(os.environ.get("ORCH_STEPS", "64")))
    for i, ms in enumerate(rep["warmup_ms"] + rep["step_ms"]):
        print(json.dumps({"step": i, "ms": ms}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--standalone", action="store_true", help="time eager and graph outside orch")
    ap.add_argument("--per-rep", action="store_true", help="one rep as a per_rep command workload (metric lines on stdout)")
    ap.add_argument("--steps", type=int, default=64, help="measured steps per rep (standalone)")
    ap.add_argument("--warmup", type=int, default=8, help="warm-up steps per rep (standalone)")
    ap.add_argument("--reps", type=int, default=10, help="reps per arm (standalone)")
    args = ap.parse_args()
    if args.standalone:
        standalone(args.steps, args.warmup, args.reps)
    elif args.per_rep:
        per_rep()
    else:
        orch_rank.serve(Decode())


if __name__ == "__main__":
    main()
