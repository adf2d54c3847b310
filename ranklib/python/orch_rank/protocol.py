"""serve(program): the orch-rank protocol v1 (ranklib/PROTOCOL.md) over stdin and the process's
stdout as it started.

Before any of the program's code runs, fd 1 is kept (duplicated) as the protocol stream and
pointed at stderr, and sys.stdout becomes sys.stderr: a print() or a C library's printf lands on
stderr, never among the protocol's lines. Then setup(params), hello, and one answer per request
line until stdin closes (exit 0). A bad request, an unknown toggle, a step that raises or a graph
that cannot be captured is answered with an `error` line and serving goes on; a sticky CUDA error
is answered `fatal: true` and the rank exits 1. The program's prepare() (or serve's `prepare=`)
runs before setup(); under the host phase (ORCH_HOST_PHASE=1) with no device visible, followed by
`prepared` and a wait for `open` (ranklib/PROTOCOL.md "Host phase").
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from dataclasses import dataclass
from typing import Any, BinaryIO, Callable, NoReturn

from . import __version__
from ._protocol import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USER_ERROR,
    HOST_PHASE_DEVICES_ENV,
    HOST_PHASE_ENV,
    LINE_MAX_BYTES,
    PREPARE_TOUCHED_CUDA,
    PROTOCOL,
    VERSION,
)
from .channel import Channel, set_channel
from .errors import BadRequest, CaptureFailed, RankError, UnknownToggle, is_sticky_cuda_error, user_frame
from .hashing import NAME as HASH_NAME
from .runner import Runner
from .seed import set_seed

LIBRARY = f"orch_rank.py {__version__}"
MAX_LINE_BYTES = LINE_MAX_BYTES
MAX_MESSAGE_CHARS = 4000  # an error message quoting a user's exception is cut here

# The fields of a request by op, beside `v`, `id`, `op`, `arm` and `toggles`; `seed` may come
# with either, `type` (every line's kind, PROTOCOL.md's framing) may come and must equal `op`.
_COMMON = ("v", "id", "op", "arm", "toggles")
_FIELDS = {"rep": ("warmup", "steps"), "trace": ("warmup", "steps"), "identity": ("toggle", "replays")}
_OPTIONAL = ("seed", "type")
_MIN = {"warmup": 0, "steps": 1, "replays": 1}


@dataclass(frozen=True)
class Request:
    id: str
    op: str
    arm: str
    toggles: dict[str, "bool | str"]
    fields: dict[str, Any]  # the op's own: warmup/steps or toggle/replays
    seed: int = 0


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _show(v: Any) -> str:
    text = json.dumps(v)
    return text if len(text) <= 80 else text[:77] + "..."


def _quoted(names: list[str]) -> str:
    return ", ".join(f'"{n}"' for n in names)


def parse(obj: Any, toggles: list[str], program: str) -> Request:
    """A request line's object, checked field by field: BadRequest or UnknownToggle if not served."""
    if not isinstance(obj, dict):
        raise BadRequest(f"a request is a JSON object, not {_show(obj)}")
    op = obj.get("op")
    if op not in _FIELDS:
        raise BadRequest(f'"op" must be "rep", "identity" or "trace", not {_show(op)}' if "op" in obj else 'missing field "op"')
    allowed = (*_COMMON, *_FIELDS[op], *_OPTIONAL)
    unknown = [k for k in obj if k not in allowed]
    if unknown:
        raise BadRequest(f"{op} request: unknown field(s) {_quoted(unknown)}; a {op} has {', '.join(allowed)}")
    missing = [k for k in (*_COMMON, *_FIELDS[op]) if k not in obj]
    if missing:
        raise BadRequest(f"{op} request: missing field(s) {_quoted(missing)}")
    if obj["v"] != 1 or not _is_int(obj["v"]):
        raise BadRequest(f'"v" must be 1, not {_show(obj["v"])}')
    if "type" in obj and obj["type"] != op:
        raise BadRequest(f'"type" must be "{op}" (the op) when given, not {_show(obj["type"])}')
    for name in ("id", "arm", *(("toggle",) if op == "identity" else ())):
        if not isinstance(obj[name], str):
            raise BadRequest(f'{op} request: "{name}" must be a string, not {_show(obj[name])}')
    for name, least in _MIN.items():
        if name in obj and not (_is_int(obj[name]) and obj[name] >= least):
            raise BadRequest(f'{op} request: "{name}" must be an integer >= {least}, not {_show(obj[name])}')
    if "seed" in obj and not (_is_int(obj["seed"]) and obj["seed"] >= 0):
        raise BadRequest(f'{op} request: "seed" must be an integer >= 0, not {_show(obj["seed"])}')
    sent = obj["toggles"]
    if not isinstance(sent, dict) or not all(isinstance(v, (bool, str)) for v in sent.values()):
        raise BadRequest(f'{op} request: "toggles" must be an object of booleans or strings, not {_show(sent)}')
    asked = [*sent, *((obj["toggle"],) if op == "identity" else ())]
    unknown = [t for t in dict.fromkeys(asked) if t not in toggles]
    if unknown:
        raise UnknownToggle(f"unknown toggle(s) {_quoted(unknown)}: {program} understands {', '.join(toggles) or 'none'}")
    return Request(obj["id"], op, obj["arm"], dict(sent), {k: obj[k] for k in _FIELDS[op]}, obj.get("seed", 0))


