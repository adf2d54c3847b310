"""Program: the base a rank's program may subclass (any object with the same four functions and
attributes serves as well).
"""

from __future__ import annotations

from typing import Any, Mapping


class Program:
    name: str = ""  # hello's name; the class's name when empty
    toggles: list[str] = []  # every toggle the program understands
    graph_toggle: str | None = None  # the toggle that turns capture on, if any
    backend: str | None = None  # "cpu" keeps a torch program off the GPU; unset: see backend.py

    def prepare(self) -> None:
        """Host-side start that needs no device (imports, weights into host memory), before setup();
        under the host phase it runs with no device visible and must not touch CUDA."""

    def setup(self, params: dict[str, Any]) -> None:
        """Once, before hello: build the model from params (ORCH_PARAMS)."""

    def reset(self) -> None:
        """Back to the seed's state IN PLACE (zero_, copy_, slice assignment): a captured graph
        keeps the buffers it was captured with, so a rebound name is a buffer it never sees."""
        raise NotImplementedError

    def step(self, toggles: Mapping[str, "bool | str"]) -> None:
        """One step; toggles holds every toggle of `toggles`, the request's absent ones False."""
        raise NotImplementedError

    def outputs(self) -> Mapping[str, Any]:
        """name -> tensor, bytes-like object, or list of numbers: hashed after every step."""
        raise NotImplementedError
