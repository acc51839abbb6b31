"""Run by a Python that has the ``tflite-micro`` wheel: print the wheel's arena figures for a model.

    python tflm_wheel_oracle.py MODEL.tflite   ->  {"total": N, "head": N, "tail": N, "min": N}

``total``/``head``/``tail``: RecordingMicroAllocator::PrintAllocations (stderr, captured through
fd 2) on a 1 MiB arena. ``min``: the smallest ``arena_size`` ``Interpreter.from_bytes`` accepts,
by bisection (each try builds a fresh interpreter in a forked child; AllocateTensors runs in its
constructor, and a crash counts as a refusal).
"""

import json
import os
import re
import sys
import tempfile

from tflite_micro.python.tflite_micro import runtime


def report(data: bytes, arena: int) -> dict:
    with tempfile.TemporaryFile() as tmp:
        saved = os.dup(2)
        os.dup2(tmp.fileno(), 2)
        try:
            runtime.Interpreter.from_bytes(data, arena_size=arena).print_allocations()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        tmp.seek(0)
        text = tmp.read().decode()
    found = dict(re.findall(r"Arena allocation (total|head|tail) (\d+) bytes", text))
    return {k: int(v) for k, v in found.items()}


def fits(data: bytes, arena: int) -> bool:
    """Whether AllocateTensors accepts ``arena`` bytes, tried in a forked child: on some too-small
    arenas TFLM writes through a failed allocation (e.g. fully_connected_common.cc's per-channel
    arrays are not checked for nullptr) and crashes, which counts as not accepted."""
    pid = os.fork()
    if pid == 0:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        try:
            runtime.Interpreter.from_bytes(data, arena_size=arena)
            os._exit(0)
        except RuntimeError:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def main() -> None:
    with open(sys.argv[1], "rb") as f:
        data = f.read()
    out = report(data, 1 << 20)
    lo, hi = 0, 1 << 20
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if fits(data, mid) else (mid, hi)
    out["min"] = hi
    print(json.dumps(out))


if __name__ == "__main__":
    main()
