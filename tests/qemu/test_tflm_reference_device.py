"""TFLM's int8 reference kernels built for a Cortex-M (soft float, TFLM's default cortex-m4 target)
and run under QEMU give the bytes kernels_py/tflm gives, on a CI-sized run of
benchmarks/tflm_reference_device.py (needs the toolchain, QEMU and TFLM's sources)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TFLM = Path(os.environ.get("TFLM_SRC", "/work/ext/tflite-micro"))
DOWNLOADS = Path(os.environ.get("TFLM_DOWNLOADS", "/work/ext/tflm-downloads"))


@pytest.mark.skipif(
    not (TFLM / "tensorflow/lite/kernels/internal/common.cc").exists()
    or not (DOWNLOADS / "gemmlowp").exists(),
    reason="TFLM's sources and downloads are not at TFLM_SRC / TFLM_DOWNLOADS",
)
def test_device_bytes_equal_refsims(toolchain):
    spec = importlib.util.spec_from_file_location("trd", ROOT / "benchmarks" / "tflm_reference_device.py")
    trd = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(trd)
    sets, x = trd.draw_sets(24, seed=3), trd.float_inputs(3)
    ops = trd.measure("cortex-m4", sets, x)["ops"]
    assert all(c["bytes_differ"] == 0 for c in ops.values()), ops
    assert all(c["compared"] > 0 for c in ops.values()), ops
