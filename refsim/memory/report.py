"""The whole-device RAM and flash report of one program: what ``refsim inspect --memory`` prints."""

from __future__ import annotations

from pathlib import Path

from refsim.memory.flash import flash_lines
from refsim.memory.lines import Line, total, unmeasured
from refsim.memory.ram import ram_lines
from refsim.memory.sizes import runtime_sizes
from refsim.pte import model as m
from refsim.runtime.describe import scratch_values
from refsim.runtime.program import Program


class CpuError(ValueError):
    pass


def memory_report(
    program: Program,
    path: Path,
    method_name: str,
    cpu: str,
    kernels_dir: Path | None = None,
    library: str = "cmsis-nn",
) -> dict:
    """RAM and flash lines (``section``, ``name``, ``bytes``, ``source``, ``part_of``) and totals."""
    from isa_models.cortex_m.cores import CORE_MODELS
    from refsim.errors import UnsupportedError

    if cpu not in CORE_MODELS:
        raise UnsupportedError(f"memory: unknown --cpu {cpu!r}; expected one of {', '.join(CORE_MODELS)}")
    method = program.method(method_name)
    plan = method.plan
    ops = [
        plan.operators[ins.op_index].qualified_name
        for c in plan.chains
        for ins in c.instructions
        if isinstance(ins, m.KernelCall)
    ]
    constants = sum(len(b) for b in program.file.constants())
    lines: list[Line] = [
        *ram_lines(plan, scratch_values(method)),
        *flash_lines(path.stat().st_size, constants, ops, cpu, kernels_dir, library),
    ]
    sizes = runtime_sizes()
    return {
        "method": method_name,
        "cpu": cpu,
        "struct_sizes": sizes.source,
        "kernel_library": "--kernels-dir" if kernels_dir is not None else library,
        "lines": [ln.to_json() for ln in lines],
        "ram_total": total(lines, "ram"),
        "flash_total": total(lines, "flash"),
        "ram_unmeasured": unmeasured(lines, "ram"),
        "flash_unmeasured": unmeasured(lines, "flash"),
    }
