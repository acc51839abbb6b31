"""refsim.runtime.igemm: batched runs on ONNX Runtime's integer GEMM, the bits of float32 single runs.

The kernel-level equality (every GEMM shape, both weight forms, the saturating extremes) is in
tests/ops/test_gemm.py; here: when it is used, that a batch on it gives the bits of single runs on
the float32 product, that it is used only while a batch runs, that ``refsim run`` never loads it,
and how the weight form is chosen.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kernels_py import gemm
from refsim.runtime import Program, igemm

ROOT = Path(__file__).resolve().parents[2]
MODELS = sorted((ROOT / "examples" / "models").glob("*.pte"))


@pytest.mark.parametrize(
    ("flags", "vnni"),
    [
        ("fpu sse avx2 avx512f avx512_vnni", True),
        ("fpu sse avx2 avx_vnni", True),
        ("fpu sse avx2 avx512f avx512bw", False),
    ],
)
def test_vnni_is_read_from_cpuinfo(tmp_path, flags, vnni):
    info = tmp_path / "cpuinfo"
    info.write_text(f"processor\t: 0\nmodel name\t: x\nflags\t\t: {flags}\n")
    assert igemm.cpu_has_vnni(info) is vnni


def test_no_cpuinfo_means_no_vnni(tmp_path):
    assert igemm.cpu_has_vnni(tmp_path / "missing") is False


@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.stem)
def test_batch_on_the_integer_product_equals_float32_single_runs(path):
    pytest.importorskip("onnxruntime", reason="the integer product needs the `fast` extra (onnxruntime)")
    if os.environ.get(igemm.ENV) == "0":
        pytest.skip(f"{igemm.ENV}=0 keeps the float32 product")
    method = Program.load(path).method("forward")
    rng = np.random.default_rng(7)
    x = rng.integers(-128, 128, (40, *method.inputs[0].sizes), dtype=np.int8)
    before = igemm.product().calls
    (batched,) = method.execute_batch([x], workers=2)
    assert igemm.product().calls > before  # the batch ran on it ...
    assert gemm._integer_matmul is None  # ... and only the batch: single runs are on float32
    for i in range(0, 40, 3):
        np.testing.assert_array_equal(batched[i], method.execute([x[i]])[0], err_msg=f"sample {i}")


def test_the_product_is_scoped_to_the_batch_and_restores_what_was_there():
    pytest.importorskip("onnxruntime", reason="the integer product needs the `fast` extra (onnxruntime)")
    if os.environ.get(igemm.ENV) == "0":
        pytest.skip(f"{igemm.ENV}=0 keeps the float32 product")

    def mine(a, zero_point, weight_t):
        raise AssertionError("unused")

    gemm.set_integer_matmul(mine)
    try:
        with igemm.batch_product() as outer:
            assert gemm._integer_matmul is outer
            with igemm.batch_product():
                assert gemm._integer_matmul is outer
            assert gemm._integer_matmul is outer  # the inner batch ended, the outer one has not
        assert gemm._integer_matmul is mine
    finally:
        gemm.set_integer_matmul(None)


def test_refsim_run_loads_no_onnxruntime_and_the_switch_keeps_float32():
    kws = ROOT / "examples" / "models" / "kws.pte"
    code = (
        "import sys\nimport numpy as np\nfrom refsim.cli import main\n"
        f"assert main(['run', {str(kws)!r}, '-q']) == 0\n"
        "assert 'onnxruntime' not in sys.modules, 'refsim run imported onnxruntime'\n"
        "from refsim.runtime import Program\nfrom kernels_py import gemm\n"
        f"m = Program.load({str(kws)!r}).method('forward')\n"
        "m.execute_batch([np.zeros((3, *m.inputs[0].sizes), np.int8)])\n"
        "assert gemm._integer_matmul is None and 'onnxruntime' not in sys.modules\n"
    )
    env = {**os.environ, igemm.ENV: "0"}
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, timeout=600
    )
    assert proc.returncode == 0, proc.stderr
