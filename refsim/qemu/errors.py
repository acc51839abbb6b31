"""Errors of the QEMU driver for kernels_c. Every message names what was expected and what was found."""

from __future__ import annotations

from refsim.errors import RefsimError


class QemuError(RefsimError):
    """Building or running the kernels_c harness under QEMU failed."""


class ToolchainMissingError(QemuError):
    """A host tool (arm-none-eabi-gcc, newlib, qemu-system-arm) is not installed.

    ``package`` names the Debian package that provides it.
    """

    def __init__(self, message: str, package: str) -> None:
        super().__init__(message)
        self.package = package


class BuildError(QemuError):
    """arm-none-eabi-gcc rejected the harness sources."""


class QemuTimeoutError(QemuError):
    """QEMU did not finish the batch within the timeout (it was killed)."""


class QemuFaultError(QemuError):
    """The guest took a fault; the harness reported the faulting PC and fault status registers."""

    def __init__(
        self,
        message: str,
        *,
        registers: dict[str, int],
        case_index: int,
        function: str,
        location: str,
        exit_status: int,
    ) -> None:
        super().__init__(message)
        self.registers = registers  # pc, lr, xpsr, cfsr, hfsr, mmfar, bfar, exc_return, exception
        self.case_index = case_index  # -1 outside any case
        self.function = function  # the batch function of that case
        self.location = location  # "symbol at file:line" of the PC, or "" when unknown
        self.exit_status = exit_status

    @property
    def pc(self) -> int:
        return self.registers["pc"]

    @property
    def cfsr(self) -> int:
        return self.registers["cfsr"]

    @property
    def hfsr(self) -> int:
        return self.registers["hfsr"]


__all__ = [
    "BuildError",
    "QemuError",
    "QemuFaultError",
    "QemuTimeoutError",
    "ToolchainMissingError",
]
