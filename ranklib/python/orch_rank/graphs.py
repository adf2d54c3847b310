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

The rule a program keeps: a graph holds the addresses it was captured with. reset() and every
body write their state in place (`copy_`, `zero_`, slice assignment); a new tensor or list
bound to the same name is invisible to the graph.

One registry per process, so the library can count captures and replays per request and drop
every graph before an identity gate. A graph is keyed by the user's key AND the step's toggles
(every toggle of the program, absent ones off): an arm never replays a graph captured under
another arm's toggles. Anything else that changes the body (a size) belongs in the key.
"""

from __future__ import annotations

from typing import Any, Callable, Hashable, Mapping

from .backend import detect
from .errors import CaptureFailed, summary
from .toggles import on

# warm-up calls before a capture, on cuda and (for the same effects on the program's state) on cpu
WARMUPS = 2


class _Registry:
    def __init__(self) -> None:
        self.backend: str | None = None  # set by the Runner; detected on first use otherwise
        self.replay: dict[Hashable, Callable[[], None]] = {}
        self.captures = 0
        self.replays = 0
        self.capturing = False
        self.recording: list[tuple[Callable[..., Any], tuple]] | None = None  # a host capture
        self.shape: Hashable = ()  # the step's toggles, set by the Runner before each step

    def run(self, key: Hashable, body: Callable[[], Any]) -> None:
        if self.capturing:
            raise CaptureFailed(f"graph {key!r} called while another graph is being captured")
        shaped = (key, self.shape)
        replay = self.replay.get(shaped)
        if replay is None:
            if self.backend is None:
                self.backend = detect().name
            replay = self._capture_cuda(key, body) if self.backend == "cuda" else self._capture_host(key, body)
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


_registry = _Registry()


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
