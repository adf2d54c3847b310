"""Graphs behind one call: `graph(key, body, enabled=...)` runs `body` eagerly, or captures it
once per key and replays it from then on.

On cuda (torch), the first call for a key follows torch's documented pattern: two warm-up calls
on a side stream (lazy initialisation, cuBLAS workspaces), capture with `torch.cuda.graph`, then
one replay; later calls replay. On the CPU the same calls drive a host emulation with a CUDA
graph's semantics: during a capture `launch(fn, *args)` only records the call, with its
arguments bound as given (a list by reference, an int frozen, exactly like kernel arguments),
and a replay runs the recorded calls; host code of the body that is not a launch runs once, at
capture, and never again. So a step that stages its input outside its launches (or forgets to)
shows the same stale-input bug on either backend.

A capture stops at the first operation it refuses (a host-built tensor copied in, a host sync),
so a program fixed one blocker per run. After a capture fails, the body runs once more, eagerly,
as an audit: every refused operation it meets is recorded with the user's line instead of raised
(`blocked`, called by whatever detects one: the torch dispatch hook below, or a library standing
in for torch), and the CAPTURE_FAILED answer lists them all (`others`, PROTOCOL.md "error").

The rule a program keeps: a graph holds the addresses it was captured with. reset() and every
body write their state in place (`copy_`, `zero_`, slice assignment); a new tensor or list
bound to the same name is invisible to the graph.

One registry per process, so the library can count captures and replays per request and drop
every graph before an identity gate. A graph is keyed by the user's key AND the step's toggles
(every toggle of the program, absent ones off): an arm never replays a graph captured under
another arm's toggles. Anything else that changes the body (a size) belongs in the key.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Hashable, Iterator, Mapping

from .backend import detect
from .errors import CaptureFailed, summary, user_frame, user_stack_frame
from .toggles import on

# warm-up calls before a capture, on cuda and (for the same effects on the program's state) on cpu
WARMUPS = 2
# the most blockers one answer lists besides the first (a body refusing the same thing in a loop
# is one blocker per line of the program, not one per iteration: they are told apart by their line)
MAX_OTHER_BLOCKERS = 16
MAX_BLOCKER_CHARS = 1000


class _Registry:
    def __init__(self) -> None:
        self.backend: str | None = None  # set by the Runner; detected on first use otherwise
        self.replay: dict[Hashable, Callable[[], None]] = {}
        self.captures = 0
        self.replays = 0
        self.capturing = False
        self.recording: list[tuple[Callable[..., Any], tuple]] | None = None  # a host capture
        self.shape: Hashable = ()  # the step's toggles, set by the Runner before each step
        self.auditing: list[tuple[str, dict[str, object] | None]] | None = None  # the audit's finds

    def run(self, key: Hashable, body: Callable[[], Any]) -> None:
        if self.auditing is not None:
            body()  # the audit runs the step eagerly, a graph nested in it too: nothing is captured then
            return
        if self.capturing:
            raise CaptureFailed(f"graph {key!r} called while another graph is being captured")
        shaped = (key, self.shape)
        replay = self.replay.get(shaped)
        if replay is None:
            if self.backend is None:
                self.backend = detect().name
            try:
                replay = self._capture_cuda(key, body) if self.backend == "cuda" else self._capture_host(key, body)
            except CaptureFailed as e:
                e.others = self._audit(body, user_frame(e))
                raise
            self.replay[shaped] = replay
            self.captures += 1
        replay()
        self.replays += 1

    def _capture_cuda(self, key: Hashable, body: Callable[[], Any]) -> Callable[[], None]:
        import torch

        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(WARMUPS):
                body()
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        self.capturing = True
        try:
            with torch.cuda.graph(g):
                body()
        except Exception as e:
            raise CaptureFailed(f"capturing graph {key!r}: {summary(e)}") from e
        finally:
            self.capturing = False
        return g.replay

    def _capture_host(self, key: Hashable, body: Callable[[], Any]) -> Callable[[], None]:
        for _ in range(WARMUPS):
            body()
        recorded: list[tuple[Callable[..., Any], tuple]] = []
        self.capturing, self.recording = True, recorded
        try:
            body()
        except Exception as e:
            raise CaptureFailed(f"capturing graph {key!r}: {summary(e)}") from e
        finally:
            self.capturing, self.recording = False, None

        def replay() -> None:
            for fn, args in recorded:
                fn(*args)

        return replay

    def _audit(self, body: Callable[[], Any], first: "dict[str, object] | None") -> list[dict[str, object]]:
        """The blockers of `body` besides the first (at `first`): the body run eagerly with every
        refused operation recorded, not raised; one per line of the program."""
        found: list[tuple[str, dict[str, object] | None]] = []
        self.auditing = found
        try:
            with _audit_hooks(self.backend):
                body()
        except Exception:
            pass  # a second look only: a body that fails eagerly here adds nothing to the answer
        finally:
            self.auditing = None
        seen = {_where(first)} if first is not None else set()
        others: list[dict[str, object]] = []
        for message, frame in found:
            where = _where(frame) if frame is not None else message
            if where in seen:
                continue
            seen.add(where)
            others.append({"message": message[:MAX_BLOCKER_CHARS], "frame": frame})
        return others[:MAX_OTHER_BLOCKERS]


def _where(frame: "dict[str, object]") -> str:
    return f"{frame['file']}:{frame['line']}"


@contextlib.contextmanager
def _audit_hooks(backend: str | None) -> Iterator[None]:
    """On cuda, torch's operations a capture refuses, reported to `blocked` while the audit runs:
    a copy into a CUDA tensor from unpinned host memory, and the host syncs (.item(), nonzero).
    Elsewhere (the host emulation) the body's own library calls `blocked`."""
    mode = _torch_audit_mode() if backend == "cuda" else None
    if mode is None:
        yield
        return
    with mode:
        yield


