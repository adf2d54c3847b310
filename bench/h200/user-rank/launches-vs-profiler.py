#!/usr/bin/env python3
"""Do the injection library's launch counts (native/inject/, read by orch_rank per measured step)
agree with torch.profiler's? One JSON line on stdout.

    CUDA_INJECTION64_PATH=$PWD/build/liborch_inject.so \\
    ORCH_PARAMS='{"layers":24,"hidden":1024,"max_pos":128}' \\
        python3 bench/h200/user-rank/launches-vs-profiler.py [--steps 16] [--warmup 8]

examples/torch-decode/decode.py's Decode, eager: reset, `warmup` steps, then `steps` steps
- under torch.profiler, in a child process started without CUDA_INJECTION64_PATH: CUPTI takes
  one subscriber per process, and the profiler (Kineto) and the injection library both subscribe,
  so neither may see the other's process. A step's launches are the CPU-side launch API calls
  (cudaLaunchKernel & co., the runtime/driver events Kineto records with ProfilerActivity.CUDA)
  that start inside the step's record_function range;
- through orch_rank.Runner.rep in this process, where the driver loaded the injection library at
  cuInit: the rep's `launches.kernels`, one count per measured step.
Then a graph rep, for the graph launches per replayed step and the kernels its prepare captured.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
# the launch API calls, runtime and driver (a cuLaunchKernel comes from Triton or a library that
# calls the driver itself); a cudaGraphLaunch is no kernel launch of the step's own
KERNEL_LAUNCH_APIS = {
    "cudaLaunchKernel", "cudaLaunchKernelExC", "cudaLaunchKernelEx", "cudaLaunchCooperativeKernel",
    "cuLaunchKernel", "cuLaunchKernelEx", "cuLaunchCooperativeKernel",
}  # fmt: skip
GRAPH_LAUNCH_APIS = {"cudaGraphLaunch", "cuGraphLaunch"}


def need_gpu():
    try:
        import torch
    except ImportError:
        raise SystemExit("launches-vs-profiler.py: needs torch with CUDA and a GPU: torch is not installed") from None
    if not torch.cuda.is_available():
        raise SystemExit("launches-vs-profiler.py: needs a GPU: torch.cuda.is_available() is False (a CPU machine has no launches to count)")
    return torch


def load_decode():
    spec = importlib.util.spec_from_file_location("decode", os.path.join(ROOT, "examples", "torch-decode", "decode.py"))
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # its own sys.path line finds ranklib/python's orch_rank
    return module


def params() -> dict:
    return json.loads(os.environ.get("ORCH_PARAMS") or "{}")


def profiled(steps: int, warmup: int) -> dict:
    """The child: `steps` eager steps under torch.profiler, the launch API calls of each."""
    torch = need_gpu()
    from torch.profiler import ProfilerActivity, profile, record_function

    program = load_decode().Decode()
    program.setup(params())
    program.reset()
    off = {"GRAPH": False, "STALE_INPUT": False}
    for _ in range(warmup):  # as a rep's warm-up: lazy module loads and cuBLAS setup fall here
        program.step(off)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for i in range(steps):
            with record_function(f"orch_step_{i}"):
                program.step(off)
            torch.cuda.synchronize()  # as the rep's end-event synchronize: the next step starts idle
    events = list(prof.events())
    ranges = {int(e.name.rsplit("_", 1)[1]): e.time_range for e in events if e.name.startswith("orch_step_")}
    kernels, graphs, any_launch = [0] * steps, [0] * steps, [0] * steps
    names0: dict[str, int] = {}  # every runtime/driver API the profiler saw in step 0, by name
    for e in events:
        step = next((i for i, r in ranges.items() if r.start <= e.time_range.start <= r.end), None)
        if step is None:
            continue
        if step == 0 and e.name.startswith("cu"):
            names0[e.name] = names0.get(e.name, 0) + 1
        # any launch API, also one the list above does not name (a _ptsz entry point, a newer name)
        if "Launch" in e.name and e.name not in GRAPH_LAUNCH_APIS and "HostFunc" not in e.name and e.name.startswith("cu"):
            any_launch[step] += 1
        counts = kernels if e.name in KERNEL_LAUNCH_APIS else graphs if e.name in GRAPH_LAUNCH_APIS else None
        if counts is not None:
            counts[step] += 1
    device_kernels = sum(1 for e in events if str(e.device_type).endswith("CUDA") and not e.name.startswith(("Memcpy", "Memset")))
    by_api, orphans = kernels_by_api(prof, steps)
    return {
        "kernels": kernels, "graphs": graphs, "any_launch": any_launch, "names0": names0, "device_kernels_total": device_kernels,
        "device_kernels_by_api": by_api, "orphan_kernels": orphans, "torch": torch.__version__,
    }  # fmt: skip


def kernels_by_api(prof, steps: int) -> tuple[dict, dict]:
    """The GPU kernels per step by the host API the profiler correlates each with (Kineto's
    correlation id: the runtime or driver call that enqueued it), and, by name over the whole run,
    the kernels whose correlation id has no host API event: where the GPU's kernel count and the
    launch APIs' part. Best effort: Kineto's event accessors differ between torch versions."""
    try:
        ev = list(prof.profiler.kineto_results.events())
        api = {e.correlation_id(): e.name() for e in ev if not str(e.device_type()).endswith("CUDA") and e.name().startswith("cu")}
        by_api: dict[str, float] = {}
        orphans: dict[str, int] = {}
        for e in ev:
            if not str(e.device_type()).endswith("CUDA") or e.name().startswith(("Memcpy", "Memset")):
                continue
            who = api.get(e.correlation_id(), "none")
            by_api[who] = by_api.get(who, 0) + 1 / steps
            if who == "none":
                orphans[e.name()[:160]] = orphans.get(e.name()[:160], 0) + 1
        return {k: round(v, 2) for k, v in by_api.items()}, orphans
    except Exception as err:  # noqa: BLE001 - a diagnostic: say why, never fail the comparison
        return {"error": f"{type(err).__name__}: {err}"[:300]}, {}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=16)
    ap.add_argument("--warmup", type=int, default=8)
    ap.add_argument("--profiler-child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.profiler_child:
        print(json.dumps(profiled(args.steps, args.warmup)))
        return
    need_gpu()
    lib = os.environ.get("CUDA_INJECTION64_PATH")
    if not lib:
        raise SystemExit("launches-vs-profiler.py: set CUDA_INJECTION64_PATH to liborch_inject.so (native/inject/) before starting")

    env = {k: v for k, v in os.environ.items() if k != "CUDA_INJECTION64_PATH"}
    child = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--profiler-child", "--steps", str(args.steps), "--warmup", str(args.warmup)],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    if child.returncode != 0:
        raise SystemExit(f"launches-vs-profiler.py: the profiler run failed ({child.returncode}):\n{child.stderr[-4000:]}")
    prof = json.loads(child.stdout.strip().splitlines()[-1])

    decode = load_decode()
    runner = decode.orch_rank.Runner(decode.Decode())  # the orch_rank decode.py imported
    runner.start(params())
    assert runner.backend is not None and runner.backend.name == "cuda", runner.backend
    eager = runner.rep({"GRAPH": False}, args.warmup, args.steps)
    if eager["launches"]["source"] != "cupti":
        raise SystemExit(f"launches-vs-profiler.py: no counts from {lib}: {eager['launches']['reason']}")
    graph = runner.rep({"GRAPH": True}, args.warmup, args.steps)
    print(json.dumps({
        "profiler_launches_per_step": prof["kernels"],
        "profiler_any_launch_per_step": prof["any_launch"],
        "profiler_launch_names_step0": prof["names0"],
        "injection_kernels_per_step": eager["launches"]["kernels"],
        "equal": prof["kernels"] == eager["launches"]["kernels"],
        "profiler_graph_launches_per_step_eager": prof["graphs"],
        "profiler_device_kernels_total": prof["device_kernels_total"],
        "profiler_device_kernels_by_api": prof["device_kernels_by_api"],
        "profiler_orphan_kernels": prof["orphan_kernels"],
        "injection_memcpy_per_step": eager["launches"]["memcpy"],
        "injection_syncs_per_step": eager["launches"]["syncs"],
        "graph_launches_per_step_in_graph_mode": graph["launches"]["graphs"],
        "kernels_per_step_in_graph_mode": graph["launches"]["kernels"],
        "captured_in_graph_rep": graph["launches"]["captured"],
        "graph_rep": graph["graph"],
        "clocks": eager.get("clocks"),
        "xid_events": eager.get("xid_events"),
        "params": params(), "steps": args.steps, "warmup": args.warmup, "torch": prof["torch"],
    }))  # fmt: skip


if __name__ == "__main__":
    main()
