"""cortex_m conv / depthwise / transpose conv / linear / batch matmul ops (refsim/ops/cortex_m_conv.py,
cortex_m_fully_connected.py and the cortex_m_calls.py they share).

The programs are real ExecuTorch 1.5.1 exports (tests/fixtures/pte/make_conv_fixtures.py and
make_fixtures.py). Each KernelCall of these ops is bound on its own (`bind_call`: constants from the
file, every other tensor a private buffer), so the ops are tested without the rest of the program, on
the exact inputs ExecuTorch's Python reference saw (``<name>.ref.npz``) and on random ones. The output
is compared with

* an independent evaluation: kernels_py's public wrappers called here with the parameters read
  straight from the program, on the logical (NCHW) tensors transposed by numpy, and
* ExecuTorch's Python reference ops (recorded in ``<name>.ref.npz``): within 2 LSB, and exactly
  except where `REFERENCE_DIFFERS` says why not.

Whole programs that use only these ops run through `refsim.runtime.Program`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from kernels_py import conv as kconv
from kernels_py import conv_transpose as ktconv
from kernels_py import depthwise as kdw
from kernels_py import fully_connected as kfc
from kernels_py.types import (
    Activation,
    BmmParams,
    ConvParams,
    DwConvParams,
    FcParams,
    PerChannelQuantParams,
    PerTensorQuantParams,
    Tile,
    TransposeConvParams,
)
from refsim.errors import UnsupportedError
from refsim.ops import cortex_m_calls
from refsim.ops.registry import Args, OpDef, OpError, all_ops, lookup
from refsim.pte import KernelCall, load_program
from refsim.pte import model as m
from refsim.runtime import Program
from refsim.runtime.tensor import TensorRef

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "pte"
#: The MLPerf Tiny programs of examples/models (when present): more real calls of these ops.
EXAMPLE_MODELS = sorted((Path(__file__).resolve().parents[2] / "examples" / "models").glob("*.pte"))
OPS = {
    "cortex_m::quantized_conv2d.out",
    "cortex_m::quantized_conv2d_nhwc.out",
    "cortex_m::quantized_depthwise_conv2d.out",
    "cortex_m::quantized_depthwise_conv2d_nhwc.out",
    "cortex_m::quantized_transpose_conv2d.out",
    "cortex_m::quantized_transpose_conv2d_nhwc.out",
    "cortex_m::quantized_linear.out",
    "cortex_m::quantized_batch_matmul.out",
}
#: fixture → the CPU it was exported for (its scratch tensors are sized for that tier).
PROGRAMS = {
    "cm_conv_linear": "mve",
    "cm_conv_zoo": "mve",
    "cm_conv_zoo_m4": "dsp",
    "cm_conv_depthwise": "mve",
    "cm_conv_depthwise_m4": "dsp",
    "cm_conv_transpose": "mve",
    "cm_conv_linear_m55": "mve",
    "cm_conv_linear_m4": "dsp",
    "cm_conv_bmm": "mve",
    "cm_conv_nhwc": "mve",
}
#: (fixture, instruction) → why ExecuTorch's Python reference may differ from CMSIS-NN's integers.
#: Empty: on these programs every op agrees bit for bit (see test_matches_executorch_reference_exactly).
REFERENCE_DIFFERS: dict[tuple[str, int], str] = {}


# --- binding one KernelCall ---------------------------------------------------------------------------


@dataclass
class Call:
    program: str
    instruction: int
    op: OpDef
    args: Args
    names: tuple[str, ...]
    values: list


def _value(pf, plan, index: int):
    v = plan.values[index]
    if isinstance(v, m.Tensor):
        if v.is_constant:
            return TensorRef(index, v, pf.constant_data(v))
        return TensorRef(index, v, np.zeros(v.storage_shape, v.scalar_type.numpy_dtype))
    if isinstance(v, m.Null):
        return None
    if isinstance(v, m.IntList):
        return tuple(plan.values[i].value for i in v.items)
    return v.value


def _path(program: str | Path) -> Path:
    return program if isinstance(program, Path) else FIXTURES / f"{program}.pte"


def bind_call(program: str | Path, instruction: int, **replace_values) -> Call:
    """KernelCall ``instruction`` of the forward method of ``program`` (a fixture name or a path), with
    private buffers; ``replace_values`` substitutes arguments by name (to build invalid calls)."""
    pf = load_program(_path(program))
    plan = pf.program.plan("forward")
    ins = plan.chains[0].instructions[instruction]
    op = lookup(plan.operators[ins.op_index].qualified_name)
    names = tuple(a.name for a in op.schema.args)
    values = [_value(pf, plan, i) for i in ins.args[: len(names)]]
    for name, value in replace_values.items():
        values[names.index(name)] = value
    return Call(str(program), instruction, op, Args(op.name, instruction, names, values), names, values)


def calls_of(program: str | Path) -> list[int]:
    """Instructions of ``program``'s forward that call one of the ops tested here."""
    plan = load_program(_path(program)).program.plan("forward")
    return [
        i
        for i, ins in enumerate(plan.chains[0].instructions)
        if isinstance(ins, KernelCall) and plan.operators[ins.op_index].qualified_name in OPS
    ]


