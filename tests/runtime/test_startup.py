"""What ``refsim run MODEL -q`` imports (start-up is paid per process; timings are in
benchmarks/startup.py), and the parts that keep it small: ops loaded by namespace, the direct
parse of plain ``run`` command lines (refsim.commands._argv), kernels resolved on first call."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from kernels_py import _jit
from refsim.commands import run as run_module
from refsim.commands._argv import direct_kwargs
from refsim.ops.registry import OP_MODULES, load_all

ROOT = Path(__file__).resolve().parents[2]
KWS = ROOT / "examples" / "models" / "kws.pte"


def _modules_after_run(env: dict[str, str] | None = None) -> list[str]:
    probe = (
        "import json, sys\nfrom refsim.cli import main\n"
        f"assert main(['run', {str(KWS)!r}, '-q']) == 0\n"
        "print(json.dumps(sorted(sys.modules)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def _top(modules: list[str]) -> set[str]:
    return {m.split(".")[0] for m in modules}


def test_plain_run_imports_neither_numba_nor_what_it_does_not_use():
    if not (_jit.aot_dir() / "manifest.json").exists():
        pytest.skip("no AOT extension for these sources (python -m refsim.aot); test_aot.py builds it")
    loaded = _modules_after_run()
    assert not _top(loaded) & {
        "numba",
        "llvmlite",
        "typer",
        "pydantic",
        "rich",
        "matplotlib",
        "scipy",
        "torch",
    }, loaded
    unused = [
        m for m in loaded
        if m.startswith(("refsim.ops.tflm", "refsim.ops.portable", "kernels_py.tflm", "refsim.tflite",
                         "refsim.runtime.estimate", "refsim.pte.writer", "importlib.metadata"))
    ]  # fmt: skip
    assert not unused, unused


def test_run_without_aot_uses_numba():
    loaded = _modules_after_run({"REFSIM_AOT": "0"})
    assert "numba" in loaded
    assert "refsim.ops.tflm_float" not in loaded


def test_every_op_module_registers_only_its_namespaces():
    """`lookup` imports the modules of an op's namespace first: each must declare every namespace it
    registers (else the op is still found, by loading every module, but start-up pays for it)."""
    for name, op in load_all().items():
        module = op.run.__module__.removeprefix("refsim.ops.").split(".")[0]
        assert module in OP_MODULES, (name, op.run.__module__)
        assert name.partition("::")[0] in OP_MODULES[module], (name, module, OP_MODULES[module])


def _typer_kwargs(argv: list[str]) -> dict:
    """What typer calls ``run`` with for ``argv``: the same declarations on a one-command app."""
    from refsim.cli import _get_app

    _get_app()  # registers the deferred commands: run's annotations can then be evaluated by typer
    seen: dict = {}

    @functools.wraps(run_module.run)
    def capture(**kwargs):
        seen.update(kwargs)

    app = typer.Typer()
    app.command()(capture)
    app(args=argv, standalone_mode=False)
    return seen


PLAIN = [
    ["m.pte"],
    ["m.pte", "-q"],
    ["--quiet", "m.pte"],
    ["m.pte", "--seed", "7", "--isa", "dsp", "--json", "r.json"],
    ["m.pte", "--seed=-3", "--method=other", "--inputs", "in.npz", "--outputs", "o.npz"],
    ["m.pte", "--estimate-cycles", "--cpu", "cortex-m4", "--clock-mhz", "120", "--system", "x"],
    ["m.pte", "--estimate-cycles", "--clock-mhz", "1.5e2", "--plot", "p.png", "--strict"],
    ["m.pte", "--dump-tensors", "d.npz", "--seed", "+4"],
]


@pytest.mark.parametrize("argv", PLAIN, ids=" ".join)
def test_direct_parse_equals_typer(argv):
    assert direct_kwargs(run_module.run, argv) == _typer_kwargs(argv)


@pytest.mark.parametrize(
    "argv",
    [
        [], ["--help"], ["m.pte", "--help"], ["m.pte", "--bogus"], ["m.pte", "extra.pte"],
        ["m.pte", "--seed", "1.5"], ["m.pte", "--seed", "1_000"], ["m.pte", "--seed"], ["m.pte", "-q", "-q"],
        ["m.pte", "--clock-mhz", "inf"], ["m.pte", "-qv"], ["m.pte", "--quiet=1"], ["m.pte", "--", "-q"],
    ],
    ids=repr,
)  # fmt: skip
def test_direct_parse_leaves_the_rest_to_typer(argv):
    assert direct_kwargs(run_module.run, argv) is None


def test_cli_errors_keep_their_contract_on_the_direct_path(tmp_path, capsys):
    from tests.cli_util import assert_one_error_line, refsim

    assert_one_error_line(refsim(capsys, "run", tmp_path / "missing.pte", "-q"), "no such file")
    assert_one_error_line(refsim(capsys, "run", KWS, "--isa", "neon", "-q"), "--isa must be one of")
    code, _, err = refsim(capsys, "run", KWS, "--seed", "x")  # typer's own usage error
    assert code == 2 and "seed" in err
