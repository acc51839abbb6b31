"""kernels_c under QEMU: tests that need arm-none-eabi-gcc, newlib and qemu-system-arm skip
with the Debian package to install when one is missing."""

from __future__ import annotations

import pytest

from refsim.qemu import missing_toolchain


@pytest.fixture(scope="session")
def toolchain() -> None:
    """Skip the requesting test when the cross toolchain or QEMU is not installed."""
    reason = missing_toolchain()
    if reason is not None:
        pytest.skip(reason)