CASES = [(f, i) for f in PROGRAMS for i in calls_of(f)]
CASE_IDS = [f"{f}-i{i}" for f, i in CASES]
#: Calls with recorded ExecuTorch reference data (make_fixtures.py's cm_conv_linear has none).
REF_CASES = [(f, i) for f, i in CASES if (FIXTURES / f"{f}.ref.npz").exists()]
REF_IDS = [f"{f}-i{i}" for f, i in REF_CASES]
RUNTIME_INPUTS = ("input", "lhs", "rhs_transposed")


def reference(fixture: str) -> dict[str, np.ndarray]:
    return dict(np.load(FIXTURES / f"{fixture}.ref.npz"))


def fill_inputs(call: Call, source: dict[str, np.ndarray] | np.random.Generator) -> None:
    """Write each runtime tensor argument: the recorded reference input, or random int8."""
    for name in RUNTIME_INPUTS:
        if name in call.names and not getattr(call.args, name).meta.is_constant:
            ref = getattr(call.args, name)
            if isinstance(source, dict):
                ref.write(source[f"i{call.instruction}_{name}"])
            else:
                ref.write(source.integers(-128, 128, ref.sizes, dtype=np.int8))


def run(call: Call) -> np.ndarray:
    call.op.validate(call.args)
    call.op.run(call.args)
    return call.args.out.logical.copy()


# --- the independent evaluation -----------------------------------------------------------------------


def _tile(pair) -> Tile:
    return Tile(w=int(pair[1]), h=int(pair[0]))


