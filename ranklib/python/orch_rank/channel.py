"""The protocol stream and stdin as serve() holds them, for what speaks outside a request's
answer: exchange() (ranklib/PROTOCOL.md "exchange") and the host phase's `prepared`/`open`.

Lines read while an exchange waits for its answer are the requests the worker wrote behind the
one being served (the one-deep pipeline): they are held, at most REQUESTS_IN_FLIGHT_MAX, and the
serve loop reads them before stdin, in the order they came."""

from __future__ import annotations

import json
from collections import deque
from typing import Any, BinaryIO, Iterator

from ._protocol import LINE_MAX_BYTES, REQUESTS_IN_FLIGHT_MAX


class Channel:
    def __init__(self, out: BinaryIO, inp: BinaryIO) -> None:
        self.out = out
        self.inp = inp
        self.exchanges = 0
        # lines read off stdin while an exchange waited for its answer, not yet served (None: over the limit)
        self.held: deque[bytes | None] = deque()

    def send(self, data: bytes) -> None:
        self.out.write(data + b"\n")
        self.out.flush()

    def send_line(self, line: dict[str, Any]) -> None:
        self.send(json.dumps(line, separators=(",", ":"), allow_nan=False).encode("utf-8"))

    def read_stdin(self) -> bytes | None:
        """stdin's next non-blank line, the held ones passed over; b"" when stdin closed, None
        for a line over LINE_MAX_BYTES (its "\\n" not counted)."""
        while True:
            line = self.inp.readline(LINE_MAX_BYTES + 1)
            if not line:
                return b""
            if len(line) > LINE_MAX_BYTES and not line.endswith(b"\n"):
                while line and not line.endswith(b"\n"):  # the rest of the long line
                    line = self.inp.readline(LINE_MAX_BYTES)
                return None
            if line.strip():
                return line

    def hold(self, line: bytes | None, what: str) -> None:
        """Keeps a line read while `what` waited for its answer, for the serve loop; more than the
        worker may have in flight is a protocol error (RuntimeError), the line not kept."""
        if len(self.held) >= REQUESTS_IN_FLIGHT_MAX:
            raise RuntimeError(
                f"{what}: one line more than the {REQUESTS_IN_FLIGHT_MAX} requests the worker may have in flight came "
                f'before its answer (ranklib/PROTOCOL.md "Exchange"), a protocol error; dropped: {(line or b"")[:200]!r}'
            )
        self.held.append(line)

    def next_line(self) -> bytes | None:
        """The next line to serve: a held one first, else stdin's (read_stdin)."""
        return self.held.popleft() if self.held else self.read_stdin()

    def lines(self) -> Iterator[bytes | None]:
        """The lines to serve, held ones first, until stdin closes; None for a line over the limit."""
        while (line := self.next_line()) != b"":
            yield line


_channel: Channel | None = None


def set_channel(channel: Channel) -> None:
    global _channel
    _channel = channel


def channel() -> Channel:
    if _channel is None:
        raise RuntimeError("orch_rank: no protocol stream (exchange() works inside orch_rank.serve())")
    return _channel
