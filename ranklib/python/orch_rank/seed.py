"""The seed of the request being served (0 before the first, or when a request sends none):
reset() builds its state from it, as orch_rank.h's orch_rank::seed()."""

from __future__ import annotations

_seed = 0


def seed() -> int:
    return _seed


def set_seed(value: int) -> None:
    global _seed
    _seed = value