def independent(call: Call) -> np.ndarray:
    """kernels_py's public wrappers, parameters read from the call's values by name."""
    v = dict(zip(call.names, call.values, strict=True))
    name = call.op.name
    if "linear" in name:
        x = v["input"].logical
        act = Activation(v["activation_min"], v["activation_max"])
        fc = FcParams(v["input_offset"], v["filter_offset"], v["output_offset"], act)
        q = PerTensorQuantParams(v["requantize_multipliers"][0], v["requantize_shifts"][0])
        rows = x.reshape(-1, x.shape[-1])
        w = np.asarray(v["weights"].logical)
        if v["kernel_sum"] is not None:
            y = kfc.fully_connected_s8_kernel_sum(
                rows, w, np.asarray(v["kernel_sum"].logical).reshape(-1), fc, q
            )
        else:
            bias = None if v["bias"] is None else np.asarray(v["bias"].logical)
            y = kfc.fully_connected_s8(rows, w, bias, fc, q)
        return y.reshape(v["out"].sizes)
    if "batch_matmul" in name:
        fc = FcParams(v["lhs_zero_point"], v["rhs_zero_point"], v["output_zero_point"])
        q = PerTensorQuantParams(v["output_multiplier"], v["output_shift"])
        lhs, rhs = np.asarray(v["lhs"].logical), np.asarray(v["rhs_transposed"].logical)
        return kfc.batch_matmul_s8(lhs, rhs, BmmParams(fc_params=fc), q)
    nhwc = "_nhwc" in name
    x = np.asarray(v["input"].logical)
    x = x if nhwc else x.transpose(0, 2, 3, 1)
    out_sizes = v["out"].sizes
    out_hw = tuple(out_sizes[1:3]) if nhwc else tuple(out_sizes[2:4])
    common = {
        "input_offset": v["input_offset"],
        "output_offset": v["output_offset"],
        "stride": _tile(v["stride"]),
        "padding": _tile(v["padding"]),
        "dilation": _tile(v["dilation"]),
        "activation": Activation(v["activation_min"], v["activation_max"]),
    }
    q = PerChannelQuantParams(
        np.asarray(v["requantize_multipliers"].logical), np.asarray(v["requantize_shifts"].logical)
    )
    w = np.asarray(v["weight"].logical)
    bias = None if v["bias"] is None else np.asarray(v["bias"].logical)
    if "depthwise" in name:
        y = kdw.depthwise_conv_wrapper_s8(
            x, w, bias, DwConvParams(ch_mult=v["depth_multiplier"], **common), q, out_hw
        )
    elif "transpose" in name:
        params = TransposeConvParams(padding_offsets=_tile(v["output_padding"]), **common)
        y = ktconv.transpose_conv_wrapper_s8(x, w, bias, params, q, out_hw)
    else:
        y = kconv.convolve_wrapper_s8(x, w, bias, ConvParams(**common), q, out_hw)
    return y if nhwc else y.transpose(0, 3, 1, 2)


# --- per-call tests -----------------------------------------------------------------------------------


def test_every_op_is_registered_with_its_nhwc_twin():
    ops = all_ops()
    assert set(ops) >= OPS
    for name in OPS:
        schema_line = ops[name].schema.text
        assert schema_line in (FIXTURES / "cortex_m_op_schemas.txt").read_text().splitlines()


@pytest.mark.parametrize(("fixture", "instruction"), REF_CASES, ids=REF_IDS)
def test_reference_input_matches_independent_evaluation(fixture, instruction):
    call = bind_call(fixture, instruction)
    fill_inputs(call, reference(fixture))
    np.testing.assert_array_equal(run(call), independent(call))


@pytest.mark.parametrize(("fixture", "instruction"), CASES, ids=CASE_IDS)
@pytest.mark.parametrize("seed", [0, 1])
def test_random_input_fast_path_equals_public_wrappers(fixture, instruction, seed, monkeypatch):
    print(f"seed {seed}")
    fast = bind_call(fixture, instruction)
    fill_inputs(fast, np.random.default_rng(seed))
    got = run(fast)
    monkeypatch.setattr(cortex_m_calls, "CHECKED", True)
    checked = bind_call(fixture, instruction)
    fill_inputs(checked, np.random.default_rng(seed))
    np.testing.assert_array_equal(got, run(checked))
    np.testing.assert_array_equal(got, independent(fast))


@pytest.mark.parametrize(("fixture", "instruction"), REF_CASES, ids=REF_IDS)
def test_matches_executorch_reference_within_2_lsb(fixture, instruction):
    ref = reference(fixture)
    call = bind_call(fixture, instruction)
    fill_inputs(call, ref)
    diff = np.abs(run(call).astype(np.int32) - ref[f"i{instruction}_out"].astype(np.int32))
    assert diff.max() <= 2, f"{call.op.name} differs from ExecuTorch's reference by up to {diff.max()} LSB"


@pytest.mark.parametrize(("fixture", "instruction"), REF_CASES, ids=REF_IDS)
def test_matches_executorch_reference_exactly(fixture, instruction):
    if (fixture, instruction) in REFERENCE_DIFFERS:
        pytest.xfail(REFERENCE_DIFFERS[fixture, instruction])
    ref = reference(fixture)
    call = bind_call(fixture, instruction)
    fill_inputs(call, ref)
    np.testing.assert_array_equal(run(call), ref[f"i{instruction}_out"])


