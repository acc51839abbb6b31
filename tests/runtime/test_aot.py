"""The AOT-compiled kernels (refsim.aot) against numba's JIT, bit for bit.

Every conformance function and every bundled program runs twice in this process: once with the
AOT extension (each call whose argument types it was compiled for goes there: the test counts
them, so a routing that silently fell back to the JIT everywhere would fail) and once with
``REFSIM_AOT`` off (numba's dispatchers). The outputs must be identical arrays. The extension is
built first when the current sources have none (``python -m refsim.aot``; minutes, once).
"""

from __future__ import annotations

import importlib.machinery
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from kernels_py import _jit
from refsim.conformance import registry
from refsim.conformance import vectors as vec
from refsim.runtime import Program

MODELS = Path(__file__).resolve().parents[2] / "examples" / "models"


class _Counting(dict):
    """One kernel's AOT entries, counting the calls they serve into ``hits``."""

    def __init__(self, kernel, entries, hits):
        super().__init__(entries)
        self.kernel, self.hits = kernel, hits

    def get(self, key, default=None):
        fn = super().get(key, default)
        if fn is not None:
            self.hits[self.kernel] += 1
        return fn


@pytest.fixture(scope="module")
def aot_table():
    if not (_jit.aot_dir() / "manifest.json").exists():
        from refsim.aot import build

        build()
    _jit.set_aot_table(None)
    table = _jit._load_aot()
    assert table, f"no AOT extension loaded from {_jit.aot_dir()}"
    assert _jit._key is not _jit._python_signature_key, "the C signature key was not loaded"
    yield table
    _jit.set_aot_table(None)


def _use(mode: str, table: dict) -> Counter | None:
    if mode == "jit":
        _jit.set_aot_table({})
        return None
    hits: Counter[str] = Counter()
    _jit.set_aot_table({kernel: _Counting(kernel, entries, hits) for kernel, entries in table.items()})
    return hits


@pytest.mark.parametrize("function", sorted(registry.functions()))
def test_conformance_vectors_aot_equals_jit(function, aot_table):
    cases = list(vec.generate_cases(function, 4, seed=1))  # the seed the AOT workload records
    hits = _use("aot", aot_table)
    aot = [vec.run_case(c) for c in cases]
    _use("jit", aot_table)
    jit = [vec.run_case(c) for c in cases]
    for case, a, j in zip(cases, aot, jit, strict=True):
        assert a.dtype == j.dtype, case.label
        np.testing.assert_array_equal(a, j, err_msg=case.label)
        np.testing.assert_array_equal(a, case.output, err_msg=case.label)
    assert hits, f"{function}: no call reached the AOT code"


@pytest.mark.parametrize("model", sorted(p.stem for p in MODELS.glob("*.pte")))
def test_bundled_programs_aot_equals_jit(model, aot_table):
    with np.load(MODELS / f"{model}.io.npz") as z:
        inputs = [z[k] for k in sorted(z.files) if k.startswith("input")]
    outputs = {}
    for mode in ("aot", "jit"):
        hits = _use(mode, aot_table)
        method = Program.load(MODELS / f"{model}.pte").method("forward")  # fresh: calls resolve at load
        method.execute([np.zeros_like(x) for x in inputs])
        outputs[mode] = method.execute(inputs)
        if hits is not None:
            assert hits, f"{model}: no kernel call reached the AOT code"
    for a, j in zip(outputs["aot"], outputs["jit"], strict=True):
        np.testing.assert_array_equal(a, j)


def test_aot_calls_release_the_gil(aot_table):
    """pycc's wrapper takes the compile flags' release_gil (refsim.aot sets it, as nogil does): the
    extension then calls PyEval_SaveThread around each kernel, so batch threads run on both cores."""
    library = _jit.aot_dir() / (_jit.AOT_MODULE + importlib.machinery.EXTENSION_SUFFIXES[0])
    assert b"PyEval_SaveThread" in library.read_bytes()


def test_signature_key_is_numbas_typeof(aot_table):
    """The key that routes a call to AOT code tells apart every type numba would compile apart."""
    numba = pytest.importorskip("numba")
    base = np.zeros((2, 3), np.int8)
    samples = [
        base, base.T, base[:, ::2], np.zeros((2, 3), np.int16), np.zeros(6, np.int8),
        np.frombuffer(bytes(6), np.int8), np.frombuffer(bytearray(9), np.int32, 2, 1), 3, 3.0, True,
        np.int32(3), np.float32(1), np.bool_(True),
    ]  # fmt: skip
    keys = [_jit.signature_key((x,)) for x in samples]
    types = [numba.typeof(x) for x in samples]
    for x, key in zip(samples, keys, strict=True):  # the C build computes the same codes
        assert _jit._key((x,)) == key, x
    for i in range(len(samples)):
        for j in range(len(samples)):
            assert (keys[i] == keys[j]) == (types[i] == types[j]), (samples[i], samples[j])
    for odd in (
        2**63,
        -(2**63),
        "text",
        None,
        np.zeros(2, ">i4"),
        np.zeros(2, np.float16),
        np.zeros(2).view(np.matrix),
    ):
        assert _jit.signature_key((odd,)) is None and _jit._key((odd,)) is None, odd
