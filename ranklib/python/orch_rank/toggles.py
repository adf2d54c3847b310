"""How a toggle's value reads as on: one rule for orch's arms, the graph toggle and a program
(TOGGLE_ON_STRINGS of the protocol's description, ranklib/protocol.json)."""

from __future__ import annotations

from typing import Any

from ._protocol import TOGGLE_ON_STRINGS


def on(value: Any) -> bool:
    """True for `True` and for the strings of TOGGLE_ON_STRINGS ("true", "on"); everything else, off."""
    return value is True or (isinstance(value, str) and value in TOGGLE_ON_STRINGS)