@pytest.mark.parametrize(("fixture", "instruction"), CASES, ids=CASE_IDS)
def test_scratch_bytes_equal_what_the_exporter_planned_for_its_target(fixture, instruction):
    call = bind_call(fixture, instruction)
    isa = PROGRAMS[fixture]
    planned = sum(
        getattr(call.args, n).storage.nbytes for n in ("scratch", "output_scratch") if n in call.names
    )
    assert call.op.scratch(call.args, isa) == planned


def test_kernel_names_follow_cmsis_nn_routing():
    def kernel(fixture, instruction, isa):
        call = bind_call(fixture, instruction)
        return call.op.kernel_name(call.args, isa)

    assert kernel("cm_conv_zoo", 0, "mve") == "arm_convolve_s8"
    assert kernel("cm_conv_zoo", 3, "mve") == "arm_convolve_1x1_s8"  # 1x1, stride 2
    # one input channel, depth_multiplier 8: MVE runs it as a conv, DSP as the generic depthwise
    assert kernel("cm_conv_depthwise", 0, "mve") == "arm_convolve_wrapper_s8"
    assert kernel("cm_conv_depthwise", 0, "dsp") == "arm_depthwise_conv_s8"
    assert kernel("cm_conv_depthwise", 2, "dsp") == "arm_depthwise_conv_3x3_s8"
    assert kernel("cm_conv_depthwise", 2, "mve") == "arm_depthwise_conv_s8_opt"
    assert kernel("cm_conv_transpose", 0, "mve") == "arm_transpose_conv_s8"
    assert kernel("cm_conv_transpose", 1, "mve") == "arm_convolve_s8"  # reverse-conv route, C_IN 20
    assert kernel("cm_conv_linear_m55", 0, "mve") == "arm_fully_connected_s8"
    assert kernel("cm_conv_bmm", 2, "mve") == "arm_batch_matmul_s8"


def test_mac_counts():
    def macs(fixture, instruction):
        call = bind_call(fixture, instruction)
        return call.op.macs(call.args)

    assert macs("cm_conv_zoo", 0) == 1 * 5 * 5 * 8 * 3 * 3 * 4
    assert macs("cm_conv_zoo", 2) == 5 * 5 * 8 * 3 * 3 * 4  # grouped: C_IN / groups = 4 per output
    assert macs("cm_conv_depthwise", 1) == 5 * 3 * 16 * 3 * 3
    assert macs("cm_conv_transpose", 0) == 4 * 3 * 4 * 3 * 3 * 20
    assert macs("cm_conv_linear_m55", 0) == 3 * 16 * 12
    assert macs("cm_conv_bmm", 3) == 2 * 4 * 5 * 6


@pytest.mark.parametrize("program", EXAMPLE_MODELS, ids=[p.stem for p in EXAMPLE_MODELS])
def test_example_models_random_inputs_match_independent_evaluation(program):
    rng = np.random.default_rng(0)
    for instruction in calls_of(program):
        call = bind_call(program, instruction)
        fill_inputs(call, rng)
        np.testing.assert_array_equal(run(call), independent(call), err_msg=f"instruction {instruction}")


# --- whole programs -------------------------------------------------------------------------------


def _missing_ops(fixture: str) -> list[str]:
    plan = load_program(FIXTURES / f"{fixture}.pte").program.plan("forward")
    missing = []
    for op in plan.operators:
        try:
            lookup(op.qualified_name)
        except UnsupportedError:
            missing.append(op.qualified_name)
    return missing


