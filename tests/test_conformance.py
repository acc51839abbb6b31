"""Conformance vectors: export → check round trips, mismatch reports, malformed directories, CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from refsim.cli import main
from refsim.conformance import registry
from refsim.conformance import vectors as vec
from refsim.errors import VectorError

FUNCTIONS = sorted(registry.functions())


def test_every_vectors_md_function_is_registered():
    required = {
        "arm_convolve_s8", "arm_convolve_wrapper_s8",
        "arm_depthwise_conv_s8", "arm_depthwise_conv_wrapper_s8",
        "arm_transpose_conv_s8", "arm_fully_connected_s8", "arm_fully_connected_per_channel_s8",
        "arm_batch_matmul_s8", "arm_avgpool_s8", "arm_max_pool_s8", "arm_elementwise_add_s8",
        "arm_elementwise_mul_s8", "arm_maximum_s8", "arm_minimum_s8", "arm_softmax_s8", "arm_relu6_s8",
        "arm_pad_s8", "arm_transpose_s8",
    }  # fmt: skip
    assert required <= set(FUNCTIONS), sorted(required - set(FUNCTIONS))


@pytest.mark.parametrize("function", FUNCTIONS)
def test_export_then_check_round_trip(tmp_path, function):
    cases = list(vec.generate_cases(function, 4, seed=11))
    for case in cases:
        vec.write_case(tmp_path, case)
    loaded = list(vec.iter_directory(tmp_path))
    assert [c.label for c in loaded] == [c.label for c in cases]
    for original, case in zip(cases, loaded, strict=True):
        assert set(registry.get(function).arrays) <= set(case.arrays)
        for key, value in original.arrays.items():
            np.testing.assert_array_equal(case.arrays[key], value)
        # every required parameter travels under its CMSIS-NN name
        assert set(registry.get(function).params) <= set(case.params)
        result = vec.check_case(case)
        assert result.passed, result.message


@pytest.mark.parametrize("function", FUNCTIONS)
def test_generation_is_deterministic(function):
    a = next(vec.generate_cases(function, 1, seed=5))
    b = next(vec.generate_cases(function, 1, seed=5))
    assert a.params == b.params
    np.testing.assert_array_equal(a.output, b.output)


def _one_case(tmp_path: Path, function: str = "arm_elementwise_add_s8") -> Path:
    (case,) = vec.generate_cases(function, 1, seed=3)
    return vec.write_case(tmp_path, case)


def test_mismatch_names_first_index_and_both_values(tmp_path):
    path = _one_case(tmp_path)
    with np.load(path) as z:
        contents = dict(z)
    out = contents["output"].copy()
    flat = out.reshape(-1)
    flat[-1] = 5 if flat[-1] != 5 else 6
    contents["output"] = out
    np.savez(path, **contents)
    (result,) = [vec.check_case(c) for c in vec.iter_directory(tmp_path)]
    assert not result.passed
    assert f"first mismatch at index ({flat.size - 1},)" in result.message
    assert f"expected {flat[-1]}" in result.message


def test_cli_check_and_export(tmp_path, capsys):
    assert (
        main(["conformance", "--export-vectors", str(tmp_path), "--kernel", "elementwise", "--cases", "3"])
        == 0
    )
    capsys.readouterr()
    assert main(["conformance", "--vectors", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    n = sum(1 for _ in tmp_path.rglob("*.npz"))
    assert lines[-1] == f"{n} passed, 0 failed"


def test_cli_exits_1_on_mismatch(tmp_path, capsys):
    path = _one_case(tmp_path)
    with np.load(path) as z:
        contents = dict(z)
    contents["output"] = contents["output"] ^ np.int8(1)
    np.savez(path, **contents)
    assert main(["conformance", "--vectors", str(tmp_path)]) == 1
    out = capsys.readouterr().out.strip().splitlines()
    assert out[0].startswith("FAIL arm_elementwise_add_s8/")
    assert out[-1] == "0 passed, 1 failed"


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda root, p: p.write_bytes(b"not a zip"), "not a readable numpy .npz"),
        (lambda root, p: p.rename(p.with_suffix(".txt")), "unexpected file"),
        (lambda root, p: (root / "arm_nonexistent_s8").mkdir(), "unknown function"),
        (lambda root, p: _rewrite(p, params=np.array("{not json")), "not valid JSON"),
        (
            lambda root, p: _rewrite(p, params=np.array(json.dumps({"function": "arm_minimum_s8"}))),
            "directory says",
        ),
        (lambda root, p: _rewrite(p, params=np.array(json.dumps([1, 2]))), "JSON object"),
        (lambda root, p: _rewrite(p, drop="output"), "missing the expected 'output'"),
        (lambda root, p: _rewrite(p, drop="params"), "missing 'params'"),
    ],
)
def test_malformed_directory_gets_one_line_error(tmp_path, mutate, message):
    path = _one_case(tmp_path)
    mutate(tmp_path, path)
    with pytest.raises(VectorError, match=message) as info:
        list(vec.iter_directory(tmp_path))
    assert "\n" not in str(info.value)


def test_missing_param_is_reported_as_failure(tmp_path):
    path = _one_case(tmp_path)
    with np.load(path) as z:
        params = json.loads(str(z["params"]))
    del params["out_mult"]
    _rewrite(path, params=np.array(json.dumps(params)))
    (result,) = [vec.check_case(c) for c in vec.iter_directory(tmp_path)]
    assert not result.passed
    assert "out_mult" in result.message


def _rewrite(path: Path, drop: str | None = None, **replace) -> None:
    with np.load(path) as z:
        contents = dict(z)
    contents.update(replace)
    if drop:
        del contents[drop]
    np.savez(path, **contents)


def test_cli_malformed_directory_exit_code_and_single_line(tmp_path):
    (tmp_path / "junk.txt").write_text("x")
    proc = subprocess.run(
        [sys.executable, "-m", "refsim.cli", "conformance", "--vectors", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("refsim: error:")
    assert "Traceback" not in proc.stderr


def test_unknown_kernel_name_is_an_error():
    with pytest.raises(VectorError, match="neither a known function nor a family"):
        vec.resolve_functions(["arm_bogus_s8"])


def test_docs_list_every_function():
    text = (Path(__file__).parents[1] / "docs" / "conformance.md").read_text()
    missing = [f for f in FUNCTIONS if f"`{f}`" not in text]
    assert not missing, f"docs/conformance.md does not document {missing}"
