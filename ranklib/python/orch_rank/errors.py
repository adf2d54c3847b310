"""The error codes of the orch-rank protocol (ranklib/PROTOCOL.md, "error"), as exceptions.

Each request's failure is one of these by the time the serve loop writes its `error` line; an
exception of any other kind that reaches the loop is a bug in this library (INTERNAL).
"""

from __future__ import annotations

import os
import traceback


class RankError(Exception):
    """A request's failure with its protocol error code (fatal or not: is_sticky_cuda_error)."""

    code = "INTERNAL"


class BadRequest(RankError):
    code = "BAD_REQUEST"


class UnknownToggle(RankError):
    code = "UNKNOWN_TOGGLE"


class StepFailed(RankError):
    """The program's own code raised (setup excepted: it fails before hello)."""

    code = "STEP_FAILED"


class CaptureFailed(RankError):
    """A body could not be captured into a graph; the message says why. `others`: the other
    capture blockers the audit after it met in the same body (graphs.py), each a dict
    {"message", "frame"}, so a program's every blocker is listed at once, not one per run."""

    code = "CAPTURE_FAILED"

    def __init__(self, message: str, others: "list[dict[str, object]] | None" = None) -> None:
        super().__init__(message)
        self.others = others or []


# CUDA errors after which the context is unusable: every later call fails the same way, so the
# rank must exit for the worker to start a fresh one. A capture's own refusal ("operation not
# permitted when stream is capturing") is not among them: it ends the capture, not the context.
# (torch's own advice, "Compile with TORCH_USE_CUDA_DSA to enable device-side assertions", follows
# every CUDA error: hence "assert triggered", not "assert")
_STICKY = (
    "illegal memory access",
    "device-side assert triggered",
    "misaligned address",
    "illegal instruction",
    "unspecified launch failure",
    "hardware stack error",
    "uncorrectable ecc error",
)


def _chain(exc: BaseException) -> list[BaseException]:
    """exc and the exceptions it was raised from or while handling, exc first."""
    out: list[BaseException] = []
    e: BaseException | None = exc
    while e is not None and all(e is not x for x in out):
        out.append(e)
        e = e.__cause__ or e.__context__
    return out


def _messages(exc: BaseException) -> list[str]:
    return [str(e).lower() for e in _chain(exc)]


def summary(exc: BaseException) -> str:
    """One line per exception of exc's chain, the first cause first: what a capture failure says
    (torch's CUDA messages run to many lines of advice, the first says what happened)."""
    lines = []
    for e in reversed(_chain(exc)):
        text = str(e).strip()
        lines.append(f"{type(e).__name__}: {text.splitlines()[0] if text else ''}")
    return "; then ".join(lines)


_LIBRARY_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_STDLIB_DIR = os.path.dirname(os.path.abspath(traceback.__file__)) + os.sep


def _outside_libraries(filename: str) -> bool:
    if filename.startswith("<"):
        return False
    f = os.path.abspath(filename)
    parts = f.split(os.sep)
    if "site-packages" in parts or "dist-packages" in parts:
        return False
    return not f.startswith(_LIBRARY_DIR) and not f.startswith(_STDLIB_DIR)


def user_frame(exc: BaseException) -> "dict[str, object] | None":
    """The user's own line where exc arose: the innermost frame outside this library, the standard
    library and installed packages (torch, transformers), first cause first; None if there is none."""
    for e in reversed(_chain(exc)):
        for fs in reversed(traceback.extract_tb(e.__traceback__)):
            if fs.filename and fs.lineno is not None and _outside_libraries(fs.filename):
                return {"file": fs.filename, "line": fs.lineno}
    return None


def user_stack_frame() -> "dict[str, object] | None":
    """The user's own line that called into whatever is running now (the innermost frame of the
    current stack outside this library, the standard library and installed packages), or None."""
    for fs in reversed(traceback.extract_stack()):
        if fs.filename and fs.lineno is not None and _outside_libraries(fs.filename):
            return {"file": fs.filename, "line": fs.lineno}
    return None


def is_sticky_cuda_error(exc: BaseException) -> bool:
    """True when exc is (or was raised from) a CUDA error that leaves the device unusable.

    Outside a capture any "CUDA error" counts: torch reports an asynchronous kernel fault at the
    next call that synchronizes, under whatever message, and nothing after it can be trusted.
    """
    messages = _messages(exc)
    if any(s in m for m in messages for s in _STICKY):
        return True
    return not isinstance(exc, CaptureFailed) and any("cuda error" in m for m in messages)
