"""Which backend a program runs on, decided once after its setup().

The rule: `cuda` when the program has imported torch (setup() is where it does) and
torch.cuda.is_available(), unless the program sets `backend = "cpu"`; else `cpu`. torch is never
imported here: a pure-Python program must not pay seconds of `import torch` for nothing.
"""

from __future__ import annotations

import platform
import sys
from dataclasses import dataclass
from types import ModuleType
from typing import Any


@dataclass(frozen=True)
class Backend:
    name: str  # "cuda" | "cpu"
    device: str
    torch: ModuleType | None  # set on cuda only


def detect(program: Any = None) -> Backend:
    wanted = getattr(program, "backend", None)
    if wanted not in (None, "cuda", "cpu"):
        raise ValueError(f"program.backend is {wanted!r}: 'cuda', 'cpu' or unset")
    torch = sys.modules.get("torch")
    if wanted != "cpu" and torch is not None and torch.cuda.is_available():
        return Backend("cuda", torch.cuda.get_device_name(torch.cuda.current_device()), torch)
    if wanted == "cuda":
        raise RuntimeError("program.backend is 'cuda' but torch is not imported or sees no GPU")
    return Backend("cpu", _cpu_name(), None)


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "cpu"
