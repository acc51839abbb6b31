"""write → load round trips, the writer's layout, and the committed ExecuTorch fixtures."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given

from refsim.pte import (
    Allocation,
    ExecutionPlan,
    KernelCall,
    NamedData,
    Program,
    ProgramError,
    ScalarType,
    SubsegmentOffsets,
    Tensor,
    load_program,
    rewrite_program,
    write_program,
)
from refsim.pte.writer import CONSTANT_ALIGNMENT, SEGMENT_ALIGNMENT
from tests.pte.strategies import cases

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "pte"


def _check_layout(data: bytes) -> None:
    """The invariants of ExecuTorch's serializer that refsim's writer promises."""
    pf = load_program(data)
    header = pf.header
    assert header is not None and header.length == 32
    assert header.segment_base_offset % SEGMENT_ALIGNMENT == 0
    assert header.program_size <= header.segment_base_offset < header.program_size + SEGMENT_ALIGNMENT
    assert len(data) == header.segment_base_offset + header.segment_data_size
    assert all(seg.offset % SEGMENT_ALIGNMENT == 0 for seg in pf.segments)
    offsets = pf.constant_segment.offsets
    assert pf.constant_segment.segment_index == 0 and offsets[0] == 0
    assert all(o % CONSTANT_ALIGNMENT == 0 for o in offsets)


@given(cases())
def test_write_then_load_gives_the_same_program(case):
    data = write_program(case.program, case.constants, segments=case.segments)
    pf = load_program(data)
    assert pf.program == case.program
    for plan in pf.program.execution_plan:
        for value in plan.values:
            if isinstance(value, Tensor) and value.is_constant:
                expected = case.constants[value.data_buffer_idx][: value.nbytes]
                assert bytes(pf.constant_bytes(value)) == expected
    for entry in case.program.named_data:
        assert bytes(pf.named_blob(entry.key)) == case.segments[entry.segment_index - 1]
    _check_layout(data)
    # Writing what was read reproduces the file byte for byte.
    assert rewrite_program(pf) == data


@given(cases(max_plans=1))
def test_legacy_inline_constants_load_like_the_constant_segment(case):
    program = replace(case.program, named_data=())  # no segments in this layout
    data = write_program(program, case.constants, legacy_constant_buffer=True)
    with pytest.raises(ProgramError, match="deprecated constant_buffer path"):  # as ExecuTorch 1.5.1
        load_program(data)
    pf = load_program(data, allow_legacy_constant_buffer=True)
    assert pf.program == program
    assert pf.uses_legacy_constant_buffer or len(case.constants) == 1
    for plan in pf.program.execution_plan:
        for value in plan.values:
            if isinstance(value, Tensor) and value.is_constant:
                expected = case.constants[value.data_buffer_idx][: value.nbytes]
                assert bytes(pf.constant_bytes(value)) == expected
    rewritten = load_program(rewrite_program(pf))
    assert rewritten.program == program and not rewritten.uses_legacy_constant_buffer


def _weights_program(n: int) -> tuple[Program, list[bytes]]:
    values = tuple(Tensor(ScalarType.INT8, (4,), (0,), data_buffer_idx=k) for k in range(1, n + 1))
    return Program((ExecutionPlan("forward", values=values),)), [b""] + [bytes([k % 2] * 4) for k in range(n)]


def test_identical_constants_are_stored_once_and_aligned():
    program, constants = _weights_program(4)
    pf = load_program(write_program(program, constants))
    assert pf.constant_segment.offsets == (0, 0, 16, 0, 16)
    assert pf.segments[0].size == 20  # no padding after the last blob, as ExecuTorch


def test_constant_data_is_a_read_only_zero_copy_view(tmp_path):
    t = Tensor(ScalarType.INT32, (1, 2, 3, 2), (0, 2, 3, 1), data_buffer_idx=1)
    blob = np.arange(12, dtype="<i4")
    path = tmp_path / "w.pte"
    write_program(Program((ExecutionPlan("forward", values=(t,)),)), [b"", blob], path)
    pf = load_program(path)
    array = pf.constant_data(pf.program.execution_plan[0].values[0])
    assert array.shape == (1, 3, 2, 2)  # memory order (NHWC) for dim_order (0, 2, 3, 1)
    np.testing.assert_array_equal(array.ravel(), blob)
    assert not array.flags.writeable and not array.flags.owndata


def test_mutable_data_segments_give_initial_values():
    t = Tensor(ScalarType.INT16, (2,), (0,), data_buffer_idx=1, allocation=Allocation(1, 4))
    plan = ExecutionPlan("forward", values=(t,), non_const_buffer_sizes=(0, 8))
    program = Program((plan,), mutable_data_segments=(SubsegmentOffsets(1, (0, 3)),))
    pf = load_program(write_program(program, segments=[b"\xff\xff\xff\x01\x02\x03\x04"]))
    assert bytes(pf.mutable_data(pf.program.execution_plan[0].values[0])) == b"\x01\x02\x03\x04"
    with pytest.raises(ProgramError, match=r"execution_plan\[0\]\.values\[0\]\.tensor\.data_buffer_idx"):
        write_program(program, segments=[b"\x00" * 6])


def test_named_data_and_lookup_errors():
    program = Program((ExecutionPlan("forward"),), named_data=(NamedData("lut", 1),))
    pf = load_program(write_program(program, segments=[b"abc"]))
    assert bytes(pf.named_blob("lut")) == b"abc"
    with pytest.raises(ProgramError, match="no named data with key 'x'"):
        pf.named_blob("x")
    with pytest.raises(ProgramError, match="no method named 'x'; the program has 'forward'"):
        pf.program.plan("x")


def test_constants_zero_must_stay_empty():
    program, constants = _weights_program(1)
    with pytest.raises(ProgramError, match=r"^constants\[0\]: reserved"):
        write_program(program, [b"x", *constants[1:]])


def test_values_that_do_not_fit_their_field_are_program_errors():
    plan = ExecutionPlan("forward", values=(Tensor(ScalarType.INT8, (1,), (0,)),))
    with pytest.raises(ProgramError, match=r"^version: "):
        write_program(Program((plan,), version=1))
    huge = Tensor(ScalarType.INT8, (1 << 31,), (0,))
    with pytest.raises(ProgramError, match=r"values\[0\]\.tensor\.sizes\[0\]: size 2147483648 does not fit"):
        write_program(Program((ExecutionPlan("forward", values=(huge,)),)))


# -- the ExecuTorch 1.5.1 exports in tests/fixtures/pte ---------------------------------


def test_fp32_fixture_constants_reproduce_executorchs_output():
    pf = load_program(FIXTURES / "fp32_linear.pte")
    plan = pf.program.plan("forward")
    assert [op.qualified_name for op in plan.operators] == [
        "aten::permute_copy.out",
        "aten::addmm.out",
        "aten::relu.out",
        "aten::add.out",
    ]
    weight, bias, bias2 = (pf.constant_data(v) for v in plan.values[:3])
    io = np.load(FIXTURES / "fp32_linear.io.npz")
    y = np.maximum(io["input0"] @ weight.T + bias, 0) + bias2
    # An fp32 program recomputed in numpy: float results, so a tolerance is the right comparison.
    np.testing.assert_allclose(y, io["output0"], rtol=1e-6)


@pytest.mark.parametrize("name", ["fp32_linear", "cm_conv_linear", "cm_mixed"])
def test_fixtures_survive_a_rewrite(name):
    pf = load_program(FIXTURES / f"{name}.pte")
    again = load_program(rewrite_program(pf))
    assert again.program == pf.program
    assert [bytes(b) for b in again.constants()] == [bytes(b) for b in pf.constants()]


@pytest.mark.parametrize("name", ["cm_conv_linear", "cm_mixed"])
def test_cortex_m_fixture_matches_its_recorded_kernel_calls(name):
    """The .json beside each fixture records its kernel calls, written by make_fixtures.py."""
    pf = load_program(FIXTURES / f"{name}.pte")
    plan = pf.program.plan("forward")
    recorded = json.loads((FIXTURES / f"{name}.json").read_text())
    calls = [i for i in plan.chains[0].instructions if isinstance(i, KernelCall)]
    assert [plan.operators[c.op_index].qualified_name for c in calls] == [c["op"] for c in recorded["calls"]]
    for call, rec in zip(calls, recorded["calls"], strict=True):
        kinds = [type(plan.values[a]).__name__ for a in call.args]
        assert kinds == [arg["kind"] for arg in rec["args"]]
        assert call.args[-1] == call.args[-2]  # the out tensor is also the return value
    config = {p.name: p for p in pf.program.execution_plan if p.name != "forward"}
    assert set(config) >= {"forward_input0_scale", "forward_output0_zp"}
    assert not any(chain.instructions for chain in config["forward_input0_scale"].chains)