def _torch_audit_mode() -> Any:
    try:
        import torch
        from torch.utils._python_dispatch import TorchDispatchMode
    except Exception:
        return None
    aten = torch.ops.aten
    syncs = {aten._local_scalar_dense.default, aten.nonzero.default}

    def unpinned_host(t: Any) -> bool:
        return isinstance(t, torch.Tensor) and t.device.type == "cpu" and not t.is_pinned()

    class Audit(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
            kwargs = kwargs or {}
            if func in syncs and any(isinstance(a, torch.Tensor) and a.is_cuda for a in args):
                blocked(f"{func}: a host sync (a Python value of a CUDA tensor) is not permitted while a stream captures")
            elif func in (aten.copy_.default, aten._to_copy.default):
                dst_cuda = (isinstance(args[0], torch.Tensor) and args[0].is_cuda and func is aten.copy_.default) or (
                    str(kwargs.get("device", "")).startswith("cuda")
                )
                src = args[1] if func is aten.copy_.default else args[0]
                if dst_cuda and unpinned_host(src):
                    blocked("Cannot copy between CPU and CUDA tensors during CUDA graph capture unless the CPU tensor is pinned")
            return func(*args, **kwargs)

    return Audit()


_registry = _Registry()


def blocked(message: str) -> None:
    """An operation a capture refuses, said by whatever detects it: inside a capture it raises
    RuntimeError(message), as torch does; inside the audit after a failed capture it is recorded
    with the user's line, and the body goes on; otherwise (eager) it is allowed."""
    if _registry.capturing:
        raise RuntimeError(message)
    if _registry.auditing is not None:
        _registry.auditing.append((message, user_stack_frame()))


def graph(key: Hashable, body: Callable[[], Any], enabled: bool | str = True) -> None:
    """Run body() eagerly when not enabled (a toggle's value, read by orch_rank.on); else replay
    key's graph under the step's toggles, capturing it first if none."""
    if on(enabled):
        _registry.run(key, body)
    else:
        body()


def launch(fn: Callable[..., Any], *args: Any) -> None:
    """A kernel launch: fn(*args) now, or, inside a host capture, recorded for the replays."""
    if _registry.recording is not None:
        _registry.recording.append((fn, args))
    else:
        fn(*args)


def use_toggles(toggles: Mapping[str, "bool | str"]) -> None:
    """The toggles of the step about to run: part of every graph's key (as orch_rank.h's shape)."""
    _registry.shape = tuple((k, v if isinstance(v, str) else ("true" if v else "false")) for k, v in toggles.items())


def use_backend(name: str) -> None:
    _registry.backend = name


def drop_graphs() -> None:
    _registry.replay.clear()


def counts() -> tuple[int, int]:
    """(captures, replays) since the process started; a request reads the difference."""
    return _registry.captures, _registry.replays
