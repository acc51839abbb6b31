"""The pipeline on models outside the zoo: the module-file example, a layer left in fp32
(the other fp32 layers: test_fp32_fallback.py), and the rule that compiling needs torch but
never executorch."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchao")

from compiler.api import compile  # noqa: E402
from compiler.evaluate import agreement, run_float_inputs  # noqa: E402
from kernels_py.quantize import quantize_per_tensor  # noqa: E402
from refsim.runtime import Program  # noqa: E402
from tests.compiler.oracle import Oracle  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def _example():
    spec = importlib.util.spec_from_file_location("compile_example", ROOT / "examples" / "compile_example.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.make_model()


def _samples(shape, n, seed):
    g = torch.Generator().manual_seed(seed)
    return [torch.rand(shape, generator=g) * 2 - 1 for _ in range(n)]


@pytest.mark.parametrize("target", ["cortex-m55", "cortex-m4"])
def test_module_file_example_compiles_runs_and_tracks_float(target):
    model = _example()
    calibration = _samples((1, 3, 32, 32), 32, 1)
    result = compile(model, (calibration[0],), target=target, calibration=calibration)
    ops = {c.op for c in result.graph.calls}
    assert ops >= {
        "cortex_m::quantized_conv2d", "cortex_m::quantized_depthwise_conv2d", "cortex_m::quantized_linear",
        "cortex_m::quantized_add", "cortex_m::quantized_avg_pool2d", "cortex_m::quantized_max_pool2d",
        "cortex_m::softmax",
    }  # fmt: skip
    statuses = {(x.op, x.status) for x in result.layers}
    assert ("batch_norm", "folded") in statuses and ("hardtanh", "fused") in statuses  # BN, ReLU6
    xs = torch.cat(_samples((1, 3, 32, 32), 64, 2))
    with torch.no_grad():
        reference = model(xs).numpy()
    got = agreement(reference, run_float_inputs(result.pte, xs.numpy()))
    print(f"example {target}: {got}")
    assert got.snr_db >= 20
    method = Program.load(result.pte).method("forward")
    first = result.graph.tensors[result.graph.inputs[0]]
    for x in xs[:3].numpy():
        q = quantize_per_tensor(x[None], first.scale, first.zero_point, -128, 127, np.int8)
        np.testing.assert_array_equal(method.execute([q])[0], Oracle(result.graph).run([q])[0])


class _Island(torch.nn.Module):
    """A linear, an elementwise square (no int8 cortex_m form: left in fp32), a linear."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(3)
        self.a, self.b = torch.nn.Linear(16, 16), torch.nn.Linear(16, 4)

    def forward(self, x):
        y = self.a(x)
        return self.b(y * y)


def test_layer_without_int8_form_stays_fp32_between_dequantize_and_quantize():
    model = _Island().eval()
    calibration = _samples((1, 16), 16, 4)
    result = compile(model, (calibration[0],), target="cortex-m55", calibration=calibration)
    assert [x.status for x in result.layers if x.op == "mul"] == ["fp32"]
    ops = [c.op for c in result.graph.calls]
    assert ops == [
        "cortex_m::quantized_linear",
        "cortex_m::dequantize_per_tensor",
        "aten::mul",
        "cortex_m::quantize_per_tensor",
        "cortex_m::quantized_linear",
    ]  # fmt: skip  (y * y reads one dequantized tensor twice)
    xs = torch.cat(_samples((1, 16), 32, 5))
    with torch.no_grad():
        reference = model(xs).numpy()
    assert agreement(reference, run_float_inputs(result.pte, xs.numpy())).snr_db >= 20


def test_compiling_never_imports_executorch(tmp_path):
    script = f"""
import sys
sys.modules["executorch"] = None  # any import of executorch now fails
import torch
from compiler.api import compile
m = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3), torch.nn.ReLU()).eval()
x = torch.rand(1, 1, 8, 8)
r = compile(m, (x,), target="cortex-m4", calibration=[x], path={str(tmp_path / "m.pte")!r})
assert not [k for k in sys.modules if k.startswith("executorch.")]
print("ok", len(r.pte))
"""
    run = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.startswith("ok")


class _Branches(torch.nn.Module):
    """Branch a's wide output is computed first but read last: the given order keeps it live
    across branch b; running branch b first lowers the peak."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(11)
        self.a1, self.a2 = torch.nn.Conv2d(4, 32, 1), torch.nn.Conv2d(32, 4, 1)
        self.b1, self.b2 = torch.nn.Conv2d(4, 32, 1), torch.nn.Conv2d(32, 4, 1)

    def forward(self, x):
        a = self.a1(x)
        b = self.b2(self.b1(x))
        return self.a2(a) + b


def test_reordering_independent_branches_lowers_the_peak_and_keeps_the_bits():
    model = _Branches().eval()
    calibration = _samples((1, 4, 16, 16), 8, 6)
    plain = compile(model, (calibration[0],), target="cortex-m55", calibration=calibration)
    reordered = compile(model, (calibration[0],), target="cortex-m55", calibration=calibration, reorder=True)
    assert reordered.planned.plan.lower_bound < plain.planned.plan.lower_bound
    assert reordered.arena_bytes < plain.arena_bytes
    assert [c.op for c in reordered.graph.calls] != [c.op for c in plain.graph.calls] or [
        c.layer for c in reordered.graph.calls
    ] != [c.layer for c in plain.graph.calls]
    first = plain.graph.tensors[plain.graph.inputs[0]]
    methods = [Program.load(r.pte).method("forward") for r in (plain, reordered)]
    for x in calibration[:3]:
        q = quantize_per_tensor(x.numpy(), first.scale, first.zero_point, -128, 127, np.int8)
        np.testing.assert_array_equal(methods[0].execute([q])[0], methods[1].execute([q])[0])
