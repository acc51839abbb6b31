"""``refsim run --dump-tensors``: every intermediate tensor as the device holds it (refsim/runtime/dump.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from refsim.runtime import Program
from refsim.runtime.dump import dump_tensors
from refsim.runtime.tensor import TensorRef
from tests.cli_util import assert_one_error_line, refsim

MODELS_DIR = Path(__file__).resolve().parents[2] / "examples" / "models"


def _tensors(call, *, outputs: bool):
    for name, value in call.args.items():
        if "scratch" in name or (name == "out") != outputs:
            continue
        for t in value if isinstance(value, list) else [value]:
            if isinstance(t, TensorRef) and t.storage.flags.writeable:
                yield t


@pytest.mark.parametrize("name", ["kws", "ic", "ad", "kws_m4"])
def test_each_call_recomputes_its_dumped_output_from_its_dumped_inputs(name):
    """The dump is the chain's own values, taken before the arena reused their bytes: every op,
    run again on its dumped inputs, writes exactly its dumped output."""
    program = Program.load(MODELS_DIR / f"{name}.pte")
    method = program.method()
    io = np.load(MODELS_DIR / "kws.io.npz") if name.startswith("kws") else None
    inputs = [io["input0"]] if io is not None else [np.zeros(t.sizes, t.dtype) + 3 for t in method.inputs]
    dumped = dump_tensors(method, inputs)
    (output,) = method.execute(inputs)
    calls = [c for c in method.calls if c is not None]
    final = next(iter(_tensors(calls[-1], outputs=True)))
    np.testing.assert_array_equal(dumped[str(final.index)], final.storage)
    np.testing.assert_array_equal(final.logical, output)
    reused = 0
    for call in calls:
        for t in _tensors(call, outputs=False):
            reused += not np.array_equal(t.storage, dumped[str(t.index)])
            t.storage[...] = dumped[str(t.index)]
        call.op.run(call.args)
        for t in _tensors(call, outputs=True):
            np.testing.assert_array_equal(
                t.storage, dumped[str(t.index)], err_msg=f"{call.op.name} value {t.index}"
            )
    if name == "kws":
        assert reused > 0  # the arena did reuse bytes: a dump read after the run would be wrong


def test_dump_leaves_out_constants_and_scratch():
    method = Program.load(MODELS_DIR / "kws.pte").method()
    dumped = dump_tensors(method, [np.load(MODELS_DIR / "kws.io.npz")["input0"]])
    constants = {t.index for c in method.calls if c for _, v in c.args.items() for t in (v if isinstance(v, list) else [v])
                 if isinstance(t, TensorRef) and not t.storage.flags.writeable}  # fmt: skip
    scratch = {
        v.index
        for c in method.calls
        if c
        for n, v in c.args.items()
        if "scratch" in n and isinstance(v, TensorRef)
    }
    assert constants and scratch
    assert not ({int(k) for k in dumped} & (constants | scratch))
    assert {int(k) for k in dumped} >= {t.index for t in method.inputs + method.outputs}


def test_cli_writes_the_dump_and_refuses_an_unwritable_path_in_one_line(capsys, tmp_path):
    kws = MODELS_DIR / "kws.pte"
    code, _, err = refsim(
        capsys, "run", kws, "-q", "--dump-tensors", tmp_path / "t.npz", "--inputs", MODELS_DIR / "kws.io.npz"
    )
    assert code == 0, err
    assert len(np.load(tmp_path / "t.npz").files) == 15
    missing = tmp_path / "no" / "such" / "dir"
    assert_one_error_line(
        refsim(capsys, "run", kws, "-q", "--dump-tensors", missing / "t.npz"),
        "--dump-tensors",
        "cannot write",
    )
    assert_one_error_line(
        refsim(capsys, "run", kws, "-q", "--outputs", missing / "o.npz"), "--outputs", "cannot write"
    )
