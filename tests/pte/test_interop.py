"""Interoperability with the real ExecuTorch 1.5.1: its exports load in refsim, and its
runtime loads and runs what refsim writes.

Needs torch==2.13.0 and ``executorch[ethos-u]==1.5.1``, which pin numpy 2.1.3: install them
in their own virtualenv, never in refsim's .venv (see tests/fixtures/pte/make_fixtures.py),
and run ``PYTHONPATH=. <that venv>/bin/python -m pytest tests/pte/test_interop.py``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

pytest.importorskip(
    "executorch",
    reason="ExecuTorch 1.5.1 is not installed (it pins numpy 2.1.3: needs its own venv, see the docstring)",
)
torch = pytest.importorskip("torch")

from executorch.exir import to_edge  # noqa: E402
from executorch.exir._serialize._program import deserialize_pte_binary  # noqa: E402
from executorch.runtime import Runtime  # noqa: E402

from refsim.pte import (  # noqa: E402
    Allocation,
    Chain,
    ExecutionPlan,
    Int,
    KernelCall,
    Operator,
    Program,
    ScalarType,
    Tensor,
    load_program,
    rewrite_program,
    write_program,
)
from tests.pte.strategies import cases  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "pte"
sys.path.insert(0, str(FIXTURES))
import make_fixtures  # noqa: E402


def _et_view(data: bytes):
    """ExecuTorch's own Python deserializer's Program (constants restored into constant_buffer)."""
    return deserialize_pte_binary(data).program


def _et_constant(et, pf, idx: int) -> bytes:
    """Constant ``idx`` as ExecuTorch's deserializer restored it. It sizes each blob by the next
    offset; refsim's writer stores identical blobs once (several indices, one offset), which the
    runtime reads by each tensor's nbytes. So among the indices sharing idx's offset, the longest
    restored slice holds the blob (the others restore empty)."""
    segment = pf.constant_segment
    offsets = list(segment.offsets) if segment is not None else []
    if not offsets:
        return et.constant_buffer[idx].storage
    same = [j for j, o in enumerate(offsets) if o == offsets[idx]]
    return max((bytes(et.constant_buffer[j].storage) for j in same), key=len)


def _check_same_as_executorch(pf, data: bytes) -> None:
    et = _et_view(data)
    assert [p.name for p in et.execution_plan] == [p.name for p in pf.program.execution_plan]
    for ours, theirs in zip(pf.program.execution_plan, et.execution_plan, strict=True):
        theirs_ops = [(o.name, o.overload or "") for o in theirs.operators]
        assert theirs_ops == [(o.name, o.overload) for o in ours.operators]
        assert [type(v.val).__name__ for v in theirs.values] == [type(v).__name__ for v in ours.values]
        for a, b in zip(ours.values, theirs.values, strict=True):
            if isinstance(a, Tensor):
                assert (list(a.sizes), list(a.dim_order), int(a.scalar_type)) == (
                    list(b.val.sizes),
                    list(b.val.dim_order),
                    int(b.val.scalar_type),
                )
                if a.is_constant:
                    storage = _et_constant(et, pf, a.data_buffer_idx)
                    assert bytes(pf.constant_bytes(a)) == bytes(storage[: a.nbytes])
        assert list(theirs.non_const_buffer_sizes) == list(ours.non_const_buffer_sizes)
        for chain_a, chain_b in zip(ours.chains, theirs.chains, strict=True):
            assert [type(i).__name__ for i in chain_a.instructions] == [
                type(i.instr_args).__name__ for i in chain_b.instructions
            ]


def test_reader_loads_a_fresh_fp32_export(tmp_path):
    torch.manual_seed(1)
    model = make_fixtures.Fp32Linear().eval()
    data = to_edge(torch.export.export(model, (torch.randn(3, 8),))).to_executorch().buffer
    _check_same_as_executorch(load_program(data), data)


def test_reader_loads_a_fresh_cortex_m_export(tmp_path):
    path = tmp_path / "cm.pte"
    make_fixtures.export_cortex_m(path, make_fixtures.ConvLinear(), (1, 3, 8, 8))
    pf = load_program(path)
    _check_same_as_executorch(pf, path.read_bytes())
    ops = {op.qualified_name for op in pf.program.plan("forward").operators}
    assert {"cortex_m::quantized_conv2d.out", "cortex_m::quantized_linear.out"} <= ops


@pytest.mark.parametrize("name", ["fp32_linear", "cm_conv_linear", "cm_mixed"])
def test_fixtures_are_what_executorch_reads(name):
    data = (FIXTURES / f"{name}.pte").read_bytes()
    _check_same_as_executorch(load_program(data), data)


def test_executorch_runs_our_rewrite_of_its_export(tmp_path):
    io = np.load(FIXTURES / "fp32_linear.io.npz")
    path = tmp_path / "rewritten.pte"
    rewrite_program(load_program(FIXTURES / "fp32_linear.pte"), path)
    method = Runtime.get().load_program(path).load_method("forward")
    (out,) = method.execute([torch.from_numpy(io["input0"])])
    np.testing.assert_array_equal(out.numpy(), io["output0"])


def _add_mul_program() -> tuple[Program, list[bytes]]:
    """out = (x + c) * x, with c a constant: aten::add.out then aten::mul.out."""
    f32 = ScalarType.FLOAT32
    values = (
        Tensor(f32, (2, 3), (0, 1), allocation=Allocation(1, 0)),  # 0 x (input)
        Tensor(f32, (2, 3), (0, 1), data_buffer_idx=1),  # 1 c
        Int(1),  # 2 alpha
        Tensor(f32, (2, 3), (0, 1), allocation=Allocation(1, 32)),  # 3 x + c
        Tensor(f32, (2, 3), (0, 1), allocation=Allocation(1, 64)),  # 4 out (output)
    )
    plan = ExecutionPlan(
        name="forward",
        values=values,
        inputs=(0,),
        outputs=(4,),
        chains=(Chain(instructions=(KernelCall(0, (0, 1, 2, 3, 3)), KernelCall(1, (3, 0, 4, 4)))),),
        operators=(Operator("aten::add", "out"), Operator("aten::mul", "out")),
        non_const_buffer_sizes=(0, 96),
    )
    constant = np.arange(6, dtype="<f4") / 4
    return Program((plan,)), [b"", constant.tobytes()]


def test_executorch_runs_a_program_built_from_scratch(tmp_path):
    program, constants = _add_mul_program()
    data = write_program(program, constants)
    x = torch.linspace(-1, 1, 6).reshape(2, 3)
    (out,) = Runtime.get().load_program(data).load_method("forward").execute([x])
    c = torch.arange(6, dtype=torch.float32).reshape(2, 3) / 4
    assert torch.equal(out, (x + c) * x)


@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_executorch_loads_and_deserializes_generated_programs(case):
    data = write_program(case.program, case.constants, segments=case.segments)
    et_program = Runtime.get().load_program(data)  # flatbuffers verifier on (InternalConsistency)
    assert et_program.method_names == {p.name for p in case.program.execution_plan}
    for plan in case.program.execution_plan:
        meta = et_program.metadata(plan.name)
        assert meta.num_inputs() == len(plan.inputs) and meta.num_outputs() == len(plan.outputs)
    _check_same_as_executorch(load_program(data), data)


@pytest.mark.skipif(
    shutil.which("flatc") is None, reason="flatc not installed (Debian: flatbuffers-compiler)"
)
@pytest.mark.parametrize("name", ["fp32_linear", "cm_conv_linear"])
def test_both_schemas_decode_identically(tmp_path, name):
    import executorch.exir._serialize as serialize

    decoded = {}
    schemas = {
        "executorch": Path(serialize.__file__).parent / "program.fbs",
        "refsim": Path(__file__).resolve().parents[2] / "refsim" / "pte" / "schema" / "program.fbs",
    }
    for who, schema in schemas.items():
        out = tmp_path / who
        pte = FIXTURES / f"{name}.pte"
        cmd = [
            "flatc",
            "--json",
            "--strict-json",
            "--raw-binary",
            "-o",
            str(out),
            str(schema),
            "--",
            str(pte),
        ]
        subprocess.run(cmd, check=True, capture_output=True)
        decoded[who] = json.loads((out / f"{name}.json").read_text())
    assert decoded["refsim"] == decoded["executorch"]