class _Server:
    def __init__(self, runner: Runner, channel: Channel) -> None:
        self.runner = runner
        self.channel = channel
        self.prepare_ms = 0.0
        self.setup_ms = 0.0

    def send(self, data: bytes) -> None:
        self.channel.send(data)

    @staticmethod
    def encode(line: dict[str, Any]) -> bytes:
        return json.dumps(line, separators=(",", ":"), allow_nan=False).encode("utf-8")

    def hello(self) -> dict[str, Any]:
        r = self.runner
        assert r.backend is not None
        return {
            "v": 1, "type": "hello", "protocol": PROTOCOL, "version": VERSION, "name": r.name,
            "library": LIBRARY, "backend": r.backend.name, "device": r.backend.device, "pid": os.getpid(),
            "timing": r.clock.name, "hash": HASH_NAME, "toggles": r.toggles, "outputs": r.outputs,
            "prepare_ms": self.prepare_ms, "setup_ms": self.setup_ms, "final": True,
        }  # fmt: skip

    def answer(self, raw: bytes | None) -> tuple[bytes, bool]:
        """A request line's answer, encoded, and whether the rank must exit after it."""
        rid: str | None = None
        try:
            if raw is None:
                raise BadRequest(f"a request line over {MAX_LINE_BYTES} bytes")
            try:
                obj = json.loads(raw)
            except (UnicodeDecodeError, json.JSONDecodeError) as e:
                raise BadRequest(f"not a JSON line: {e}") from None
            if isinstance(obj, dict) and isinstance(obj.get("id"), str):
                rid = obj["id"]
            req = parse(obj, self.runner.toggles, self.runner.name)
            set_seed(req.seed)
            if req.op == "rep":
                body = self.runner.rep(req.toggles, req.fields["warmup"], req.fields["steps"])
            elif req.op == "trace":
                body = self.runner.trace(req.toggles, req.fields["warmup"], req.fields["steps"])
            else:
                body = self.runner.identity(req.toggles, req.fields["toggle"], req.fields["replays"])
            data = self.encode({"v": 1, "type": req.op, "id": req.id, "arm": req.arm, **body, "final": True})
            if len(data) > MAX_LINE_BYTES:
                raise BadRequest(f"the answer is {len(data)} bytes, over the {MAX_LINE_BYTES}-byte line limit: ask fewer steps")
            return data, False
        except Exception as e:
            return self.error(rid, e)

    def error(self, rid: str | None, e: Exception) -> tuple[bytes, bool]:
        backend = self.runner.backend
        fatal = backend is not None and backend.name == "cuda" and is_sticky_cuda_error(e)
        if isinstance(e, RankError):
            code, message = e.code, str(e)
        else:  # raised by this library's own code, unless the device failed under it
            code, message = ("STEP_FAILED" if fatal else "INTERNAL"), f"{type(e).__name__}: {e}"
        if not isinstance(e, (BadRequest, UnknownToggle)):
            traceback.print_exception(e, file=sys.stderr)  # for people: the program's own frames
        line: dict[str, Any] = {"v": 1, "type": "error"}
        if rid is not None:
            line["id"] = rid
        line.update(code=code, message=message[:MAX_MESSAGE_CHARS], fatal=fatal)
        frame = user_frame(e) if isinstance(e, CaptureFailed) else None
        if frame is not None:
            line["frame"] = frame  # a capture blocker names the user's line (PROTOCOL.md "error")
        if isinstance(e, CaptureFailed) and e.others:
            line["other_blockers"] = e.others  # every other blocker of the body, each at its line
        line["final"] = True
        return self.encode(line), fatal


