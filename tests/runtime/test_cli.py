"""``refsim run`` and ``refsim inspect`` against DESIGN.md's CLI report contract.

run: the JSON report's keys, outputs equal to `Method.execute`, float inputs quantized with the
program's ``forward_input0_*`` plan, random inputs reproducible from ``--seed``, and every user
mistake (unknown method, missing file, wrong shape, dtype or npz keys) as one ``refsim: error:``
line with exit status 2. inspect: operators with counts, CMSIS-NN vs portable share, constant
bytes, arenas, memory plan and I/O quantization of every bundled model, checked against
examples/models/models.json, and a description of a program whose operator refsim lacks.
Corrupt programs (made by test_hostile's engine) exit with status 0, or 2 and one error line,
in-process and through a real ``python -m refsim.cli`` process.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from kernels_py.quantize import quantize_per_tensor
from refsim.cli import main
from refsim.ops.registry import all_ops
from refsim.pte import load_program, write_program
from refsim.pte import model as m
from refsim.runtime import Program
from tests.cli_util import assert_one_error_line, refsim
from tests.runtime.test_hostile import ORIGINALS, apply_mutations, mutate_program, random_mutations, run_case

MODELS_DIR = Path(__file__).resolve().parents[2] / "examples" / "models"
MODELS = ("kws", "vww", "ic", "ad", "kws_m4")
SUMMARY = json.loads((MODELS_DIR / "models.json").read_text())
KWS = MODELS_DIR / "kws.pte"
KWS_IO = MODELS_DIR / "kws.io.npz"
#: DESIGN.md, "CLI report": the keys of ``refsim run --json``.
REPORT_KEYS = {"isa", "cpu", "clock_mhz", "cycles_total", "latency_ms", "ops", "memory", "outputs"}
OP_KEYS = {"index", "name", "macs", "cycles", "kernel"}
MEMORY_KEYS = {"arena_bytes", "scratch_bytes", "constant_bytes"}


def layer_macs(ops: list[dict]) -> list[int]:
    """MACs of the conv and linear layers, as models.json counts them (pools count their taps)."""
    return [op["macs"] for op in ops if "conv" in op["name"] or "linear" in op["name"]]


def saved_input() -> np.ndarray:
    with np.load(KWS_IO) as z:
        return z["input0"]


def run_kws(capsys, tmp_path: Path, *extra) -> tuple[dict, np.ndarray]:
    """``refsim run kws.pte ... --outputs --json -q``: the report and output0."""
    code, out, err = refsim(
        capsys, "run", KWS, "--outputs", tmp_path / "out.npz", "--json", tmp_path / "r.json", "-q", *extra
    )
    assert code == 0, err
    assert out.strip() == "output0[1, 12]"
    with np.load(tmp_path / "out.npz") as z:
        assert z.files == ["output0"]
        return json.loads((tmp_path / "r.json").read_text()), z["output0"]


# -- refsim run ---------------------------------------------------------------------------------


def test_run_report_has_every_design_key(capsys, tmp_path):
    report, output = run_kws(capsys, tmp_path, "--inputs", KWS_IO)
    assert set(report) >= REPORT_KEYS
    assert report["isa"] == "mve"
    expected_ops = SUMMARY["kws"]["operators"]
    assert [op["name"] for op in report["ops"]] == expected_ops
    for position, op in enumerate(report["ops"]):
        assert set(op) >= OP_KEYS
        assert op["index"] == position  # kws's chain is all KernelCalls
        assert op["kernel"].startswith("arm_"), op
        assert isinstance(op["macs"], int) and op["macs"] >= 0
    assert layer_macs(report["ops"]) == list(SUMMARY["kws"]["layer_macs"].values())
    memory = report["memory"]
    assert set(memory) >= MEMORY_KEYS
    assert memory["arena_bytes"] == {"1": SUMMARY["kws"]["arena_bytes"][0]}
    assert memory["constant_bytes"] == SUMMARY["kws"]["constant_bytes"]
    assert memory["scratch_bytes"] >= SUMMARY["kws"]["largest_scratch_bytes"]
    (entry,) = report["outputs"]
    assert entry["shape"] == [1, 12] and entry["dtype"] == "int8"
    q = SUMMARY["kws"]["io_quantization"]
    assert entry["quantization"] == {"scale": q["output0_scale"], "zero_point": q["output0_zp"]}
    assert list(output.shape) == entry["shape"]


def test_run_outputs_equal_method_execute(capsys, tmp_path):
    _, output = run_kws(capsys, tmp_path, "--inputs", KWS_IO)
    (expected,) = Program.load(KWS).method().execute([saved_input()])
    np.testing.assert_array_equal(output, expected)


@pytest.mark.parametrize("isa", ["scalar", "dsp", "mve"])
def test_isa_changes_the_kernel_report_not_the_bits(capsys, tmp_path, isa):
    report, output = run_kws(capsys, tmp_path, "--inputs", KWS_IO, "--isa", isa)
    (expected,) = Program.load(KWS).method().execute([saved_input()])
    np.testing.assert_array_equal(output, expected)
    assert report["isa"] == isa


def test_float_inputs_are_quantized_with_the_programs_input_plan(capsys, tmp_path):
    x = np.random.default_rng(7).uniform(-1.2, 1.2, (1, 1, 49, 10)).astype(np.float32)
    np.savez(tmp_path / "float.npz", input0=x)
    _, output = run_kws(capsys, tmp_path, "--inputs", tmp_path / "float.npz")
    program = Program.load(KWS)
    q = SUMMARY["kws"]["io_quantization"]
    assert program.constant_method("forward_input0_scale") == pytest.approx(q["input0_scale"])
    quantized = quantize_per_tensor(
        x, q["input0_scale"], q["input0_zp"], q["input0_quant_min"], q["input0_quant_max"]
    )
    assert quantized.min() == -128 or quantized.max() == 127  # the range clamps somewhere
    (expected,) = program.method().execute([quantized])
    np.testing.assert_array_equal(output, expected)


def test_random_inputs_are_reproducible_from_the_seed(capsys, tmp_path):
    _, first = run_kws(capsys, tmp_path, "--seed", "3")
    _, again = run_kws(capsys, tmp_path, "--seed", "3")
    _, other = run_kws(capsys, tmp_path, "--seed", "4")
    _, default = run_kws(capsys, tmp_path)
    _, zero = run_kws(capsys, tmp_path, "--seed", "0")
    np.testing.assert_array_equal(first, again)
    np.testing.assert_array_equal(default, zero)
    assert not np.array_equal(first, other)


def test_run_prints_a_table_without_quiet(capsys):
    code, out, err = refsim(capsys, "run", KWS, "--inputs", KWS_IO)
    assert code == 0, err
    assert "arm_depthwise_conv_s8_opt" in out and "output0: int8 [1, 12]" in out and "MACs" in out


def test_unknown_method_is_one_error_line(capsys):
    assert_one_error_line(
        refsim(capsys, "run", KWS, "--method", "backward", "-q"), "no method named 'backward'"
    )


def test_missing_model_file_is_one_error_line(capsys, tmp_path):
    assert_one_error_line(refsim(capsys, "run", tmp_path / "none.pte"), "no such file")
    assert_one_error_line(refsim(capsys, "inspect", tmp_path / "none.pte"), "no such file")


def test_not_a_program_is_one_error_line(capsys, tmp_path):
    (tmp_path / "x.pte").write_bytes(b"not a flatbuffer at all")
    assert_one_error_line(refsim(capsys, "run", tmp_path / "x.pte"), "file_identifier")


@pytest.mark.parametrize(
    ("arrays", "fragments"),
    [
        ({"input0": np.zeros((1, 1, 10, 49), np.int8)}, ("input0", "expected shape [1, 1, 49, 10]")),
        ({"input0": np.zeros((1, 1, 49, 10), np.int16)}, ("input0", "expected dtype int8, got int16")),
        ({"input0": np.zeros((1, 1, 49, 10), np.uint8)}, ("expected dtype int8, got uint8",)),
        ({"input0": np.zeros((1, 1, 49, 10), bool)}, ("expected dtype int8, got bool",)),
        (
            {"input0": np.zeros((1, 1, 49, 10), np.int8), "input1": np.zeros(3)},
            ("unexpected arrays ['input1']",),
        ),
        ({"x": np.zeros((1, 1, 49, 10), np.int8)}, ("unexpected arrays ['x']",)),
        ({"output0": np.zeros((1, 12), np.int8)}, ("missing input0", "shape [1, 1, 49, 10]")),
    ],
    ids=["shape", "int16", "uint8", "bool", "extra-input", "unknown-key", "only-outputs"],
)
def test_bad_inputs_are_one_error_line(capsys, tmp_path, arrays, fragments):
    np.savez(tmp_path / "in.npz", **arrays)
    assert_one_error_line(refsim(capsys, "run", KWS, "--inputs", tmp_path / "in.npz", "-q"), *fragments)


def test_unreadable_inputs_file_is_one_error_line(capsys, tmp_path):
    assert_one_error_line(refsim(capsys, "run", KWS, "--inputs", tmp_path / "none.npz"), "no such file")
    (tmp_path / "text.npz").write_text("not numpy")
    assert_one_error_line(
        refsim(capsys, "run", KWS, "--inputs", tmp_path / "text.npz"), "not a readable .npz"
    )


def test_a_broken_zip_as_inputs_is_one_error_line(capsys, tmp_path):
    (tmp_path / "bad.npz").write_bytes(b"PK\x03\x04 truncated")
    assert_one_error_line(refsim(capsys, "run", KWS, "--inputs", tmp_path / "bad.npz"), "not a readable .npz")


def test_unknown_isa_is_one_error_line(capsys):
    assert_one_error_line(
        refsim(capsys, "run", KWS, "--isa", "neon"), "--isa must be one of scalar, dsp, mve"
    )


# -- refsim inspect -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", MODELS)
def test_inspect_json_describes_the_bundled_model(capsys, name):
    code, out, err = refsim(capsys, "inspect", MODELS_DIR / f"{name}.pte", "--json", "-")
    assert code == 0, err
    report = json.loads(out)
    summary = SUMMARY[name]
    assert report["constant_bytes"] == summary["constant_bytes"]
    methods = {meth["name"]: meth for meth in report["methods"]}
    forward = methods["forward"]
    assert "error" not in forward, forward["error"]

    counts: dict[str, int] = {}
    for op in summary["operators"]:
        counts[op] = counts.get(op, 0) + 1
    assert forward["operators"] == counts
    ops = forward["ops"]
    assert [op["name"] for op in ops] == summary["operators"]
    portable = [op for op in ops if op["portable"]]
    assert forward["cmsis_nn_ops"] == len(ops) - len(portable) and forward["portable_ops"] == len(portable)
    assert all(op["kernel"].startswith("arm_") for op in ops if not op["portable"])
    assert layer_macs(ops) == list(summary["layer_macs"].values())
    assert forward["macs"] == sum(op["macs"] for op in ops)

    assert forward["arena_bytes"] == {str(k + 1): size for k, size in enumerate(summary["arena_bytes"])}
    assert forward["scratch_bytes"] >= summary["largest_scratch_bytes"]
    assert forward["memory_plan"], "a planned program has placements"
    for placement in forward["memory_plan"]:
        arena = forward["arena_bytes"][str(placement["mem_id"])]
        assert placement["offset"] >= 0 and placement["offset"] + placement["bytes"] <= arena, placement
        assert placement["live"][0] <= placement["live"][1]

    q = summary["io_quantization"]
    (x,) = forward["inputs"]
    (y,) = forward["outputs"]
    assert x["shape"] == summary["input_shape"] and x["dtype"] == "int8" and x["memory"]["mem_id"] == 1
    assert x["quantization"]["scale"] == pytest.approx(q["input0_scale"])
    assert x["quantization"]["zero_point"] == q["input0_zp"]
    assert (x["quantization"]["quant_min"], x["quantization"]["quant_max"]) == (-128, 127)
    assert y["quantization"]["zero_point"] == q["output0_zp"]
    assert methods["forward_output0_scale"]["constant"] == pytest.approx(q["output0_scale"])


@pytest.mark.parametrize("name", ["kws", "ad"])
def test_inspect_text(capsys, name):
    code, out, err = refsim(capsys, "inspect", MODELS_DIR / f"{name}.pte")
    assert code == 0, err
    assert "% on CMSIS-NN kernels" in out and "constant methods:" in out


UNSUPPORTED = m.Operator("aten::atan2", "out")


def unsupported_program() -> bytes:
    """y = atan2(x, x) (an op refsim does not register), then a clone refsim has."""
    f32 = m.ScalarType.FLOAT32

    def planned(offset: int) -> m.Tensor:
        return m.Tensor(f32, (2, 3), (0, 1), allocation=m.Allocation(1, offset))

    values = (planned(0), planned(32), planned(64), m.Bool(False), m.Null())
    plan = m.ExecutionPlan(
        name="forward",
        values=values,
        inputs=(0,),
        outputs=(2,),
        chains=(
            m.Chain(
                inputs=(0,),
                outputs=(2,),
                instructions=(m.KernelCall(0, (0, 0, 1, 1)), m.KernelCall(1, (1, 3, 4, 2, 2))),
            ),
        ),
        operators=(UNSUPPORTED, m.Operator("dim_order_ops::_clone_dim_order", "out")),
        non_const_buffer_sizes=(0, 96),
    )
    return write_program(m.Program(execution_plan=(plan,)))


def test_inspect_describes_a_program_with_an_unsupported_op(capsys, tmp_path):
    assert UNSUPPORTED.qualified_name not in all_ops()
    path = tmp_path / "atan2.pte"
    path.write_bytes(unsupported_program())
    code, out, err = refsim(capsys, "inspect", path, "--json", "-")
    assert code == 0, err
    (forward,) = json.loads(out)["methods"]
    assert forward["instructions"] == 2
    assert forward["operators"] == {"aten::atan2.out": 1, "dim_order_ops::_clone_dim_order.out": 1}
    assert forward["unsupported"] == ["aten::atan2.out"]
    assert "aten::atan2.out is not supported" in forward["error"]

    code, out, err = refsim(capsys, "inspect", path)
    assert code == 0, err
    assert "cannot run" in out and "aten::atan2.out ×1" in out
    assert_one_error_line(refsim(capsys, "run", path), "operator aten::atan2.out is not supported")


def test_a_nan_zero_point_is_no_quantization(capsys, tmp_path):
    """A corrupt ``forward_output0_zp`` (a NaN Double): inspect and run report no quantization."""
    pf = load_program(KWS)
    index = next(i for i, p in enumerate(pf.program.execution_plan) if p.name == "forward_output0_zp")
    plans = list(pf.program.execution_plan)
    plans[index] = dataclasses.replace(plans[index], values=(m.Double(math.nan),))
    extra = [pf.segment_data(i) for i in range(1, len(pf.segments))]
    path = tmp_path / "nan_zp.pte"
    write_program(
        dataclasses.replace(pf.program, execution_plan=tuple(plans)), pf.constants(), path, segments=extra
    )

    code, out, err = refsim(capsys, "inspect", path, "--json", "-")
    assert code == 0, err
    forward = next(meth for meth in json.loads(out)["methods"] if meth["name"] == "forward")
    assert forward["outputs"][0]["quantization"] is None
    assert forward["inputs"][0]["quantization"] is not None
    code, _, err = refsim(capsys, "run", path, "--json", tmp_path / "r.json", "-q")
    assert code == 0, err
    assert "quantization" not in json.loads((tmp_path / "r.json").read_text())["outputs"][0]


CAPPED_RUN = """
import resource, sys
from refsim.cli import main
size_kb = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmSize:"))
resource.setrlimit(resource.RLIMIT_AS, ((size_kb << 10) + (1536 << 20), resource.RLIM_INFINITY))
sys.exit(main(sys.argv[1:]))
"""


def test_random_inputs_for_a_large_input_under_a_memory_cap(tmp_path):
    n = 1 << 28

    def planned(offset: int) -> m.Tensor:
        return m.Tensor(m.ScalarType.INT8, (n,), (0,), allocation=m.Allocation(1, offset))

    plan = m.ExecutionPlan(
        name="forward",
        values=(planned(0), planned(n), m.Bool(False), m.Null()),
        inputs=(0,),
        outputs=(1,),
        chains=(m.Chain(instructions=(m.KernelCall(0, (0, 2, 3, 1, 1)),)),),
        operators=(m.Operator("dim_order_ops::_clone_dim_order", "out"),),
        non_const_buffer_sizes=(0, 2 * n),
    )
    path = tmp_path / "big.pte"
    write_program(m.Program(execution_plan=(plan,)), path=path)
    done = subprocess.run(
        [sys.executable, "-c", CAPPED_RUN, "run", str(path), "-q"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = done.stderr.splitlines()
    assert done.returncode in (0, 2), done.stderr[-2000:]
    assert done.returncode == 0 or (len(lines) == 1 and lines[0].startswith("refsim: error: ")), done.stderr


# -- corrupt files (tests/runtime/test_hostile.py makes them) -------------------------------------


def _cli_cases(count: int, seed: int) -> list[tuple[str, bytes]]:
    rng = random.Random(seed)
    names = sorted(ORIGINALS)
    cases = []
    for _ in range(count):
        name = rng.choice(names)
        mutations = random_mutations(rng)
        cases.append((f"{name} {mutations}", apply_mutations(ORIGINALS[name], mutations)))
    return cases


def _check_cli_result(case: str, code: int, err: str) -> None:
    lines = err.splitlines()
    assert "Traceback" not in err, f"{case}:\n{err}"
    assert code in (0, 2), f"{case}: exit status {code}\n{err}"
    if code == 2:
        assert len(lines) == 1 and lines[0].startswith("refsim: error: "), f"{case}:\n{err}"
    else:
        assert not lines, f"{case}:\n{err}"


@pytest.mark.filterwarnings("ignore")  # LayoutWarnings on corrupt dim_orders are stderr lines of their own
def test_corrupt_files_through_the_cli(capsys, tmp_path):
    """`refsim run` / `refsim inspect` on corrupt files: exit status 0, or 2 with one error line."""
    floats = tmp_path / "float.npz"
    np.savez(floats, input0=np.random.default_rng(0).standard_normal((1, 1, 49, 10)).astype(np.float32))
    commands = (
        ["run", "{path}", "-q"],
        ["run", "{path}", "--json", str(tmp_path / "r.json"), "--outputs", str(tmp_path / "o.npz"), "-q"],
        ["inspect", "{path}", "--json", "-"],
        ["inspect", "{path}"],
    )
    codes: Counter = Counter()
    cases = _cli_cases(160, seed=5)
    # NaN, infinite and string I/O quantization constants, with float inputs to quantize
    kws = load_program(ORIGINALS["kws"])
    cases += [
        (f"kws io_quant {a} {b}", mutate_program(kws, "io_quant", a, b, 0))
        for a in range(10)
        for b in range(13)
    ]
    for k, (case, data) in enumerate(cases):
        path = tmp_path / "case.pte"
        path.write_bytes(data)
        command = [arg.format(path=path) for arg in commands[k % len(commands)]]
        if case.startswith("kws") and k % 2:
            command = ["run", str(path), "--inputs", str(floats), "-q"]
        code = main(command)
        _check_cli_result(f"{case} {command[0]}", code, capsys.readouterr().err)
        codes[f"{command[0]} -> {code}"] += 1
    print(f"CLI, in-process: {len(cases)} files tried: {dict(codes)}")


def test_corrupt_files_through_a_real_process(tmp_path):
    """A few corrupt files through ``python -m refsim.cli``: one per stage where the run ends."""
    picked: dict[str, tuple[str, bytes]] = {}
    for case, data in _cli_cases(300, seed=6):
        stage = run_case(data).stage
        picked.setdefault(stage, (case, data))
    assert set(picked) == {"load", "method", "execute", "ok"}, set(picked)
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}  # LayoutWarnings are stderr lines of their own
    for stage, (case, data) in sorted(picked.items()):
        path = tmp_path / f"{stage}.pte"
        path.write_bytes(data)
        done = subprocess.run(
            [sys.executable, "-m", "refsim.cli", "run", str(path), "-q"],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
        _check_cli_result(f"{stage}: {case}", done.returncode, done.stderr)
        assert (done.returncode == 0) == (stage == "ok"), (stage, done.stderr)
    print(f"CLI, subprocesses: {len(picked)} files tried, ending at {sorted(picked)}")
