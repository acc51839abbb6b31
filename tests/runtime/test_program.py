"""The runtime core on programs built by hand: arenas, dim_order views, the plan verifier,
the interpreter's control flow and its load-time argument checks."""

from __future__ import annotations

import numpy as np
import pytest

from refsim.errors import UnsupportedError
from refsim.ops.registry import OpError
from refsim.pte import model as m
from refsim.pte import write_program
from refsim.runtime import ExecutionError, PlanError, Program

CLONE = m.Operator("dim_order_ops::_clone_dim_order", "out")
F32 = m.ScalarType.FLOAT32


def planned(sizes, offset, dim_order=None, st=F32):
    return m.Tensor(
        st, tuple(sizes), tuple(dim_order or range(len(sizes))), allocation=m.Allocation(1, offset)
    )


def program(values, instructions, inputs=(0,), outputs=(1,), arena=256, delegates=(), blobs=()):
    plan = m.ExecutionPlan(
        name="forward",
        values=tuple(values),
        inputs=tuple(inputs),
        outputs=tuple(outputs),
        chains=(m.Chain(inputs=tuple(inputs), outputs=tuple(outputs), instructions=tuple(instructions)),),
        operators=(CLONE,),
        delegates=tuple(delegates),
        non_const_buffer_sizes=(0, arena),
    )
    return Program.load(write_program(m.Program(execution_plan=(plan,), backend_delegate_data=tuple(blobs))))


def clone_values(x, y):
    # values: 0 x, 1 y, 2 non_blocking, 3 dim_order (None)
    return [x, y, m.Bool(False), m.Null()]


CLONE_CALL = m.KernelCall(0, (0, 2, 3, 1, 1))


def test_clone_program_runs_in_its_arena():
    p = program(clone_values(planned([2, 3], 0), planned([2, 3], 64)), [CLONE_CALL])
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    (y,) = p.method().execute([x])
    np.testing.assert_array_equal(y, x)
    # the output lives at its planned offset in arena 1
    arena = p.method().arenas[1]
    np.testing.assert_array_equal(np.frombuffer(arena, np.float32, 6, 64), x.reshape(-1))


def test_channels_last_tensor_stores_nhwc_bytes():
    x_meta = planned([1, 2, 2, 3], 0, dim_order=(0, 2, 3, 1))
    y_meta = planned([1, 2, 2, 3], 64, dim_order=(0, 2, 3, 1))
    p = program(clone_values(x_meta, y_meta), [CLONE_CALL])
    method = p.method()
    x = np.arange(12, dtype=np.float32).reshape(1, 2, 2, 3)  # logical NCHW
    (y,) = method.execute([x])
    np.testing.assert_array_equal(y, x)
    stored = np.frombuffer(method.arenas[1], np.float32, 12, 0).reshape(1, 2, 3, 2)  # memory order NHWC
    np.testing.assert_array_equal(stored, x.transpose(0, 2, 3, 1))


def test_overlapping_live_tensors_are_rejected_at_load():
    with pytest.raises(PlanError, match=r"values\[0\].*overlaps values\[1\]"):
        program(clone_values(planned([2, 3], 0), planned([2, 3], 8)), [CLONE_CALL])


@pytest.mark.parametrize(("z_offset", "ok"), [(0, True), (4, False)])
def test_tensors_on_exactly_the_same_bytes_are_an_alias_not_an_overlap(z_offset, ok):
    # x (input and output, so live throughout) and z (used at instruction 1) share arena bytes:
    # the same bytes = a view of x (ExecuTorch's flatten), shifted bytes = a broken plan.
    values = [
        *clone_values(planned([2, 3], 0), planned([2, 3], 64)),
        planned([6], z_offset),
        planned([6], 128),
    ]
    calls = [CLONE_CALL, m.KernelCall(0, (4, 2, 3, 5, 5))]
    if ok:
        p = program(values, calls, outputs=(1, 0, 5))
        x = np.arange(6, dtype=np.float32).reshape(2, 3)
        _, _, w = p.method().execute([x])
        np.testing.assert_array_equal(w, x.reshape(-1))
    else:
        with pytest.raises(PlanError):
            program(values, calls, outputs=(1, 0, 5))


def test_a_written_tensor_on_live_bytes_is_not_a_view():
    # z sits on x's bytes (x is live to the end: an output), but an op writes z: ExecuTorch's
    # elided views are never written, so this is an overlap, equal sizes or not.
    values = [*clone_values(planned([2, 3], 0), planned([2, 3], 64)), planned([6], 0)]
    with pytest.raises(PlanError, match="neither an elided view nor an in-place result"):
        program(values, [CLONE_CALL, m.KernelCall(0, (1, 2, 3, 4, 4))], outputs=(1, 0, 4))


