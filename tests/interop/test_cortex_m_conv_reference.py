"""refsim's conv / depthwise / transpose-conv / linear / batch-matmul ops against ExecuTorch 1.5.1 itself.

Runs only where executorch is installed (``make test-interop``, the .venv-interop virtualenv):

* every model of tests/fixtures/pte/make_conv_fixtures.py is exported live; the .pte must be the
  committed fixture (byte for byte but for the few float32 ulps of the calibrated quantization
  parameters, which follow the machine's float kernels: see ``CALIBRATION_REL``), and refsim must
  reproduce, op by op on the recorded inputs and for the whole program, what ExecuTorch's Python
  reference ops (``backends/cortex_m/ops/operators.py``, run through the cortex_m edge program)
  compute: exactly, and at worst within 2 LSB;
* every such op of every cortex_m fixture (make_fixtures.py's too) is also called directly through
  ``torch.ops.cortex_m.<op>`` on random inputs with the arguments read from the program;
* the scratch sizes refsim reports per tier equal CMSIS-NN's own ``*_get_buffer_size`` (ExecuTorch's
  pybind of the pinned CMSIS-NN) for the M55 (MVE), M4 (DSP) and M3 (scalar) backends;
* where ExecuTorch's references use float math (transpose conv, batch matmul: float32 accumulation)
  they stop matching CMSIS-NN's integers once a sum passes 2^24; `test_float_references_*` pin that.

Known divergences found (not refsim's): the reference quantized_conv2d cannot run a dilated conv on CPU
(torch has no int32 dilated conv: "slow_conv_dilated<> not implemented for 'Int'"); here it is rerun with
an exact float64 conv. Everything else agrees bit for bit on these programs.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib.util
import sys
from pathlib import Path
from unittest import mock

import numpy as np
import pytest

pytest.importorskip("executorch")
torch = pytest.importorskip("torch")

from executorch.backends.cortex_m.library import cmsis_nn  # noqa: E402
from executorch.backends.cortex_m.passes.cortex_m_pass_manager import CortexMPassManager  # noqa: E402, F401

from kernels_py import conv_transpose as ktconv  # noqa: E402
from kernels_py import fully_connected as kfc  # noqa: E402
from kernels_py.fixedpoint import requantize  # noqa: E402
from kernels_py.types import (  # noqa: E402
    BmmParams,
    FcParams,
    PerChannelQuantParams,
    PerTensorQuantParams,
    TransposeConvParams,
)
from refsim.pte import load_program  # noqa: E402
from refsim.pte import model as m  # noqa: E402
from refsim.runtime import Program  # noqa: E402
from tests.runtime.test_cortex_m_conv import (  # noqa: E402
    EXAMPLE_MODELS,
    FIXTURES,
    PROGRAMS,
    RUNTIME_INPUTS,
    Call,
    bind_call,
    calls_of,
    fill_inputs,
    run,
)

_spec = importlib.util.spec_from_file_location("make_conv_fixtures", FIXTURES / "make_conv_fixtures.py")
make_conv_fixtures = importlib.util.module_from_spec(_spec)
sys.modules["make_conv_fixtures"] = make_conv_fixtures  # its dataclasses look their module up
_spec.loader.exec_module(make_conv_fixtures)

MODELS = {f.name: f for f in make_conv_fixtures.MODELS}
ALL_PROGRAMS = [*PROGRAMS, "cm_mixed"]
BACKENDS = {"mve": cmsis_nn.Backend.MVE, "dsp": cmsis_nn.Backend.DSP, "scalar": cmsis_nn.Backend.SCALAR}
#: (fixture, instruction) → why ExecuTorch's reference differs from CMSIS-NN's integers there.
REFERENCE_DIFFERS: dict[tuple[str, int], str] = {}


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    """Export each model once per session: name → (path of the live .pte, Exported)."""
    cache: dict[str, tuple[Path, object]] = {}
    root = tmp_path_factory.mktemp("live")

    def get(name: str):
        if name not in cache:
            exported = make_conv_fixtures.export(MODELS[name])
            path = root / f"{name}.pte"
            path.write_bytes(exported.pte)
            cache[name] = (path, exported)
        return cache[name]

    return get


#: How far a calibrated number of a live export may sit from the committed fixture's, relative.
#: The quantization parameters come from observing the float model on 8 samples on the exporting
#: machine, and torch's float conv/linear kernels sum in an order that depends on the CPU
#: (ATen's AVX-512, AVX2 or scalar paths, oneDNN's ISA): an observed min/max moves by a few
#: float32 ulps (6e-8 relative each), and with it the scales and the Q31 multipliers computed
#: from them. On one machine, ATEN_CPU_CAPABILITY=default against avx512 moved them by at most
#: 2.7e-7; a changed observer or quantization scheme moves them by percents. An int32 constant
#: (bias, multiplier, shift) is rounded from such a number and may also land one unit over.
#: Everything else is exact: the structure, integers below 1e5 in the program (sizes, zero
#: points, offsets) and the int8 weights (quantized from the seeded weights alone).
CALIBRATION_REL = 1e-5


def _assert_same_up_to_calibration(new, old, where: str) -> None:
    """Walk two parsed programs: same structure, strings and enums, numbers within CALIBRATION_REL."""
    if dataclasses.is_dataclass(old):
        assert type(new) is type(old), (where, type(new), type(old))
        for field in dataclasses.fields(old):
            _assert_same_up_to_calibration(
                getattr(new, field.name), getattr(old, field.name), f"{where}.{field.name}"
            )
    elif isinstance(old, (list, tuple)):
        assert isinstance(new, (list, tuple)) and len(new) == len(old), (where, new, old)
        for k, (a, b) in enumerate(zip(new, old, strict=True)):
            _assert_same_up_to_calibration(a, b, f"{where}[{k}]")
    elif isinstance(old, (int, float)) and not isinstance(old, (bool, enum.Enum)):
        assert type(new) is type(old) and abs(new - old) <= CALIBRATION_REL * abs(old), (where, new, old)
    else:
        assert new == old, (where, new, old)


@pytest.mark.parametrize("name", list(MODELS))
def test_export_reproduces_the_fixture(name, live):
    path, _ = live(name)
    data, committed = path.read_bytes(), (FIXTURES / f"{name}.pte").read_bytes()
    if data == committed:
        return
    stale = f"{name}: ExecuTorch now exports a different program; rerun make_conv_fixtures.py"
    assert len(data) == len(committed), stale
    new, old = load_program(data), load_program(committed)
    _assert_same_up_to_calibration(new.program, old.program, "program")
    for plan_new, plan_old in zip(new.program.execution_plan, old.program.execution_plan, strict=True):
        for k, (a, b) in enumerate(zip(plan_new.values, plan_old.values, strict=True)):
            if isinstance(b, m.Tensor) and b.data_buffer_idx:
                x, y = new.constant_data(a), old.constant_data(b)
                where = f"{stale} ({plan_old.name} value {k}, {b.scalar_type.name})"
                if b.scalar_type == m.ScalarType.INT8:
                    np.testing.assert_array_equal(x, y, err_msg=where)
                else:  # float32 scales; int32 (exact in float64, x - y cannot wrap) one unit more
                    atol = 1 if b.scalar_type == m.ScalarType.INT32 else 0
                    x, y = x.astype(np.float64), y.astype(np.float64)
                    np.testing.assert_allclose(x, y, rtol=CALIBRATION_REL, atol=atol, err_msg=where)


@pytest.mark.parametrize("name", list(MODELS))
def test_each_op_matches_the_edge_program_reference(name, live):
    path, exported = live(name)
    arrays = make_conv_fixtures.reference_arrays(exported, path)
    differing = {}
    for instruction in calls_of(path):
        call = bind_call(path, instruction)
        fill_inputs(call, arrays)
        got, want = run(call).astype(np.int32), arrays[f"i{instruction}_out"].astype(np.int32)
        diff = np.abs(got - want)
        assert diff.max() <= 2, (
            f"instruction {instruction} ({call.op.name}): {diff.max()} LSB from the reference"
        )
        if diff.any() and (name, instruction) not in REFERENCE_DIFFERS:
            differing[instruction] = (call.op.name, int(diff.max()), int(np.count_nonzero(diff)))
    assert not differing, f"ops not bit-exact with ExecuTorch's reference: {differing}"


@pytest.mark.parametrize("name", list(MODELS))
def test_whole_program_matches_the_edge_program(name, live):
    path, exported = live(name)
    x = make_conv_fixtures.quantized_input(exported, path)
    want, _, _ = make_conv_fixtures.reference(exported, x)
    (got,) = Program.load(path).method().execute([x])
    np.testing.assert_array_equal(got, want)


# --- the ops called directly, on random inputs -------------------------------------------------------


def _torch_args(call: Call) -> list:
    """The functional op's arguments: tensors in logical shape (legacy activations channels-last)."""
    out = []
    for name, value in zip(call.names[:-1], call.values[:-1], strict=True):
        if hasattr(value, "logical"):
            t = torch.from_numpy(np.array(value.logical))  # a writable copy
            if name in RUNTIME_INPUTS and t.dim() == 4 and "_nhwc" not in call.op.name:
                t = t.to(memory_format=torch.channels_last)
            out.append(t)
        else:
            out.append(list(value) if isinstance(value, tuple) else value)
    return out


