"""exchange(): bytes from rank 0 to every rank of the gang, through the worker; nccl_unique_id()
over it (ranklib/PROTOCOL.md "exchange")."""

from __future__ import annotations

import base64
import binascii
import json
import os
import re

from ._protocol import EXCHANGE_KEY_PATTERN, EXCHANGE_MAX_BYTES, EXCHANGE_MAX_PER_ATTEMPT, EXCHANGE_NCCL_KEY
from .channel import channel

_KEY = re.compile(EXCHANGE_KEY_PATTERN)


def _rank() -> int:
    return int(os.environ.get("ORCH_RANK", "0") or "0")


def _exchange_line(raw: bytes | None) -> dict | None:
    """The worker's exchange answer, or None for any other line (a request, served later)."""
    if raw is None:
        return None
    try:
        line = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    return line if isinstance(line, dict) and line.get("op") == "exchange" else None


def exchange(key: str, data: bytes | None) -> bytes:
    """Rank 0 passes its bytes (at most EXCHANGE_MAX_BYTES), every other rank None; every rank,
    rank 0 included, gets rank 0's bytes back. Blocks until the worker answers; raises
    RuntimeError with the worker's text when it cannot (rank 0 never published in time).
    Callable in setup() (before hello) or inside a request: a request line it reads while it waits
    (the worker may have written the next one already) is held and served after this one."""
    if not isinstance(key, str) or not _KEY.fullmatch(key):
        raise ValueError(f"exchange key {key!r} must match {EXCHANGE_KEY_PATTERN}")
    root = _rank() == 0
    if root:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"exchange {key!r}: rank 0 passes bytes, not {type(data).__name__}")
        data = bytes(data)
        if len(data) > EXCHANGE_MAX_BYTES:
            raise ValueError(f"exchange {key!r}: {len(data)} bytes, over {EXCHANGE_MAX_BYTES}")
    ch = channel()
    if ch.exchanges >= EXCHANGE_MAX_PER_ATTEMPT:
        raise RuntimeError(f"exchange {key!r}: at most {EXCHANGE_MAX_PER_ATTEMPT} exchanges per rank")
    ch.exchanges += 1
    sent = base64.b64encode(data).decode("ascii") if root else None  # type: ignore[arg-type]
    ch.send_line({"v": 1, "type": "exchange", "key": key, "data": sent})
    while True:
        # stdin's own lines, never the held ones: those are requests, not this answer
        raw = ch.read_stdin()
        if raw == b"":
            raise RuntimeError(f"exchange {key!r}: stdin closed before the worker's answer")
        reply = _exchange_line(raw)
        if reply is not None:
            break
        # a request the worker wrote behind the one being served (the one-deep pipeline): served after
        ch.hold(raw, f"exchange {key!r}")
    if reply.get("key") != key:
        raise RuntimeError(f'exchange {key!r}: expected {{"op":"exchange","key":"{key}"}}, got {raw[:200]!r}')
    if "error" in reply:
        raise RuntimeError(f"exchange {key!r}: {reply['error']}")
    if not isinstance(reply.get("data"), str):
        raise RuntimeError(f"exchange {key!r}: the answer has no data")
    try:
        return base64.b64decode(reply["data"], validate=True)
    except binascii.Error as e:
        raise RuntimeError(f"exchange {key!r}: {e}") from None


def _make_nccl_id() -> bytes:
    try:
        import torch  # noqa: F401
        from torch.cuda import nccl

        return bytes(nccl.unique_id())
    except Exception:
        import ctypes

        lib = ctypes.CDLL("libnccl.so.2")
        buf = ctypes.create_string_buffer(128)  # ncclUniqueId: char internal[NCCL_UNIQUE_ID_BYTES=128]
        if lib.ncclGetUniqueId(buf) != 0:
            raise RuntimeError("ncclGetUniqueId failed")
        return buf.raw


def nccl_unique_id() -> bytes:
    """Rank 0 makes an NCCL unique id (torch's, or libnccl's through ctypes); every rank gets it."""
    return exchange(EXCHANGE_NCCL_KEY, _make_nccl_id() if _rank() == 0 else None)
