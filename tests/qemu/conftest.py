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


@pytest.fixture(scope="module")
def timing(toolchain: None) -> None:
    """Skip without the host compiler (the counting plugin) or llvm-19's llvm-mca and llvm-mc."""
    from refsim.qemu.errors import ToolchainMissingError
    from refsim.qemu.mca import MC, MCA, find_tool
    from refsim.qemu.plugin import find_host_cc

    try:
        find_host_cc()
        find_tool(MCA)
        find_tool(MC)
    except ToolchainMissingError as error:
        pytest.skip(str(error))
