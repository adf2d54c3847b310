"""A trace request's kernels from orch's injection library in trace mode (ranklib/PROTOCOL.md
"trace", native/inject orch_inject.h "Trace mode").

The library keeps CUPTI's kernel activity records when the driver loaded it with
ORCH_INJECT_TRACE=1; this module marks each step's start and end on the records' clock
(orch_inject_timestamp) and takes the records once the steps are done. Tracing slows every launch:
a trace request is a probe's, never a timed rep's.
"""

from __future__ import annotations

import ctypes
from typing import Any

from .device_counters import DeviceCounters

_CHUNK = 1 << 16  # records taken per call


class _Kernel(ctypes.Structure):  # struct orch_inject_kernel
    _fields_ = [("start_ns", ctypes.c_uint64), ("end_ns", ctypes.c_uint64), ("graph_id", ctypes.c_uint32), ("stream_id", ctypes.c_uint32)]


class _Graph(ctypes.Structure):  # struct orch_inject_graph
    _fields_ = [("graph_id", ctypes.c_uint32), ("exec_id", ctypes.c_uint32), ("nodes", ctypes.c_uint64), ("instantiate_ns", ctypes.c_uint64)]


class _TraceLibrary:
    """Trace mode's four functions, typed; AttributeError for a library built without them."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        self.tracing = lib.orch_inject_tracing
        self.tracing.argtypes, self.tracing.restype = [], ctypes.c_int
        self.timestamp = lib.orch_inject_timestamp
        self.timestamp.argtypes, self.timestamp.restype = [], ctypes.c_ulonglong
        self.kernels = lib.orch_inject_kernels
        self.kernels.argtypes = [ctypes.POINTER(_Kernel), ctypes.c_size_t, ctypes.POINTER(ctypes.c_ulonglong)]
        self.kernels.restype = ctypes.c_size_t
        self.graphs = lib.orch_inject_graphs
        self.graphs.argtypes, self.graphs.restype = [ctypes.POINTER(_Graph), ctypes.c_size_t], ctypes.c_size_t

    def take_kernels(self) -> tuple[list[dict[str, int]], int]:
        out: list[dict[str, int]] = []
        buf = (_Kernel * _CHUNK)()
        dropped = ctypes.c_ulonglong(0)
        while True:
            n = self.kernels(buf, _CHUNK, ctypes.byref(dropped))
            out.extend({f: getattr(buf[i], f) for f, _ in _Kernel._fields_} for i in range(n))
            if n < _CHUNK:
                return out, int(dropped.value)

    def take_graphs(self) -> list[dict[str, int]]:
        out: list[dict[str, int]] = []
        buf = (_Graph * _CHUNK)()
        while True:
            n = self.graphs(buf, _CHUNK)
            out.extend({f: getattr(buf[i], f) for f, _ in _Graph._fields_} for i in range(n))
            if n < _CHUNK:
                return out


class TraceRun:
    """One trace request: mark(i) around each step, warmed() once the warm-up is done, finish() at the end."""

    def __init__(self, lib: _TraceLibrary | None, reason: str) -> None:
        self.lib = lib
        self.reason = reason
        self.steps: list[dict[str, int]] = []
        if lib is not None:  # what came before the request is not the request's
            lib.take_kernels()
            lib.take_graphs()

    def warmed(self) -> None:
        """The warm-up's kernels are not a step's: dropped (its instantiations are kept)."""
        if self.lib is not None:
            self.lib.take_kernels()

    def now(self) -> int:
        return int(self.lib.timestamp()) if self.lib is not None else 0

    def step(self, start_ns: int, end_ns: int) -> None:
        self.steps.append({"start_ns": start_ns, "end_ns": end_ns})

    def finish(self) -> dict[str, Any]:
        if self.lib is None:
            return {"source": "none", "reason": self.reason}
        kernels, dropped = self.lib.take_kernels()
        return {"source": "cupti", "steps": self.steps, "kernels": kernels, "graphs": self.lib.take_graphs(), "dropped": dropped}


def begin_trace(counters: DeviceCounters) -> TraceRun:
    """The library in trace mode, or why not: never an empty trace standing for "not traced"."""
    found, why = counters.find()
    if found is None:
        return TraceRun(None, why)
    try:
        lib = _TraceLibrary(found.cdll)
    except AttributeError as e:
        return TraceRun(None, f"the injection library has no trace mode (built before it): {e}")
    if not lib.tracing():
        return TraceRun(None, f"the injection library is not tracing (ORCH_INJECT_TRACE=1 when the driver loaded it?): {found.status_text()}")
    return TraceRun(lib, "")
