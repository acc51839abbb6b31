"""The oracle of the .tflite execution tests: TFLM's own interpreter (the ``tflite-micro`` wheel,
an x86-64 build of TFLM with its reference kernels), every intermediate tensor side by side with
refsim's dump of the same run.

TFLM's reference integer kernels and CMSIS-NN compute the same bits by design (CMSIS-NN is
tested against them); where they do not, the difference is refsim's to document, not to hide:
`assert_matches_tflm` compares every tensor either side holds, exactly. The interpreter runs in
a spawned process of its own (tests/tflite/tflm_worker.py says why), one per test process.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

import numpy as np
import pytest

from refsim.runtime import Program
from refsim.runtime.dump import dump_tensors
from tests.tflite import tflm_worker

pytest.importorskip(
    "tflite_micro.python.tflite_micro.runtime",
    reason="tflite-micro (TFLM's interpreter, in the test extra) is not installed",
)

_pool: ProcessPoolExecutor | None = None


def tflm_run(data: bytes, inputs: Sequence[np.ndarray], tensors: Sequence[int]):
    """TFLM's ``({tensor: array}, [outputs])`` after one Invoke (tflm_worker.run), in the worker
    process; a worker that died is replaced once, and a second death is the model's failure."""
    global _pool
    for attempt in range(2):
        if _pool is None:
            _pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
        try:
            return _pool.submit(tflm_worker.run, bytes(data), list(inputs), list(tensors)).result()
        except BrokenProcessPool:
            _pool = None
            if attempt:
                raise
    raise AssertionError("unreachable")


def assert_matches_tflm(data: bytes, inputs: Sequence[np.ndarray]) -> int:
    """Run ``data`` in refsim and in TFLM on ``inputs``; every tensor refsim's run touched (its
    ``--dump-tensors`` content: inputs, intermediates, outputs) equals TFLM's, bit for bit
    (float32 compared as bits), and so do the outputs. Returns how many tensors were compared."""
    program = Program.load(data)
    method = program.method()
    ours = dump_tensors(method, list(inputs))
    outputs = method.execute(list(inputs))
    n_tensors = len(program.file.file.model.subgraphs[0].tensors)
    # every key is a tensor of the subgraph (the wheel's GetTensor does not check the index)
    assert all(int(k) < n_tensors for k in ours), (
        f"refsim dumped values {sorted(ours)} beyond {n_tensors} tensors"
    )
    theirs, their_outputs = tflm_run(data, inputs, [int(k) for k in ours])
    for key, mine in ours.items():
        _assert_same(mine.reshape(theirs[int(key)].shape), theirs[int(key)], f"tensor {key}")
    assert len(outputs) == len(their_outputs)
    for k, mine in enumerate(outputs):
        _assert_same(mine, their_outputs[k], f"output{k}")
    return len(ours)


def _assert_same(mine: np.ndarray, theirs: np.ndarray, what: str) -> None:
    assert mine.dtype == theirs.dtype, f"{what}: dtype {mine.dtype}, TFLM {theirs.dtype}"
    if mine.dtype.kind == "f":
        mine, theirs = mine.view(f"u{mine.itemsize}"), theirs.view(f"u{theirs.itemsize}")
    if not np.array_equal(mine, theirs):
        diff = np.flatnonzero(mine.reshape(-1) != theirs.reshape(-1))
        first = int(diff[0])
        raise AssertionError(
            f"{what}: {diff.size} of {mine.size} elements differ; first at flat index {first}: "
            f"refsim {mine.reshape(-1)[first]}, TFLM {theirs.reshape(-1)[first]}"
        )


def random_inputs(program_data: bytes, seed: int) -> list[np.ndarray]:
    """One random input per model input, in its type and shape (integers over the full range)."""
    method = Program.load(program_data).method()
    rng = np.random.default_rng(seed)
    inputs = []
    for slot in method.inputs:
        if slot.dtype.kind == "f":
            inputs.append(rng.standard_normal(slot.sizes).astype(slot.dtype))
        else:
            info = np.iinfo(slot.dtype)
            inputs.append(rng.integers(info.min, info.max, slot.sizes, dtype=slot.dtype, endpoint=True))
    return inputs
