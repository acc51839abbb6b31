"""docs/ops.md is generated from the op registry and must match it (refsim/ops/docs.py)."""

from __future__ import annotations

import difflib
import subprocess
import sys
from pathlib import Path

import pytest

from refsim.ops.docs import COMMAND, first_paragraph, grouped, kernel_text, render
from refsim.ops.registry import all_ops

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "ops.md"


def test_docs_ops_md_matches_the_registry():
    expected = render()
    actual = DOC.read_text() if DOC.exists() else ""
    if actual != expected:
        diff = "".join(
            list(
                difflib.unified_diff(
                    actual.splitlines(keepends=True),
                    expected.splitlines(keepends=True),
                    "docs/ops.md",
                    "the registry",
                )
            )[:40]
        )
        pytest.fail(f"docs/ops.md is out of date with the op registry; regenerate it: {COMMAND}\n{diff}")


def test_the_documented_command_prints_the_doc():
    done = subprocess.run(
        [sys.executable, "-m", "refsim.ops.docs"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == render()


def test_every_registered_op_has_one_entry():
    text = render()
    ops = all_ops()
    for name, op in ops.items():
        assert text.count(f"\n### {name}\n") == 1, name
        assert op.schema.text in text
        if first_paragraph(op.doc):
            assert first_paragraph(op.doc) in text, name
    counts = {namespace: len(members) for namespace, members in grouped(ops)}
    assert sum(counts.values()) == len(ops)
    assert list(counts)[:4] == ["cortex_m", "aten", "dim_order_ops", "quantized_decomposed"]
    assert f"{len(ops)} operators: " in text


def test_kernel_column():
    ops = all_ops()
    assert kernel_text(ops["cortex_m::quantized_add.out"]) == "`arm_elementwise_add_s8`"
    assert kernel_text(ops["cortex_m::quantized_conv2d.out"]).startswith("`arm_convolve_wrapper_s8`")
    assert kernel_text(ops["aten::relu.out"]) == "portable fallback"
    assert kernel_text(ops["cortex_m::quantized_div.out"]) == "none (ExecuTorch C++ loop)"
