"""Beside ExecuTorch 1.5.1's own cortex_m flow (needs executorch: the interop venv).

- ExecuTorch's loader (flatbuffer verifier on) accepts every program refsim compiles.
- Same model, same calibration data, ExecuTorch's observers (``observers="executorch"``): the
  two programs carry the same quantization parameters, weights, biases, multipliers and shifts,
  and refsim's outputs are bit-identical.
- Our own observers: the parameters side by side and the largest output difference in LSB,
  printed (``pytest -s``); both programs track the float model.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchao")
pytest.importorskip("executorch.runtime")

from executorch.runtime import Runtime  # noqa: E402

from compiler import zoo  # noqa: E402
from compiler.api import compile  # noqa: E402
from compiler.evaluate import agreement, run_float_inputs  # noqa: E402
from kernels_py.quantize import quantize_per_tensor  # noqa: E402
from refsim.pte import load_program  # noqa: E402
from refsim.pte import model as m  # noqa: E402
from refsim.runtime import Program  # noqa: E402
from tests.compiler import executorch_flow  # noqa: E402
from tests.compiler.zoo_cache import compiled  # noqa: E402


@functools.cache
def executorch_pte(name: str) -> bytes:
    return executorch_flow.export(name, "M55", zoo.calibration(zoo.MODELS[name], channels_last=False))


@functools.cache
def ours_with_executorch_observers(name: str) -> bytes:
    spec = zoo.MODELS[name]
    # calibrate on the same channels-last module and inputs ExecuTorch's flow sees: float
    # summation order changes observed ranges in the last bit otherwise
    samples = zoo.calibration(spec, channels_last=True)
    return compile(
        zoo.build(spec, channels_last=True),
        (samples[0],),
        target="cortex-m55",
        calibration=samples,
        observers="executorch",
    ).pte


def _calls(data: bytes) -> list[tuple[str, list]]:
    pf = load_program(data)
    plan = pf.program.plan("forward")
    out = []
    for ins in plan.chains[0].instructions:
        args = []
        for index in ins.args[:-2]:
            v = plan.values[index]
            if isinstance(v, m.Tensor):
                args.append(
                    np.asarray(pf.constant_data(v)).copy() if v.data_buffer_idx else ("planned", v.sizes)
                )
            elif isinstance(v, m.IntList):
                args.append(tuple(plan.values[i].value for i in v.items))
            else:
                args.append(getattr(v, "value", None))
        out.append((plan.operators[ins.op_index].name, args))
    return out


def _max_lsb(a: bytes, b: bytes, name: str, count: int = 16) -> int:
    pa, pb = Program.load(a), Program.load(b)
    worst = 0
    for x in zoo.evaluation_set(zoo.MODELS[name], count).numpy():
        outs = []
        for p in (pa, pb):
            s, z = p.constant_method("forward_input0_scale"), p.constant_method("forward_input0_zp")
            outs.append(
                p.method("forward").execute([quantize_per_tensor(x[None], s, z, -128, 127, np.int8)])[0]
            )
        worst = max(worst, int(np.abs(outs[0].astype(np.int32) - outs[1].astype(np.int32)).max()))
    return worst


@pytest.mark.parametrize("target", ["cortex-m55", "cortex-m4"])
@pytest.mark.parametrize("name", sorted(zoo.MODELS))
def test_executorch_loader_accepts_our_programs(name, target):
    data = compiled(name, target).pte
    program = Runtime.get().load_program(data)
    assert "forward" in program.method_names
    meta = program.metadata("forward")
    assert meta.num_inputs() == 1 and meta.num_outputs() == 1


@pytest.mark.parametrize("name", ["kws", "ic"])
def test_same_observers_give_executorchs_program_bit_for_bit(name):
    ours, theirs = _calls(ours_with_executorch_observers(name)), _calls(executorch_pte(name))
    assert [op for op, _ in ours] == [op for op, _ in theirs]
    for (op, a), (_, b) in zip(ours, theirs, strict=True):
        for k, (x, y) in enumerate(zip(a, b, strict=True)):
            if isinstance(x, np.ndarray):
                np.testing.assert_array_equal(x, y, err_msg=f"{op} argument {k}")
            else:
                assert x == y, (op, k, x, y)
    assert _max_lsb(ours_with_executorch_observers(name), executorch_pte(name), name) == 0


def test_own_observers_side_by_side_with_executorch():
    """KWS: our MinMax/[-127, 127] observers against ExecuTorch's Histogram/[-128, 127] ones."""
    ours, theirs = compiled("kws", "cortex-m55").pte, executorch_pte("kws")
    rows = []
    for (op, a), (_, b) in zip(_calls(ours), _calls(theirs), strict=True):
        if op.endswith(("conv2d", "linear")):
            out_index = 7 if "linear" in op else (8 if "depthwise" in op else 7)
            rows.append((op.split("::")[1], a[out_index], b[out_index]))
    print("\nlayer, output zero point (ours, ExecuTorch's):")
    for row in rows:
        print("  ", *row)
    lsb = _max_lsb(ours, theirs, "kws", 32)
    print(f"kws max output difference: {lsb} LSB (softmax output, 1/256 each)")
    spec = zoo.MODELS["kws"]
    xs = zoo.evaluation_set(spec, 64)
    with torch.no_grad():
        reference = zoo.build(spec, channels_last=False)(xs).numpy()
    for data in (ours, theirs):
        assert agreement(reference, run_float_inputs(data, xs.numpy())).snr_db >= 20
