"""Build and run refsim's C kernels (kernels_c/) on Cortex-M cores under qemu-system-arm.

    from refsim.qemu import Case, run_batch
    run = run_batch("cortex-m55", [Case("arm_elementwise_mul_s8", params, arrays)])
    run.results[0].output   # int8 numpy array, as the C kernel computed it

See docs/kernels_c.md for the boards, the batch file format and how builds are cached.
"""

from refsim.qemu.batch import FUNCTIONS, VARIANTS, Case, CaseResult, FunctionSpec
from refsim.qemu.build import Harness, build_harness
from refsim.qemu.cores import CORES, TIERS, Core, MemoryRegion, get_core
from refsim.qemu.errors import BuildError, QemuError, QemuFaultError, QemuTimeoutError, ToolchainMissingError
from refsim.qemu.run import BatchRun, run_batch
from refsim.qemu.toolchain import Toolchain, find_toolchain, missing_toolchain

__all__ = [
    "CORES",
    "FUNCTIONS",
    "TIERS",
    "VARIANTS",
    "BatchRun",
    "BuildError",
    "Case",
    "CaseResult",
    "Core",
    "FunctionSpec",
    "Harness",
    "MemoryRegion",
    "QemuError",
    "QemuFaultError",
    "QemuTimeoutError",
    "Toolchain",
    "ToolchainMissingError",
    "build_harness",
    "find_toolchain",
    "get_core",
    "missing_toolchain",
    "run_batch",
]