def _take_stdout() -> BinaryIO:
    """The protocol stream: fd 1 as the process started; fd 1 itself and sys.stdout go to stderr."""
    sys.stdout.flush()
    stream = os.fdopen(os.dup(1), "wb")  # not inherited by the program's own subprocesses
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return stream


def _params() -> dict[str, Any]:
    text = os.environ.get("ORCH_PARAMS", "").strip()
    try:
        params = json.loads(text) if text else {}
    except json.JSONDecodeError as e:
        raise SystemExit(f"orch_rank: ORCH_PARAMS is not JSON: {e}") from None
    if not isinstance(params, dict):
        raise SystemExit(f"orch_rank: ORCH_PARAMS must be a JSON object, not {_show(params)}")
    return params


def _millis(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000.0


def _failed_start(program: Any, e: BaseException) -> NoReturn:
    # nothing may come before hello on the protocol stream: the reason goes to stderr, whose
    # last lines the worker quotes when the rank exits
    traceback.print_exception(e, file=sys.stderr)
    name = getattr(program, "name", None) or type(program).__name__
    print(f"orch_rank: {name} could not start: {type(e).__name__}: {e}", file=sys.stderr)
    sys.stderr.flush()
    os._exit(EXIT_FAILED)


def _cuda_initialised() -> str | None:
    """What says prepare() initialised CUDA, or None: torch's own word when it is imported."""
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_initialized():
            return "torch.cuda.is_initialized() is True"
    except Exception:  # a torch without CUDA support
        return None
    return None


def _host_phase(channel: Channel, prepare: Callable[[], None]) -> float:
    """prepare() with no device visible, `prepared`, then the wait for `open`; its devices become
    CUDA_VISIBLE_DEVICES. Returns prepare()'s ms; exits when the program or the worker broke the rule."""
    os.environ[HOST_PHASE_DEVICES_ENV] = ""
    prepare_ms = _millis(prepare)
    why = _cuda_initialised()
    if why is not None:
        channel.send_line({
            "v": 1, "type": "error", "code": PREPARE_TOUCHED_CUDA,
            "message": f"prepare() initialised CUDA ({why}); orch will start this rank inside its lease",
            "fatal": True, "final": True,
        })  # fmt: skip
        os._exit(EXIT_USER_ERROR)
    channel.send_line({"v": 1, "type": "prepared", "prepare_ms": prepare_ms})
    raw = channel.next_line()
    if raw == b"":
        os._exit(EXIT_OK)  # the worker gave the rank up before its lease
    try:
        if raw is None:
            raise ValueError("a line over the line limit")
        obj = json.loads(raw)
        if not (isinstance(obj, dict) and set(obj) == {"v", "op", "devices"} and obj["v"] == 1 and not isinstance(obj["v"], bool)
                and obj["op"] == "open" and isinstance(obj["devices"], str)):
            raise ValueError('expected {"v":1,"op":"open","devices":"..."}')
    except (ValueError, UnicodeDecodeError) as e:
        channel.send_line({"v": 1, "type": "error", "code": "BAD_REQUEST", "message": f"waiting for open: {e}", "fatal": True, "final": True})
        os._exit(EXIT_USER_ERROR)
    os.environ[HOST_PHASE_DEVICES_ENV] = obj["devices"]
    return prepare_ms


def serve(program: Any, prepare: Callable[[], None] | None = None) -> NoReturn:
    """Serves the protocol for `program` until stdin closes; never returns. `prepare` (or the
    program's own prepare()) runs before setup(): ranklib/PROTOCOL.md "Host phase"."""
    channel = Channel(_take_stdout(), sys.stdin.buffer)
    set_channel(channel)
    params = _params()
    try:
        runner = Runner(program)
        first = prepare if prepare is not None else runner.prepare
        if os.environ.get(HOST_PHASE_ENV) == "1":
            prepare_ms = _host_phase(channel, first)
        else:
            prepare_ms = _millis(first)
        setup_ms = _millis(lambda: runner.start(params))
    except Exception as e:
        _failed_start(program, e)
    server = _Server(runner, channel)
    server.prepare_ms, server.setup_ms = prepare_ms, setup_ms
    server.send(server.encode(server.hello()))
    for raw in channel.lines():
        data, fatal = server.answer(raw)
        server.send(data)
        if fatal:
            sys.stderr.flush()
            # a lost CUDA context can hang or crash interpreter teardown: leave at once
            os._exit(EXIT_FAILED)
    sys.exit(EXIT_OK)
