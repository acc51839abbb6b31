"""Corrupt files load or raise ProgramError: never another exception, a hang or a big allocation.

Mutations aim at what a flatbuffer trusts: 4-byte words (offsets, vector lengths, vtable
entries), 8-byte words (header fields, segment offsets and sizes), single bits, and the
file's length.
"""

from __future__ import annotations

import contextlib
import random
import time
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from refsim.pte import ProgramError, load_program, write_program
from tests.pte.test_validation import CONSTANTS, PROGRAM, SEGMENTS

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "pte"
FILES = {
    "handmade": write_program(PROGRAM, CONSTANTS, segments=SEGMENTS),
    "legacy": write_program(
        PROGRAM.__class__(PROGRAM.execution_plan, backend_delegate_data=PROGRAM.backend_delegate_data),
        CONSTANTS,
        legacy_constant_buffer=True,
    ),
    **{p.stem: p.read_bytes() for p in sorted(FIXTURES.glob("*.pte"))},
}
INTERESTING = [0, 1, 2, 3, 4, 7, 8, 0x7F, 0x80, 0xFF, 0x7FFF, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF]
SECONDS_PER_LOAD = 2.0
PEAK_BYTES = 32 << 20
#: The byte mutations of :func:`_mutate` (4-byte words twice as often: offsets, lengths).
KINDS = ["bit", "u16", "u32", "u32", "u64", "truncate"]


def _mutate(data: bytearray, kind: str, where: int, value: int) -> bytearray:
    n = len(data)
    if n == 0:
        return data
    if kind == "truncate":
        return data[: where % n]
    if kind == "bit":
        data[where % n] ^= 1 << (value % 8)
    elif kind == "u32" and n >= 4:
        pos = (where % (n // 4)) * 4
        data[pos : pos + 4] = (value & 0xFFFFFFFF).to_bytes(4, "little")
    elif kind == "u64" and n >= 8:
        pos = (where % (n // 8)) * 8
        data[pos : pos + 8] = (value & (1 << 64) - 1).to_bytes(8, "little")
    elif kind == "u16" and n >= 2:
        pos = (where % (n // 2)) * 2
        data[pos : pos + 2] = (value & 0xFFFF).to_bytes(2, "little")
    return data


def _load_survives(data: bytes) -> None:
    start = time.perf_counter()
    with contextlib.suppress(ProgramError):
        load_program(data)
    assert time.perf_counter() - start < SECONDS_PER_LOAD


mutations = st.lists(
    st.tuples(
        st.sampled_from(KINDS),
        st.integers(0, 1 << 20),
        st.sampled_from(INTERESTING) | st.integers(0, (1 << 64) - 1),
    ),
    min_size=1,
    max_size=6,
)


@given(st.sampled_from(sorted(FILES)), mutations)
def test_corrupt_files_raise_only_program_errors(name, changes):
    data = bytearray(FILES[name])
    for kind, where, value in changes:
        data = _mutate(data, kind, where, value)
    tracemalloc.start()
    try:
        _load_survives(bytes(data))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < PEAK_BYTES


@pytest.mark.parametrize("name", sorted(FILES))
def test_many_seeded_corruptions(name):
    """A bulk campaign, cheaper per case than hypothesis: the seed is fixed, so failures replay."""
    rng = random.Random(f"refsim-pte-{name}")
    original = FILES[name]
    for _ in range(300):
        data = bytearray(original)
        for _ in range(rng.randint(1, 4)):
            kind = rng.choice(["bit", "u16", "u32", "u32", "u64", "truncate"])
            value = rng.choice(INTERESTING) if rng.random() < 0.6 else rng.getrandbits(64)
            data = _mutate(data, kind, rng.getrandbits(20), value)
        _load_survives(bytes(data))


@pytest.mark.parametrize("name", sorted(FILES))
def test_every_truncation(name):
    original = FILES[name]
    step = max(1, len(original) // 400)
    for n in range(0, len(original), step):
        with pytest.raises(ProgramError):
            load_program(original[:n])
