"""The protocol stream and stdin as serve() holds them, for what speaks outside a request's
answer: exchange() (ranklib/PROTOCOL.md "exchange") and the host phase's `prepared`/`open`."""

from __future__ import annotations

import json
from typing import Any, BinaryIO, Iterator

from ._protocol import LINE_MAX_BYTES


class Channel:
    def __init__(self, out: BinaryIO, inp: BinaryIO) -> None:
        self.out = out
        self.inp = inp
        self.exchanges = 0

    def send(self, data: bytes) -> None:
        self.out.write(data + b"\n")
        self.out.flush()

    def send_line(self, line: dict[str, Any]) -> None:
        self.send(json.dumps(line, separators=(",", ":"), allow_nan=False).encode("utf-8"))

    def lines(self) -> Iterator[bytes | None]:
        """stdin's lines, blank ones skipped; None for a line over LINE_MAX_BYTES (its "\\n" not counted)."""
        while True:
            line = self.inp.readline(LINE_MAX_BYTES + 1)
            if not line:
                return
            if len(line) > LINE_MAX_BYTES and not line.endswith(b"\n"):
                while line and not line.endswith(b"\n"):  # the rest of the long line
                    line = self.inp.readline(LINE_MAX_BYTES)
                yield None
            elif line.strip():
                yield line

    def next_line(self) -> bytes | None:
        """The next non-blank line; b"" when stdin closed, None when it was over the limit."""
        for line in self.lines():
            return line
        return b""


_channel: Channel | None = None


def set_channel(channel: Channel) -> None:
    global _channel
    _channel = channel


def channel() -> Channel:
    if _channel is None:
        raise RuntimeError("orch_rank: no protocol stream (exchange() works inside orch_rank.serve())")
    return _channel
