"""TFLM's struct sizes per word size, as compiled from TFLM's own headers.

Loaded from ``refsim/memory/tflm_sizes.json``, which :mod:`refsim.lab.tflm.sizeof_probe` derives by
compiling ``refsim/lab/tflm/sizeof_probe/*.cpp`` (arm-none-eabi-g++ for the 32-bit table, host g++ for
the 64-bit one) and reading the array sizes back with ``nm -S``. Nothing here is typed in by hand: a
type missing from the data file is an error naming it.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path

from refsim.errors import RefsimError

DATA = Path(__file__).parent.parent / "tflm_sizes.json"
WORD_SIZES = (32, 64)


class SizesError(RefsimError):
    """tflm_sizes.json is missing or lacks a type the arena model needs."""


@dataclass(frozen=True)
class Layout:
    """``sizeof`` and ``alignof`` of one type, in bytes."""

    size: int
    align: int


@dataclass(frozen=True)
class TflmSizes:
    """The probed table of one word size."""

    word_size: int
    sizeof: dict[str, int]
    alignof: dict[str, int]
    provenance: dict

    def __getitem__(self, name: str) -> Layout:
        try:
            return Layout(self.sizeof[name], self.alignof[name])
        except KeyError:
            raise SizesError(
                f"TFLM sizes: {DATA.name} has no {self.word_size}-bit sizeof/alignof of {name} "
                "(add it to refsim/lab/tflm/sizeof_probe and rerun the probe with --write)"
            ) from None

    def has(self, name: str) -> bool:
        return name in self.sizeof

    @property
    def source(self) -> str:
        p = self.provenance.get(f"word{self.word_size}", {})
        compiler = str(p.get("compiler", "?"))
        return f"{DATA.name} (sizeof probe, {compiler.split(' (')[0]} {compiler.split()[-2] if ' ' in compiler else ''})"


@functools.cache
def tflm_sizes(word_size: int = 32, path: Path = DATA) -> TflmSizes:
    if word_size not in WORD_SIZES:
        raise SizesError(f"TFLM sizes: word size {word_size} not probed: expected one of {WORD_SIZES}")
    try:
        data = json.loads(path.read_text())
        table = data[f"word{word_size}"]
        sizeof = dict(table["sizeof"])
        if word_size == 64:  # the wheel's own sizes where its newer TFLM differs (see "wheel64")
            sizeof.update(data.get("wheel64", {}).get("sizeof", {}))
        return TflmSizes(word_size, sizeof, dict(table["alignof"]), data.get("provenance", {}))
    except (OSError, ValueError, KeyError) as exc:
        raise SizesError(f"TFLM sizes: cannot read the {word_size}-bit table of {path}: {exc}") from exc