def executorch_reference(call: Call) -> np.ndarray:
    base = call.op.name.split("::")[1].split(".")[0]
    op = getattr(torch.ops.cortex_m, base).default
    args = _torch_args(call)
    try:
        result = op(*args)
    except NotImplementedError:  # dilated int32 conv: see the module docstring
        with mock.patch.object(torch.nn.functional, "conv2d", make_conv_fixtures._exact_conv2d):
            result = op(*args)
    return result.contiguous().numpy()


@pytest.mark.parametrize("name", ALL_PROGRAMS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_direct_reference_calls_on_random_inputs(name, seed):
    print(f"seed {seed}")
    rng = np.random.default_rng(seed)
    for instruction in calls_of(name):
        call = bind_call(name, instruction)
        fill_inputs(call, rng)
        got = run(call)
        np.testing.assert_array_equal(
            got, executorch_reference(call), err_msg=f"{name} instruction {instruction}"
        )


@pytest.mark.parametrize("program", EXAMPLE_MODELS, ids=[p.stem for p in EXAMPLE_MODELS])
def test_direct_reference_calls_on_example_models(program):
    rng = np.random.default_rng(0)
    for instruction in calls_of(program):
        call = bind_call(program, instruction)
        fill_inputs(call, rng)
        np.testing.assert_array_equal(
            run(call), executorch_reference(call), err_msg=f"instruction {instruction}"
        )


# --- scratch sizes against CMSIS-NN's own functions ----------------------------------------------------


def cmsis_nn_buffer_size(call: Call, backend) -> int:
    """What ExecuTorch's scratch_buffer_sizes.py asks the pinned CMSIS-NN for, from the program's args."""
    v = dict(zip(call.names, call.values, strict=True))
    a8w8 = cmsis_nn.DataType.A8W8
    if "batch_matmul" in call.op.name:
        _, cols, inner = v["rhs_transposed"].sizes
        return cmsis_nn.fully_connected_buffer_size(backend, a8w8, filter_nhwc=[inner, -1, -1, cols])
    nhwc = "_nhwc" in call.op.name

    def dims(t):
        n, a, b, c = t.sizes
        return [n, a, b, c] if nhwc else [n, b, c, a]

    common = {
        "input_nhwc": dims(v["input"]),
        "padding_hw": list(v["padding"]),
        "stride_hw": list(v["stride"]),
        "dilation_hw": list(v["dilation"]),
        "input_offset": v["input_offset"],
        "output_offset": v["output_offset"],
        "activation_min": v["activation_min"],
        "activation_max": v["activation_max"],
    }
    weight = list(v["weight"].sizes)
    if "depthwise" in call.op.name:
        _, kh, kw, c_out = weight
        return cmsis_nn.depthwise_conv_wrapper_buffer_size(
            backend, a8w8, filter_nhwc=[c_out, kh, kw, 1], output_nhwc=dims(v["out"]),
            ch_mult=v["depth_multiplier"], **common,
        )  # fmt: skip
    if "transpose" in call.op.name:
        offsets = list(v["output_padding"])
        return cmsis_nn.transpose_conv_buffer_size(
            backend,
            a8w8,
            filter_nhwc=weight,
            output_nhwc=dims(v["out"]),
            padding_offsets_hw=offsets,
            **common,
        ) + cmsis_nn.transpose_conv_reverse_conv_buffer_size(
            backend, a8w8, filter_nhwc=weight, padding_offsets_hw=offsets, **common
        )
    return cmsis_nn.convolve_wrapper_buffer_size(
        backend, a8w8, filter_nhwc=weight, output_nhwc=dims(v["out"]), **common
    )


@pytest.mark.parametrize(
    "name", [*ALL_PROGRAMS, *EXAMPLE_MODELS], ids=[*ALL_PROGRAMS, *(p.stem for p in EXAMPLE_MODELS)]
)
@pytest.mark.parametrize("isa", list(BACKENDS))
def test_scratch_bytes_equal_cmsis_nn_buffer_sizes(name, isa):
    for instruction in calls_of(name):
        call = bind_call(name, instruction)
        if "linear" in call.op.name:
            continue  # no scratch: the MVE kernel sums are a constant kernel_sum tensor
        want = cmsis_nn_buffer_size(call, BACKENDS[isa])
        assert call.op.scratch(call.args, isa) == want, f"{name} instruction {instruction} ({call.op.name})"


# --- where the float references part from CMSIS-NN -------------------------------------------------------


def test_float_references_transpose_conv_loses_bits_past_2_24():
    """quantized_transpose_conv2d's reference runs F.conv_transpose2d in float32: a sum of 4096 products
    of 255·(±127) is not exact there. The bias cancels it so that the exact result is 3 (requantized ×1);
    refsim (integer, as CMSIS-NN) gives 3, the reference does not."""
    channels = 4096
    x = np.full((1, channels, 1, 1), 127, np.int8)
    w = np.full((1, 1, 1, channels), 127, np.int8)
    w[..., ::2] = 125
    exact = int(((x.reshape(-1).astype(np.int64) + 128) * w.reshape(-1)).sum())
    bias = np.array([3 - exact], np.int32)
    quant = PerChannelQuantParams(np.array([1 << 30], np.int32), np.array([1], np.int32))
    ours = ktconv.transpose_conv_wrapper_s8(
        x.transpose(0, 2, 3, 1), w, bias, TransposeConvParams(input_offset=128), quant, (1, 1)
    )
    theirs = torch.ops.cortex_m.quantized_transpose_conv2d(
        torch.from_numpy(x).to(memory_format=torch.channels_last), torch.from_numpy(w), torch.from_numpy(bias),
        [1, 1], [0, 0], [0, 0], [1, 1], 128, 0, torch.from_numpy(quant.multiplier), torch.from_numpy(quant.shift),
        -128, 127, torch.empty(0, dtype=torch.uint8), torch.empty(0, dtype=torch.uint8),
    )  # fmt: skip
    assert exact > 2**24
    assert int(ours.reshape(-1)[0]) == 3
    assert int(theirs.reshape(-1)[0]) != 3


def test_float_references_batch_matmul_loses_bits_past_2_24():
    """quantized_batch_matmul's reference runs torch.bmm in float32. Rows whose partial sums climb past
    2^24 before cancelling come out 1 LSB off for some outputs; refsim matches the exact integers."""
    rng = np.random.default_rng(0)
    depth, rows = 4096, 32
    lhs = rng.integers(100, 127, (1, rows, depth), dtype=np.int8)
    rhs = rng.integers(100, 128, (1, rows, depth), dtype=np.int8)
    rhs[:, :, depth // 2 :] *= -1
    multiplier, shift = 1 << 30, -8
    ours = kfc.batch_matmul_s8(
        lhs, rhs, BmmParams(fc_params=FcParams(1, 0, 0)), PerTensorQuantParams(multiplier, shift)
    )
    exact = (lhs[0].astype(np.int64) + 1) @ rhs[0].astype(np.int64).T
    expected = np.clip(
        np.array([[requantize(int(s), multiplier, shift) for s in row] for row in exact]), -128, 127
    )
    theirs = torch.ops.cortex_m.quantized_batch_matmul(
        torch.from_numpy(lhs),
        1,
        torch.from_numpy(rhs),
        0,
        0,
        multiplier,
        shift,
        torch.empty(0, dtype=torch.uint8),
    ).numpy()
    np.testing.assert_array_equal(ours[0], expected)
    diff = np.abs(theirs[0].astype(np.int32) - expected)
    assert 0 < diff.max() <= 1
