"""The order of operations of a rep and of an identity gate (ranklib/PROTOCOL.md), over a
program's four functions, with no protocol around it: serve() answers requests with it, and a
program's own standalone timing (examples/torch-decode/decode.py --standalone) uses it as is.

The program: setup(params), reset(), step(toggles), outputs(); attributes name, toggles,
optionally graph_toggle (the toggle that turns capture on), backend ("cpu" to stay off the GPU),
counters() (a dict of numbers reported with every rep) and device_counters (True: read the
injection library's launch counts on any backend, not only cuda; False: never; device_counters.py).
"""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping

from . import graphs
from .backend import Backend, detect
from .device_counters import DeviceCounters
from .device_trace import begin_trace
from .errors import RankError, StepFailed
from .hashing import hash_outputs
from .timing import CudaEvents, HostClock, clock_for, monotonic_ns
from .toggles import on

Toggles = Mapping[str, "bool | str"]


def _user(what: str, fn: Callable[..., Any], *args: Any) -> Any:
    """Calls the program's own code: what it raises is STEP_FAILED (a graph's CAPTURE_FAILED kept)."""
    try:
        return fn(*args)
    except RankError:
        raise
    except Exception as e:
        raise StepFailed(f"{what} raised {type(e).__name__}: {e}") from e


