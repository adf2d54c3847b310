"""Step timing: CUDA events on the device, the host clock on the CPU.

A step's time is the device's from an event recorded on the current stream before the step to
one after it, so a graph replay and an eager step are measured alike, launch gaps included; on
the CPU it is perf_counter_ns around the call. t_start_ns/t_end_ns of an answer are
CLOCK_MONOTONIC (system-wide), comparable between the ranks of one host.
"""

from __future__ import annotations

import time
from typing import Callable

from .backend import Backend


def monotonic_ns() -> int:
    return time.monotonic_ns()


class HostClock:
    name = "host-clock"

    def time_ms(self, fn: Callable[[], object]) -> float:
        t0 = time.perf_counter_ns()
        fn()
        return (time.perf_counter_ns() - t0) / 1e6


class CudaEvents:
    name = "cuda-events"

    def __init__(self, torch) -> None:
        self._start = torch.cuda.Event(enable_timing=True)
        self._end = torch.cuda.Event(enable_timing=True)

    def time_ms(self, fn: Callable[[], object]) -> float:
        self._start.record()
        fn()
        self._end.record()
        # the step is done on the device before its outputs are hashed and the next one starts
        self._end.synchronize()
        return max(0.0, float(self._start.elapsed_time(self._end)))


def clock_for(backend: Backend) -> HostClock | CudaEvents:
    return CudaEvents(backend.torch) if backend.name == "cuda" else HostClock()
