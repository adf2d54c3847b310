"""Launch counts and clocks of a rep from orch's CUPTI injection library (native/inject/,
ranklib/PROTOCOL.md "Launch counts and clocks").

The driver loads the library named in CUDA_INJECTION64_PATH at cuInit, that is when torch first
initialises CUDA (in setup(), or later): so it is looked up lazily, at the start of every rep
until found, with RTLD_NOLOAD. This module never loads it itself: a library that the driver did
not load counts nothing, and its zeros must not pass for counts.

A rep reads the counters just before and just after each counted step, into structs allocated
for the whole rep at its start: two ctypes calls per step and no Python work between them and
the step. The differences are computed once the rep is over.

Which steps are counted (`counted` of the answer): CUPTI attached slows every step it sees, so a
rep with warm-up steps counts those (the same steps as its timed ones), then pauses the library
(orch_inject_pause: CUPTI detached) for its timed steps; the next rep resumes it at its start. A
rep without warm-up, a library without pause (an older build) or a refused pause counts the timed
steps.
"""

from __future__ import annotations

import ctypes
import math
import os
from typing import Any

from ._protocol import INJECT_ABI as ABI
from ._protocol import INJECT_COUNTS_FIELDS
FIELDS = ("kernels", "graphs", "memcpy", "memset", "syncs")  # one count per measured step
REASON_BITS = 64  # NVML's reason mask; the library names bits 0x1..0x100


class _Counts(ctypes.Structure):  # struct orch_inject_counts
    _fields_ = [(n, ctypes.c_uint64) for n in INJECT_COUNTS_FIELDS]


class _Clock(ctypes.Structure):  # struct orch_inject_clock
    _fields_ = [
        ("ok", ctypes.c_int), ("sm_mhz", ctypes.c_int), ("mem_mhz", ctypes.c_int), ("temp_c", ctypes.c_int),
        ("power_w", ctypes.c_double), ("reasons", ctypes.c_ulonglong), ("xid_events", ctypes.c_ulonglong),
    ]  # fmt: skip