@pytest.mark.parametrize("fixture", [f for f in PROGRAMS if f != "cm_conv_linear"])
def test_whole_program_matches_executorch_reference(fixture):
    if missing := _missing_ops(fixture):
        pytest.skip(f"needs ops not registered yet: {', '.join(missing)}")
    ref = reference(fixture)
    (out,) = Program.load(FIXTURES / f"{fixture}.pte").method().execute([ref["input0"]])
    diff = np.abs(out.astype(np.int32) - ref["output0"].astype(np.int32))
    assert diff.max() <= 2


def test_cm_conv_linear_program_runs():
    """make_fixtures.py's conv → depthwise + add → max-pool → linear; each of our calls checked alone."""
    if missing := _missing_ops("cm_conv_linear"):
        pytest.skip(f"needs ops not registered yet: {', '.join(missing)}")
    method = Program.load(FIXTURES / "cm_conv_linear.pte").method()
    x = np.random.default_rng(0).integers(-128, 128, method.inputs[0].sizes, dtype=np.int8)
    seen = []

    def trace(pc, bound, phase):
        if phase == "after" and bound is not None and bound.op.name in OPS:
            names, values = zip(*bound.args.items(), strict=True)
            call = Call("cm_conv_linear", pc, bound.op, bound.args, names, list(values))
            seen.append(pc)
            np.testing.assert_array_equal(bound.args.out.logical, independent(call))

    method.execute([x], trace=trace)
    assert seen == [0, 1, 5]


# --- validation -----------------------------------------------------------------------------------


def tensor(sizes, dim_order=None, dtype=m.ScalarType.INT8, data=None) -> TensorRef:
    dim_order = tuple(range(len(sizes))) if dim_order is None else tuple(dim_order)
    meta = m.Tensor(dtype, tuple(sizes), dim_order)
    storage = np.zeros(meta.storage_shape, dtype.numpy_dtype) if data is None else data
    return TensorRef(0, meta, storage)


INVALID = {
    "contiguous input on the legacy conv": (
        "cm_conv_zoo",
        0,
        {"input": tensor((1, 4, 9, 9))},
        "channels-last",
    ),
    "wrong output extent": ("cm_conv_zoo", 0, {"out": tensor((1, 8, 4, 4), (0, 2, 3, 1))}, "NHWC extent"),
    "int32 input": (
        "cm_conv_zoo",
        0,
        {"input": tensor((1, 4, 9, 9), (0, 2, 3, 1), m.ScalarType.INT32)},
        "int8",
    ),
    "input offset out of range": ("cm_conv_zoo", 0, {"input_offset": 129}, "input_offset"),
    "inverted activation range": (
        "cm_conv_zoo",
        0,
        {"activation_min": 10, "activation_max": 0},
        "activation_min",
    ),
    "stride list too short": ("cm_conv_zoo", 0, {"stride": (2,)}, "stride"),
    "scratch too small": ("cm_conv_zoo", 0, {"scratch": tensor((16,), dtype=m.ScalarType.UINT8)}, "scratch"),
    "shift out of range": (
        "cm_conv_zoo",
        0,
        {"requantize_shifts": tensor((8,), dtype=m.ScalarType.INT32, data=np.full(8, 31, np.int32))},
        "requantize_shifts",
    ),
    "per-channel count": (
        "cm_conv_zoo",
        0,
        {"requantize_multipliers": tensor((7,), dtype=m.ScalarType.INT32)},
        "one per output channel",
    ),
    "depthwise multiplier": ("cm_conv_depthwise", 1, {"depth_multiplier": 3}, "weight"),
    "depthwise batch 2": (
        "cm_conv_depthwise",
        2,
        {"input": tensor((2, 16, 5, 3), (0, 2, 3, 1)), "out": tensor((2, 16, 5, 3), (0, 2, 3, 1))},
        "batch",
    ),
    "channels-last tensor on an _nhwc op": (
        "cm_conv_nhwc",
        1,
        {"input": tensor((1, 6, 6, 3), (0, 3, 1, 2))},
        "contiguous",
    ),
    "transpose conv dilation": ("cm_conv_transpose", 0, {"dilation": (2, 2)}, "dilation"),
    "transpose conv output_padding": (
        "cm_conv_transpose",
        0,
        {"output_padding": (1, 1), "out": tensor((1, 20, 8, 6), (0, 2, 3, 1))},
        "output_padding",
    ),
    "linear per-channel multipliers": (
        "cm_conv_linear_m55",
        0,
        {"requantize_multipliers": (1 << 30,) * 11 + (1 << 29,)},
        "per tensor",
    ),
    "linear bias and kernel_sum": (
        "cm_conv_linear_m55",
        0,
        {"bias": tensor((12,), dtype=m.ScalarType.INT32)},
        "kernel_sum",
    ),
    "linear channels-last input": (
        "cm_conv_linear_m55",
        0,
        {"input": tensor((1, 3, 16), (0, 2, 1))},
        "row-major",
    ),
    "bmm inner dim": ("cm_conv_bmm", 2, {"rhs_transposed": tensor((2, 4, 5))}, "rhs_transposed"),
    "bmm rhs offset": ("cm_conv_bmm", 2, {"rhs_zero_point": -128}, "rhs_zero_point"),
}


