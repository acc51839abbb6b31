"""refsim for a kernel developer's own tests (docs/testing.md).

- :mod:`refsim.testing.strategies`: hypothesis strategies for every CMSIS-NN function's argument
  domain, drawn by the same code as ``refsim conformance``'s cases, and the scalar domains
  (offsets, multipliers, shifts, activations) they are made of.
- :mod:`refsim.testing.golden`: the golden model called the way C calls CMSIS-NN, with its
  argument structs (``cmsis_nn_conv_params`` ...) as plain Python values.
- :mod:`refsim.testing.plugin`: the pytest plugin (entry point ``pytest11``): options
  ``--refsim-kernels-dir DIR --refsim-cpu X`` and the fixture ``refsim_kernels``, which builds
  the library and runs drawn cases through it under QEMU, one emulator start per batch,
  saving every failure as a reproducer vector directory.

Importing this package imports nothing else: the submodules load on first use, so the plugin
costs nothing in a test run that does not use it.
"""

from __future__ import annotations

import importlib
from typing import Any

_SUBMODULES = ("golden", "plugin", "strategies")


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"refsim.testing.{name}")
    raise AttributeError(f"module 'refsim.testing' has no attribute {name!r}")


__all__ = list(_SUBMODULES)