def test_a_method_output_on_live_bytes_is_not_a_view():
    # ExecuTorch never elides a view that is a graph output (ReplaceViewCopyWithViewPass).
    values = [*clone_values(planned([2, 3], 0), planned([2, 3], 64)), planned([6], 0)]
    with pytest.raises(PlanError, match=r"values\[0\].*overlaps values\[4\]"):
        program(values, [CLONE_CALL], outputs=(1, 0, 4))


def test_a_non_contiguous_tensor_on_live_bytes_is_not_a_view():
    # a _ViewSpec has the contiguous dim order of its shape
    values = [
        *clone_values(planned([1, 2, 3], 0), planned([1, 2, 3], 64)),
        planned([1, 3, 2], 0, dim_order=(0, 2, 1)),
        planned([1, 3, 2], 128),
    ]
    with pytest.raises(PlanError):
        program(values, [CLONE_CALL, m.KernelCall(0, (4, 2, 3, 5, 5))], outputs=(1, 0, 5))


def test_tensor_outside_its_arena_is_rejected():
    from refsim.pte import ProgramError

    with pytest.raises(ProgramError):
        program(clone_values(planned([2, 3], 0), planned([2, 3], 250)), [CLONE_CALL])


def test_jump_loop_stops_at_the_instruction_bound():
    values = [*clone_values(planned([2, 3], 0), planned([2, 3], 64)), m.Bool(False)]
    loop = [CLONE_CALL, m.JumpFalseCall(4, 0)]  # cond is False: jump back to 0 forever
    p = program(values, loop)
    with pytest.raises(ExecutionError, match="more than 50 instructions"):
        p.method().execute([np.zeros((2, 3), np.float32)], max_instructions=50)
    with pytest.raises(ExecutionError, match="jump loop"):
        p.method().execute([np.zeros((2, 3), np.float32)])


def test_jump_true_falls_through_and_free_is_a_no_op():
    values = [*clone_values(planned([2, 3], 0), planned([2, 3], 64)), m.Bool(True)]
    p = program(values, [m.JumpFalseCall(4, 0), CLONE_CALL, m.FreeCall(0)])
    x = np.ones((2, 3), np.float32)
    np.testing.assert_array_equal(p.method().execute([x])[0], x)


def test_move_call_rebinds_the_value():
    # values 4 = a second tensor; move x into it, then clone it to y.
    values = [*clone_values(planned([2, 3], 0), planned([2, 3], 64)), planned([2, 3], 128)]
    p = program(values, [m.MoveCall(0, 4), m.KernelCall(0, (4, 2, 3, 1, 1))])
    x = np.full((2, 3), 7, np.float32)
    np.testing.assert_array_equal(p.method().execute([x])[0], x)


def test_delegate_call_names_the_backend():
    delegate = m.BackendDelegate("EthosUBackend", m.DataLocation.INLINE, 0)
    plan_values = clone_values(planned([2, 3], 0), planned([2, 3], 64))
    with pytest.raises(UnsupportedError, match="EthosUBackend"):
        p = program(plan_values, [m.DelegateCall(0, (0, 1))], delegates=[delegate], blobs=[b"npu"])
        p.method()


def test_argument_count_and_kind_are_checked_at_load():
    with pytest.raises(OpError, match="expected 4 arguments"):
        program(clone_values(planned([2, 3], 0), planned([2, 3], 64)), [m.KernelCall(0, (0, 2, 1))]).method()
    with pytest.raises(OpError, match=r"non_blocking.*must be BOOL"):
        program(
            clone_values(planned([2, 3], 0), planned([2, 3], 64)), [m.KernelCall(0, (0, 3, 3, 1, 1))]
        ).method()


def test_inputs_are_checked():
    p = program(clone_values(planned([2, 3], 0), planned([2, 3], 64)), [CLONE_CALL])
    method = p.method()
    with pytest.raises(ExecutionError, match="expected shape"):
        method.execute([np.zeros((3, 2), np.float32)])
    with pytest.raises(ExecutionError, match="expected dtype"):
        method.execute([np.zeros((2, 3), np.int8)])
    with pytest.raises(ExecutionError, match="takes 1 inputs"):
        method.execute([])


def test_unknown_method_and_missing_file():
    from refsim.errors import RefsimError

    p = program(clone_values(planned([2, 3], 0), planned([2, 3], 64)), [CLONE_CALL])
    with pytest.raises(RefsimError, match="no method named 'nope'"):
        p.method("nope")
    with pytest.raises(RefsimError, match="no such file"):
        Program.load("/nonexistent/model.pte")
