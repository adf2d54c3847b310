#!/usr/bin/env python3
"""hf-llama-decode: one token of a Hugging Face transformers Llama's decode with a static KV cache,
as an orch rank (orch_rank), for issue 40's "would a graph help" check on a third program.

The model is built from a LlamaConfig with random weights (nothing is downloaded), bf16 on the
card: 16 layers, hidden 1024, 16 heads over 4 KV heads by default (ORCH_PARAMS overrides). The
cache is transformers' StaticCache, so every step has the same shapes and the same buffers, and the
position lives on the device and advances there: GRAPH captures the forward with orch_rank.graph
(torch's CUDA graphs) and replays it. attention: "eager" by default ("sdpa" may be asked for).

Nothing of a step is copied from the host inside the captured body: the causal mask over the
static cache is this program's own 4D additive mask, made on the device from the position by
tensor ops against constants made in setup(). transformers builds it otherwise
(masking_utils.eager_mask: torch.tensor(0.0, device=...), a host-to-device copy of a pageable
scalar, which a capture refuses: "Cannot copy between CPU and CUDA tensors during CUDA graph
capture unless the CPU tensor is pinned"); given a 4D mask it uses it as it is. The eager arm
runs the same body, so eager and graph differ only by the graph.

    python3 hf-llama-decode.py                # serves the orch-rank protocol
    python3 hf-llama-decode.py --standalone   # eager and graph timed by themselves, one JSON line
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "ranklib", "python"))
import orch_rank  # noqa: E402

DEFAULTS = {"layers": 16, "hidden": 1024, "heads": 16, "kv_heads": 4, "ffn": 2816, "vocab": 8192, "max_pos": 128, "seed": 1, "attention": "eager"}


def static_cache(transformers, config, max_len: int, torch):
    """StaticCache across transformers versions: pass only the arguments this version takes."""
    cls = transformers.StaticCache
    want = {"config": config, "max_batch_size": 1, "batch_size": 1, "max_cache_len": max_len, "device": torch.device("cuda"), "dtype": torch.bfloat16}
    accepted = inspect.signature(cls.__init__).parameters
    return cls(**{k: v for k, v in want.items() if k in accepted})


class LlamaDecode(orch_rank.Program):
    name = "hf-llama-decode"
    toggles = ["GRAPH"]
    graph_toggle = "GRAPH"

    def setup(self, params):
        import torch
        import transformers

        unknown = sorted(set(params) - set(DEFAULTS))
        if unknown:
            raise ValueError(f"unknown param(s) {unknown}: hf-llama-decode takes {sorted(DEFAULTS)}")
        if not torch.cuda.is_available():
            raise RuntimeError("hf-llama-decode needs a GPU")
        p = {**DEFAULTS, **params}
        self.torch = torch
        config = transformers.LlamaConfig(
            hidden_size=p["hidden"], intermediate_size=p["ffn"], num_hidden_layers=p["layers"],
            num_attention_heads=p["heads"], num_key_value_heads=p["kv_heads"], vocab_size=p["vocab"],
            max_position_embeddings=max(256, p["max_pos"]),
        )  # fmt: skip
        config._attn_implementation = p["attention"]
        torch.manual_seed(p["seed"])
        with torch.device("cuda"):
            self.model = transformers.LlamaForCausalLM(config).to(torch.bfloat16).eval()
        self.max_pos = p["max_pos"]
        self.cache = static_cache(transformers, config, self.max_pos, torch)
        self.tok = torch.zeros(1, 1, dtype=torch.long, device="cuda")
        self.pos = torch.zeros(1, dtype=torch.long, device="cuda")
        self.logits = torch.zeros(p["vocab"], dtype=torch.float32, device="cuda")
        # the mask's constants, on the device once: a step reads them, never builds them from host values
        self.kv_index = torch.arange(self.max_pos, dtype=torch.long, device="cuda").view(1, 1, 1, self.max_pos)
        self.mask_open = torch.zeros((), dtype=torch.bfloat16, device="cuda")
        self.mask_shut = torch.full((), torch.finfo(torch.bfloat16).min, dtype=torch.bfloat16, device="cuda")
        self.mask = torch.empty(1, 1, 1, self.max_pos, dtype=torch.bfloat16, device="cuda")
        self.tokens = [int(t) for t in torch.randint(0, p["vocab"], (64,), generator=torch.Generator().manual_seed(p["seed"]))]
        self.body()  # a cache that allocates its layers on first use does it here, not in a capture
        torch.cuda.synchronize()
        self.reset()

    def body(self) -> None:
        with self.torch.no_grad():
            # causal over the static cache: key slot j is seen by the query at position pos iff j <= pos
            self.torch.where(self.kv_index <= self.pos.view(1, 1, 1, 1), self.mask_open, self.mask_shut, out=self.mask)
            out = self.model(
                input_ids=self.tok, attention_mask=self.mask, position_ids=self.pos.view(1, 1), cache_position=self.pos,
                past_key_values=self.cache, use_cache=True,
            )  # fmt: skip
            self.logits.copy_(out.logits[0, -1].float())
            self.pos.add_(1).remainder_(self.max_pos)

    def reset(self):
        self.cache.reset()
        self.pos.zero_()
        self.logits.zero_()
        self.k = 0

    def step(self, toggles):
        self.tok.fill_(self.tokens[self.k % len(self.tokens)])
        self.k += 1
        orch_rank.graph("llama", self.body, enabled=toggles["GRAPH"])

    def outputs(self):
        return {"logits": self.logits}


def standalone(steps: int, warmup: int, reps: int) -> None:
    """Eager and graph timed by the library alone, interleaved (ABBA), one JSON line."""
    runner = orch_rank.Runner(LlamaDecode())
    runner.start(json.loads(os.environ.get("ORCH_PARAMS") or "{}"))
    arms = {"eager": {"GRAPH": False}, "graph": {"GRAPH": True}}
    medians: dict[str, list[float]] = {arm: [] for arm in arms}
    for r in range(reps):
        for arm in ("eager", "graph") if r % 2 == 0 else ("graph", "eager"):
            rep = runner.rep(arms[arm], warmup, steps)
            if rep["mode"] != arm:
                raise SystemExit(f"the {arm} arm ran in {rep['mode']} mode")
            medians[arm].append(statistics.median(rep["step_ms"]))
    eager, graph = statistics.median(medians["eager"]), statistics.median(medians["graph"])
    print(json.dumps({"eager_ms_median": eager, "graph_ms_median": graph, "speedup": eager / graph}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--standalone", action="store_true")
    ap.add_argument("--steps", type=int, default=32)
    ap.add_argument("--warmup", type=int, default=4)
    ap.add_argument("--reps", type=int, default=4)
    args = ap.parse_args()
    if args.standalone:
        standalone(args.steps, args.warmup, args.reps)
    else:
        orch_rank.serve(LlamaDecode())


if __name__ == "__main__":
    main()
