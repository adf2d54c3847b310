"""Issue 42's H200 program (bench/h200/user-rank/card-time3.sh): examples/torch-decode/decode.py's
program with a host-side load first — CT3_FILE (a multi-GB file of random bytes) read into host
memory, its pages dropped from the page cache after each read so that every read comes from disk,
read again until CT3_PREPARE_S seconds have passed (default: once), the weights a real program
reads for half a minute — in prepare() (CT3_LOAD=prepare: the worker's host phase overlaps it with
the block before) or in setup() (CT3_LOAD=setup: inside the lease, as a program without prepare()
does). `import torch` comes in prepare() as well: importing initialises no CUDA context."""

import importlib.util
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "ranklib", "python"))
import orch_rank  # noqa: E402

_spec = importlib.util.spec_from_file_location("torch_decode", os.path.join(os.getcwd(), "examples/torch-decode/decode.py"))
decode = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(decode)

WHERE = os.environ.get("CT3_LOAD", "prepare")


def read_once(path):
    chunks = []
    fd = os.open(path, os.O_RDONLY)
    try:
        while True:
            b = os.read(fd, 1 << 26)
            if not b:
                break
            chunks.append(b)
        # the next read comes from the disk again, not the page cache
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    return chunks


def load(path):
    start, reads = time.monotonic(), 0
    least = float(os.environ.get("CT3_PREPARE_S", "0"))
    while True:
        chunks = read_once(path)  # each read replaces the last: host memory holds one copy
        reads += 1
        if time.monotonic() - start >= least:
            break
    mib = sum(len(c) for c in chunks) >> 20
    print(f"card-time3: read {mib} MiB {reads}x in {WHERE}() in {time.monotonic() - start:.1f} s", file=sys.stderr)
    return chunks


class Loaded(decode.Decode):
    def prepare(self):
        super().prepare()  # import torch, the model's weights in host memory (no CUDA context)
        if WHERE == "prepare":
            self.blob = load(os.environ["CT3_FILE"])

    def setup(self, params):
        if WHERE == "setup":
            self.blob = load(os.environ["CT3_FILE"])
        super().setup(params)


orch_rank.serve(Loaded())