class Runner:
    def __init__(self, program: Any) -> None:
        missing = [f for f in ("setup", "reset", "step", "outputs") if not callable(getattr(program, f, None))]
        if missing:
            raise TypeError(f"the program has no {', '.join(f + '()' for f in missing)}")
        self.program = program
        self.name = str(getattr(program, "name", None) or type(program).__name__)
        self.toggles = list(getattr(program, "toggles", []))
        self.graph_toggle = getattr(program, "graph_toggle", None)
        if not all(isinstance(t, str) and t for t in self.toggles) or len(set(self.toggles)) != len(self.toggles):
            raise ValueError(f"program.toggles must be distinct strings, not {self.toggles!r}")
        if self.graph_toggle is not None and self.graph_toggle not in self.toggles:
            raise ValueError(f"program.graph_toggle {self.graph_toggle!r} is not among its toggles {self.toggles}")
        self.backend: Backend | None = None
        self.clock: HostClock | CudaEvents = HostClock()
        self.outputs: list[str] = []
        self.device_counters = DeviceCounters("cpu", getattr(program, "device_counters", None))

    def prepare(self) -> None:
        """The program's prepare(), when it has one: host-side start, no device (ranklib/PROTOCOL.md "Host phase")."""
        prepare = getattr(self.program, "prepare", None)
        if callable(prepare):
            prepare()

    def start(self, params: Mapping[str, Any]) -> None:
        """setup(params), then the backend (what setup imported decides it) and the output names."""
        self.program.setup(dict(params))
        self.backend = detect(self.program)
        graphs.use_backend(self.backend.name)
        self.clock = clock_for(self.backend)
        self.device_counters = DeviceCounters(self.backend.name, self.device_counters.wanted)
        outputs = self.program.outputs()
        if not isinstance(outputs, Mapping) or not outputs or not all(isinstance(k, str) and k for k in outputs):
            raise TypeError(f"outputs() after setup must be a dict of at least one named output, not {outputs!r:.200}")
        self.outputs = list(outputs)

    # the pieces

    def _reset(self) -> None:
        _user("reset()", self.program.reset)

    def _step(self, toggles: Toggles) -> None:
        graphs.use_toggles(toggles)
        _user("step()", self.program.step, dict(toggles))

    def _timed_step(self, toggles: Toggles) -> float:
        return self.clock.time_ms(lambda: self._step(toggles))

    def _hashes(self) -> dict[str, str]:
        outputs = _user("outputs()", self.program.outputs)
        if not isinstance(outputs, Mapping) or list(outputs) != self.outputs:
            names = list(outputs) if isinstance(outputs, Mapping) else type(outputs).__name__
            raise StepFailed(f"outputs() returned {names}, not the outputs of hello {self.outputs}")
        return hash_outputs(outputs)

    def _counters(self) -> dict[str, float]:
        counters = getattr(self.program, "counters", None)
        if counters is None:
            return {}
        out = _user("counters()", counters)
        if not isinstance(out, Mapping) or not all(
            isinstance(k, str) and isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            for k, v in out.items()
        ):
            raise StepFailed(f"counters() must return a dict of finite numbers, not {out!r}")
        return dict(out)

    def _full_toggles(self, toggles: Toggles) -> dict[str, "bool | str"]:
        """The step's toggles: every toggle the program knows, absent ones off."""
        return {**{t: False for t in self.toggles}, **toggles}

    def _prepare(self, toggles: Toggles) -> None:
        """A request's start: reset, and for a graph arm the prepare step (it captures when the
        graph is new, replays otherwise; output discarded) and reset again."""
        self._reset()
        if self.graph_toggle is not None and on(toggles[self.graph_toggle]):
            self._step(toggles)
            self._reset()

    def _mode(self, captures0: int, replays0: int) -> tuple[str, "str | None"]:
        captures, replays = graphs.counts()
        mode = "graph" if replays > replays0 else "eager"
        return mode, None if mode == "eager" else "fresh" if captures > captures0 else "reused"

    # the requests

    def rep(self, toggles: Toggles, warmup: int, steps: int) -> dict[str, Any]:
        t_start = monotonic_ns()
        toggles = self._full_toggles(toggles)
        captures0, _ = graphs.counts()
        # the clocks before anything of the rep runs; the counts so far, for its captures
        dev = self.device_counters.begin(warmup, steps)
        self._prepare(toggles)
        warmup_ms: list[float] = []
        for i in range(warmup):
            # the warm-up's own counts where the library pauses for the timed steps (device_counters.py)
            dev.before_warmup(i)
            warmup_ms.append(self._timed_step(toggles))
            dev.after_warmup(i)
        dev.timed()
        _, replays0 = graphs.counts()
        step_ms: list[float] = []
        hashes: list[dict[str, str]] = []
        for i in range(steps):
            # each step's own counts: read after its end event synchronized, before the hash
            # (a tensor's copy to the host is a memcpy of the library's, not of the step)
            dev.before(i)
            step_ms.append(self._timed_step(toggles))
            dev.after(i)
            hashes.append(self._hashes())
        device = dev.finish(steps)
        t_end = monotonic_ns()
        mode, graph = self._mode(captures0, replays0)
        return {
            "mode": mode,
            "graph": graph,
            "warmup_ms": warmup_ms,
            "step_ms": step_ms,
            "hashes": hashes,
            "counters": self._counters(),
            **device,  # launches, and clocks and xid_events where NVML is there
            "t_start_ns": t_start,
            "t_end_ns": t_end,
        }

    def trace(self, toggles: Toggles, warmup: int, steps: int) -> dict[str, Any]:
        """A rep's order with the injection library tracing kernels (a probe, never timed): each
        step between two marks on the records' clock, the step synchronized before its end mark."""
        t_start = monotonic_ns()
        toggles = self._full_toggles(toggles)
        run = begin_trace(self.device_counters)
        self._prepare(toggles)
        for _ in range(warmup):
            self._timed_step(toggles)
        run.warmed()
        _, replays0 = graphs.counts()
        for _ in range(steps):
            start = run.now()
            self._timed_step(toggles)  # returns once the step's work is done on the device
            run.step(start, run.now())
        mode, _ = self._mode(0, replays0)
        return {"mode": mode, "trace": run.finish(), "t_start_ns": t_start, "t_end_ns": monotonic_ns()}

    def identity(self, toggles: Toggles, toggle: str, replays: int) -> dict[str, Any]:
        t_start = monotonic_ns()
        toggles = self._full_toggles(toggles)
        self._reset()
        eager = []
        for _ in range(replays):
            self._step({**toggles, toggle: False})
            eager.append(self._hashes())
        # the gate always captures afresh; what it captures is what the arm's next reps replay
        graphs.drop_graphs()
        self._reset()
        self._step(toggles)  # the capture, output discarded
        self._reset()
        _, replays0 = graphs.counts()
        graph = []
        for _ in range(replays):
            self._step(toggles)
            graph.append(self._hashes())
        _, replayed = graphs.counts()
        t_end = monotonic_ns()
        return {
            "mode": "graph" if replayed > replays0 else "eager",
            "replays": replays,
            "eager": eager,
            "graph": graph,
            "counters": self._counters(),  # as orch_rank.h: the gate keeps a launches_per_step
            "t_start_ns": t_start,
            "t_end_ns": t_end,
        }

