"""Where torch is not installed (refsim's own .venv), ``refsim compile`` is still listed and
says in one line what is missing; the rest of the CLI is unaffected."""

from __future__ import annotations

import importlib.util

import pytest

from refsim.cli import main

if importlib.util.find_spec("torch") is not None:
    pytest.skip(
        "torch is installed here: the compiler's own tests cover refsim compile", allow_module_level=True
    )


def test_compile_without_torch_is_one_line_status_2(tmp_path, capsys):
    assert main(["compile", "zoo:kws", "-o", str(tmp_path / "kws.pte")]) == 2
    err = capsys.readouterr().err.strip()
    assert "needs torch" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "kws.pte").exists()
