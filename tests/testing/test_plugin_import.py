"""The pytest plugin is registered (pytest11) and costs nothing to load: importing it imports
pytest only, never numpy, hypothesis or refsim's QEMU and conformance code."""

from __future__ import annotations

import importlib
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_plugin_is_a_pytest11_entry_point():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    module = project["entry-points"]["pytest11"]["refsim"]
    assert module == "refsim.testing.plugin"
    plugin = importlib.import_module(module)
    assert callable(plugin.pytest_addoption) and callable(plugin.refsim_kernels)


def test_importing_the_plugin_imports_nothing_heavy():
    probe = (
        "import sys, refsim.testing.plugin, refsim.testing; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('numpy', 'hypothesis', 'numba') "
        "or m.startswith(('refsim.qemu', 'refsim.conformance', 'kernels_py'))))"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