@pytest.mark.parametrize("case", INVALID, ids=list(INVALID))
def test_validator_rejects(case):
    fixture, instruction, values, message = INVALID[case]
    call = bind_call(fixture, instruction, **values)
    with pytest.raises(OpError, match=message) as info:
        call.op.validate(call.args)
    assert call.op.name in str(info.value)


def test_validator_reports_kernels_py_rejections_as_op_errors():
    """A transpose conv padding beyond kernel - 1 passes the op's own checks; the dry run of
    arm_transpose_conv_wrapper_s8 rejects it at load, naming the kernel."""
    call = bind_call("cm_conv_transpose", 1, padding=(3, 3), out=tensor((1, 4, 9, 5), (0, 2, 3, 1)))
    with pytest.raises(OpError, match="arm_transpose_conv_wrapper_s8"):
        call.op.validate(call.args)


def test_legacy_op_accepts_one_channel_tensors_of_any_layout():
    """ExecuTorch's is_channels_last_tensor lets one-channel tensors through whatever their dim_order:
    the bytes are NHWC either way (the exporter gives the depthwise input dim_order [0, 2, 1, 3])."""
    call = bind_call("cm_conv_depthwise", 0)
    assert tuple(call.args.input.dim_order) == (0, 2, 1, 3)
    rng = np.random.default_rng(3)
    x = rng.integers(-128, 128, (1, 1, 10, 6), dtype=np.int8)
    call.args.input.write(x)
    first = run(call)
    contiguous = bind_call("cm_conv_depthwise", 0, input=tensor((1, 1, 10, 6)))
    contiguous.args.input.write(x)
    np.testing.assert_array_equal(run(contiguous), first)


def test_plan_follows_a_rebound_argument():
    """A MoveCall may rebind an argument to another tensor; the prepared plan must notice."""
    call = bind_call("cm_conv_zoo", 3)
    first = tensor((1, 8, 5, 5), (0, 2, 3, 1))
    call.values[call.names.index("input")] = first
    call.op.validate(call.args)
    second = tensor((1, 8, 5, 5), (0, 2, 3, 1))
    second.write(np.random.default_rng(5).integers(-128, 128, (1, 8, 5, 5), dtype=np.int8))
    call.values[call.names.index("input")] = second
    call.op.run(call.args)
    np.testing.assert_array_equal(call.args.out.logical, independent(call))


def test_fixture_json_matches_program():
    """The .json listings are what make_conv_fixtures.py wrote for these .pte files."""
    for fixture in PROGRAMS:
        listed = json.loads((FIXTURES / f"{fixture}.json").read_text())["calls"]
        plan = load_program(FIXTURES / f"{fixture}.pte").program.plan("forward")
        kernel_calls = [i for i in plan.chains[0].instructions if isinstance(i, KernelCall)]
        assert [c["op"] for c in listed] == [plan.operators[k.op_index].qualified_name for k in kernel_calls]
