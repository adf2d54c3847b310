"""blake2b-64 of a step's outputs: 16 lowercase hex digits per output, compared only between
steps of one program (never across libraries).

An output is a torch tensor (its bytes as laid out in memory, copied to the host), anything with
the buffer protocol (bytes, bytearray, memoryview, array.array, a NumPy array), or a list of
numbers (floats as float64, ints as int64).
"""

from __future__ import annotations

import hashlib
import sys
from array import array
from typing import Any, Mapping

from .errors import StepFailed

NAME = "blake2b-64"


def hash_outputs(outputs: Mapping[str, Any]) -> dict[str, str]:
    return {name: _hash(name, value) for name, value in outputs.items()}


def _hash(name: str, value: Any) -> str:
    h = hashlib.blake2b(digest_size=8)
    h.update(_bytes(name, value))
    return h.hexdigest()


def _bytes(name: str, value: Any) -> bytes | memoryview:
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        return _tensor_bytes(torch, value)
    if isinstance(value, (list, tuple)):
        return _number_list_bytes(name, value)
    try:
        view = memoryview(value)
    except TypeError:
        raise StepFailed(
            f"outputs()[{name!r}] is a {type(value).__name__}: return a tensor, a bytes-like "
            "object or a list of numbers"
        ) from None
    # hashlib takes C-contiguous buffers only; tobytes() reads any layout in logical order
    return view if view.c_contiguous else view.tobytes()


def _tensor_bytes(torch, t) -> bytes:
    raw = t.detach().contiguous().reshape(-1).view(torch.uint8).cpu()
    try:
        return raw.numpy().tobytes()
    except (ImportError, RuntimeError):  # torch built or run without NumPy
        return bytes(raw.tolist())


def _number_list_bytes(name: str, values: list | tuple) -> bytes:
    if all(isinstance(v, int) for v in values):  # bools are ints: 0 and 1
        try:
            return array("q", values).tobytes()
        except OverflowError:
            raise StepFailed(f"outputs()[{name!r}] holds an int outside int64") from None
    if all(isinstance(v, (int, float)) for v in values):
        return array("d", values).tobytes()
    raise StepFailed(f"outputs()[{name!r}] is a list with non-numbers: floats or ints only")