class _Library:
    """The injection library's functions, typed; pause and resume None where it has none."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        self.cdll = lib  # device_trace.py looks up trace mode's functions in it
        self.read = lib.orch_inject_read
        self.read.argtypes, self.read.restype = [ctypes.POINTER(_Counts)], ctypes.c_int
        self.clocks = lib.orch_inject_clocks
        self.clocks.argtypes, self.clocks.restype = [ctypes.POINTER(_Clock)], ctypes.c_int
        self.status = lib.orch_inject_status
        self.status.argtypes, self.status.restype = [], ctypes.c_char_p
        # volatile uncorrected ECC errors: a function of its own, absent from a library built before it
        self.ecc = getattr(lib, "orch_inject_ecc", None)
        if self.ecc is not None:
            self.ecc.argtypes, self.ecc.restype = [ctypes.POINTER(ctypes.c_ulonglong)], ctypes.c_int
        # pause and resume: new symbols of ABI 1, absent from a library built before them
        self.pause = getattr(lib, "orch_inject_pause", None)
        self.resume = getattr(lib, "orch_inject_resume", None)
        if self.pause is None or self.resume is None:
            self.pause = self.resume = None
        else:
            for f in (self.pause, self.resume):
                f.argtypes, f.restype = [], ctypes.c_int
        reason_name = lib.orch_inject_reason_name
        reason_name.argtypes, reason_name.restype = [ctypes.c_uint], ctypes.c_char_p
        # orch_inject.h takes the bit's index (0x20 is 5); an earlier draft of the contract took the
        # mask itself (0x20). No reason has mask 0, so a name for 0 means an index, none a mask.
        by_index = bool(reason_name(0))
        # the names are constant: asked once, so that a rep's clocks cost no name lookups
        self.reasons = {}
        for i in range(REASON_BITS):
            name = reason_name(i if by_index else 1 << i)
            if name:
                self.reasons[1 << i] = name.decode("utf-8", "replace")

    def status_text(self) -> str:
        s = self.status()
        return s.decode("utf-8", "replace") if s else "orch_inject_status() said nothing"

    def clock(self) -> dict[str, Any] | None:
        c = _Clock()
        self.clocks(ctypes.byref(c))
        if not c.ok:  # no NVML (or no device): the answer has no clocks, never made-up ones
            return None
        ecc = ctypes.c_ulonglong(0)
        has_ecc = self.ecc is not None and self.ecc(ctypes.byref(ecc)) == 1
        power = float(c.power_w)
        # as the library gives them: -1 is a value NVML did not give (orch_inject.h); JSON has no NaN
        return {
            "sm_mhz": c.sm_mhz, "mem_mhz": c.mem_mhz, "temp_c": c.temp_c,
            "power_w": round(power, 3) if math.isfinite(power) else -1.0,
            "reasons": [name for bit, name in self.reasons.items() if c.reasons & bit],
            "_xid": int(c.xid_events),
            "_ecc": int(ecc.value) if has_ecc else None,
        }  # fmt: skip


class DeviceCounters:
    """One per Runner. `wanted`: the program's `device_counters` attribute: None (the default:
    counts on the cuda backend only), True (counts on any backend, for a test with a stand-in
    library) or False (never)."""

    def __init__(self, backend: str, wanted: bool | None) -> None:
        if wanted not in (None, True, False):
            raise ValueError(f"program.device_counters is {wanted!r}: True, False or unset")
        self.backend = backend
        self.wanted = wanted
        self._lib: _Library | None = None
        self.paused = False  # the library paused by the last rep, to be resumed by the next

    def find(self) -> tuple[_Library | None, str]:
        """The library, or None and why there is none."""
        if self._lib is not None:
            return self._lib, ""
        if self.wanted is False:
            return None, "the program sets device_counters = False"
        if self.backend != "cuda" and self.wanted is not True:
            return None, f"{self.backend} backend: no CUDA"
        path = os.environ.get("CUDA_INJECTION64_PATH", "")
        if not path:
            return None, "no CUDA_INJECTION64_PATH: no injection library was named"
        try:
            lib = ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_NOLOAD)
        except OSError:
            return None, f"the injection library {path} is not loaded in this process (the driver loads it at cuInit)"
        try:
            self._lib = _Library(lib)
        except AttributeError as e:
            return None, f"{path} is not orch's injection library: {e}"
        return self._lib, ""

    def begin(self, warmup: int, steps: int) -> "RepCounts":
        """At the rep's start, before its reset and warm-up: the library resumed if the last rep
        paused it, its clocks and the counts so far."""
        lib, why = self.find()
        if lib is None:
            return RepCounts(None, None, why, warmup, steps)
        if self.paused and lib.resume is not None:
            lib.resume()  # a failed resume stops the library's counting: the read below says so
            self.paused = False
        first = _Counts()
        if not lib.read(ctypes.byref(first)):
            counting, why = None, lib.status_text()
        elif first.abi != ABI:
            counting, why = None, f"the injection library speaks abi {first.abi}, this library abi {ABI}"
        else:
            counting = lib
        # NVML needs no counting: the clocks are read even when the counts are off
        return RepCounts(counting, lib, why, warmup, steps, first, self)


class RepCounts:
    """One rep's readings: before_warmup(i)/after_warmup(i) around warm-up step i, timed() once
    the warm-up is over, before(i)/after(i) around measured step i, finish() at the end."""

    def __init__(self, lib: _Library | None, clock_lib: _Library | None, reason: str, warmup: int, steps: int,
                 first: _Counts | None = None, owner: DeviceCounters | None = None) -> None:  # fmt: skip
        self.lib = lib  # None: no counts, for `reason`
        self.reason = reason
        self.first = first
        self.owner = owner
        self.clock_lib = clock_lib
        self.clock_start = clock_lib.clock() if clock_lib is not None else None
        # the warm-up is counted where the library can pause for the timed steps
        self.counted = "warmup" if lib is not None and lib.pause is not None and warmup > 0 else "timed"
        self.warmup = warmup
        if lib is not None:
            n = max(warmup, steps)  # a refused pause counts the timed steps after all
            self._marks = (_Counts * (2 * n + 1))()  # before/after of each counted step, then the rep's end
            self._end = 2 * n
            self._refs = [ctypes.byref(m) for m in self._marks]
            self._read = lib.read

    def before_warmup(self, i: int) -> None:
        if self.lib is not None and self.counted == "warmup":
            self._read(self._refs[2 * i])

    def after_warmup(self, i: int) -> None:
        if self.lib is not None and self.counted == "warmup":
            self._read(self._refs[2 * i + 1])

    def timed(self) -> None:
        """The warm-up is over: pause the library for the timed steps, or count them if it will not pause."""
        if self.lib is None or self.counted != "warmup" or self.lib.pause is None:
            return
        if self.lib.pause() == 1:
            if self.owner is not None:
                self.owner.paused = True
        else:
            self.counted = "timed"

    def before(self, i: int) -> None:
        if self.lib is not None and self.counted == "timed":
            self._read(self._refs[2 * i])

    def after(self, i: int) -> None:
        if self.lib is not None and self.counted == "timed":
            self._read(self._refs[2 * i + 1])

    def finish(self, steps: int) -> dict[str, Any]:
        """The answer's `launches`, and `clocks`, `xid_events` (and `ecc_errors` where the card
        counts them) where NVML answered twice."""
        out: dict[str, Any] = {}
        if self.lib is None or self.first is None:
            out["launches"] = {"source": "none", "reason": self.reason}
        elif not self._read(self._refs[self._end]):
            # the library stopped counting during the rep (a failed pause): its zeros are no counts
            out["launches"] = {"source": "none", "reason": self.lib.status_text()}
        else:
            m = self._marks
            end = m[self._end]
            n = self.warmup if self.counted == "warmup" else steps
            launches: dict[str, Any] = {"source": "cupti", "counted": self.counted}
            for f in FIELDS:
                launches[f] = [getattr(m[2 * i + 1], f) - getattr(m[2 * i], f) for i in range(n)]
                if f == "kernels":  # PROTOCOL.md's order: captured after kernels
                    launches["captured"] = end.captured - self.first.captured
            out["launches"] = launches
        start = self.clock_start
        stop = self.clock_lib.clock() if start is not None and self.clock_lib is not None else None
        if start is not None and stop is not None:
            xid = stop.pop("_xid") - start.pop("_xid")
            ecc_start, ecc_end = start.pop("_ecc"), stop.pop("_ecc")
            out["clocks"] = {"start": start, "end": stop}
            out["xid_events"] = max(0, xid)
            if ecc_start is not None and ecc_end is not None:
                out["ecc_errors"] = max(0, ecc_end - ecc_start)
        return out
