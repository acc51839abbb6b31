"""Which front door a model file takes (DESIGN.md, "Two front doors, one house"): its
flatbuffer file identifier, bytes 4..8 — "ET12" an ExecuTorch .pte, "TFL3" a TFLite model —
never its file name."""

from __future__ import annotations

import os

PTE = "pte"
TFLITE = "tflite"
_IDENTIFIERS = {b"ET12": PTE, b"TFL3": TFLITE}


def model_format(source: str | os.PathLike | bytes | bytearray | memoryview) -> str | None:
    """``"pte"``, ``"tflite"``, or None (unreadable, too short or another identifier: the
    caller's loader then reports what is wrong)."""
    if isinstance(source, str | os.PathLike):
        try:
            with open(source, "rb") as f:
                head = f.read(8)
        except OSError:
            return None
    else:
        head = bytes(memoryview(source).cast("B")[:8])
    return _IDENTIFIERS.get(head[4:8]) if len(head) == 8 else None
