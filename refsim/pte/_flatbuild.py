"""The flatbuffer building blocks both of refsim's writers use (.pte: refsim/pte/writer.py;
.tflite: refsim/tflite/writer.py) on top of the ``flatbuffers`` package's Builder: numeric
vectors from numpy, byte vectors at a chosen alignment (constant data), vectors of tables and
strings. The Builder has no call for an aligned byte vector whose bytes are copied in one go,
hence :meth:`FlatBuilder.aligned_bytes`; the rest are thin wrappers that keep the writers short."""

from __future__ import annotations

from collections.abc import Sequence

import flatbuffers
import numpy as np


class FlatBuilder:
    """A flatbuffers Builder (``self.b``) with the helpers below; a writer subclasses it and
    builds its tables bottom-up (children before the tables that hold them)."""

    def __init__(self, initial_size: int = 4096) -> None:
        self.b = flatbuffers.Builder(initial_size)

    def vec(self, items: Sequence, dtype: str) -> int:
        return self.b.CreateNumpyVector(np.asarray(items, dtype=dtype).reshape(-1))

    def aligned_bytes(self, data: bytes | memoryview, alignment: int) -> int:
        b = self.b
        b.StartVector(1, len(data), alignment)
        b.head -= len(data)
        b.Bytes[b.head : b.head + len(data)] = data
        b.vectorNumElems = len(data)
        return b.EndVector()

    def tables(self, offsets: list[int]) -> int:
        b = self.b
        b.StartVector(4, len(offsets), 4)
        for off in reversed(offsets):
            b.PrependUOffsetTRelative(off)
        return b.EndVector()

    def string(self, text: str | None) -> int | None:
        return None if text is None else self.b.CreateString(text)


__all__ = ["FlatBuilder"]
