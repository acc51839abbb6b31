"""refsim's pytest plugin on the example user project (examples/kernel_tests), in subprocesses:
skipped with the reason without options; passing with its kernel; and, with the kernel's
rounding broken on purpose, failing with a saved reproducer that ``refsim conformance`` reruns
(the C kernel fails it, the golden model passes it)."""

from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from refsim.conformance import vectors as vec

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "kernel_tests"
KERNEL = Path("mykernels") / "Source" / "my_elementwise_mul_s8.c"
ROUNDING = "remainder > threshold ? 1 : 0"


def _plugin_args() -> list[str]:
    """``-p refsim.testing.plugin`` unless the installed refsim already registers it (pytest11)."""
    registered = any(
        ep.value == "refsim.testing.plugin" for ep in importlib.metadata.entry_points(group="pytest11")
    )
    return [] if registered else ["-p", "refsim.testing.plugin"]


def run_pytest(
    project: Path, *options: str, tests: str = "test_my_kernels.py"
) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA", *_plugin_args(),
               tests, *options]  # fmt: skip
    return subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, timeout=900)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    copy = tmp_path / "kernel_tests"
    shutil.copytree(EXAMPLE, copy, ignore=shutil.ignore_patterns(".hypothesis", "__pycache__"))
    return copy


def test_without_options_the_tests_are_skipped_with_the_reason(project: Path):
    done = run_pytest(project)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 skipped" in done.stdout
    assert "no kernel library to test: run pytest with --refsim-kernels-dir DIR" in done.stdout


def test_the_example_passes_and_fails_with_a_reproducer_when_its_kernel_is_broken(
    project: Path, tmp_path: Path, toolchain: None
):
    options = ("--refsim-kernels-dir", "mykernels", "--refsim-cpu", "cortex-m4")
    done = run_pytest(project, *options)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout

    # A function the library does not define fails by name (the build is cached: no rebuild).
    (project / "test_missing.py").write_text(
        "def test_relu6(refsim_kernels):\n    refsim_kernels.check('arm_relu6_s8', cases=3)\n"
    )
    done = run_pytest(project, *options, tests="test_missing.py")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "mykernels does not define arm_relu6_s8 (it defines arm_elementwise_mul_s8)" in done.stdout

    # Off by one in the rounding of the divide by a power of two: ties now round up.
    source = project / KERNEL
    assert source.read_text().count(ROUNDING) == 1
    source.write_text(source.read_text().replace(ROUNDING, "remainder >= threshold ? 1 : 0"))
    failures = tmp_path / "failures"
    done = run_pytest(project, *options, "--refsim-failures-dir", str(failures))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "FAILED test_my_kernels.py::test_conformance_cases" in done.stdout
    assert re.search(
        r"\d+ of 300 cases differ from refsim's golden model on cortex-m4 \(1 QEMU start", done.stdout
    )
    saved = re.search(r"reproducers saved to (\S+)", done.stdout)
    assert saved, done.stdout
    directory = Path(saved.group(1))
    assert directory.is_relative_to(failures)
    cases = list(vec.iter_directory(directory))
    assert cases and all(c.function == "arm_elementwise_mul_s8" for c in cases)
    assert cases[0].params["failed_on"] == "cortex-m4"

    # The reproducer is a golden vector: the golden model passes it, the broken kernel does not.
    for case in cases:
        np.testing.assert_array_equal(vec.run_case(case), case.output)
    rerun = re.search(r"rerun: (refsim conformance .*)", done.stdout)
    assert rerun, done.stdout
    argv = rerun.group(1).split()[1:]
    redo = subprocess.run([sys.executable, "-m", "refsim.cli", *argv], cwd=ROOT, capture_output=True,
                          text=True, timeout=600, env=dict(os.environ, PYTHONPATH=str(ROOT)))  # fmt: skip
    assert redo.returncode == 1, redo.stdout + redo.stderr
    assert f"0 passed, {len(cases)} failed" in redo.stdout
