"""Run a batch of kernel cases through the kernels_c harness: one QEMU start per batch.

The batch file and the result file live in a temporary directory that is QEMU's working
directory, so the semihosting command line is just ``in.bin out.bin``. QEMU always runs with a
timeout. Exit status 0 means the result file is complete; the harness's fault handler prints
``refsim-fault: ... pc=... cfsr=... hfsr=...`` and exits with status 4, reported here as
:class:`~refsim.qemu.errors.QemuFaultError`.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from refsim.qemu.batch import HARNESS_STATUS, Case, CaseResult, decode_results, encode_batch
from refsim.qemu.build import Harness, build_harness
from refsim.qemu.cores import Core, get_core
from refsim.qemu.errors import QemuError, QemuFaultError, QemuTimeoutError
from refsim.qemu.toolchain import find_toolchain

#: Exit statuses of the harness (kernels_c/boards/board.h RS_EXIT_*).
EXIT_STATUS = {
    2: "bad command line, or a file it cannot open",
    3: "malformed batch file",
    4: "CPU fault",
    5: "batch or results do not fit the bulk-data region",
}
_FAULT_LINE = re.compile(r"refsim-fault: (.*)")
_FIELD = re.compile(r"(\w+)=(-?(?:0x[0-9a-f]+|\d+))")


@dataclass(frozen=True)
class BatchRun:
    """Results of one batch on one core, and how long QEMU took (start to exit)."""

    core: Core
    results: tuple[CaseResult, ...]
    seconds: float
    console: str  # the guest's semihosting console output (QEMU's stderr)


def qemu_command(core: Core, elf: Path, append: str) -> list[str]:
    return [
        str(find_toolchain().qemu),
        *core.qemu_args,
        "-nographic",
        "-monitor", "none",
        "-serial", "none",
        "-semihosting-config", "enable=on,target=native",
        "-kernel", str(elf),
        "-append", append,
    ]  # fmt: skip


def _symbolize(elf: Path, address: int) -> str:
    """``function at file:line`` for an address of ``elf`` (addr2line), or "" when unknown."""
    addr2line = find_toolchain().binutil("addr2line")
    try:
        done = subprocess.run(
            [str(addr2line), "-f", "-e", str(elf), f"{address:#x}"],
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError:
        return ""
    lines = done.stdout.split()
    if done.returncode != 0 or len(lines) < 2 or lines[0] == "??":
        return ""
    return f"{lines[0]} at {lines[1]}"


def _fault(core: Core, elf: Path, exit_status: int, console: str, cases: Sequence[Case]) -> QemuFaultError:
    match = _FAULT_LINE.search(console)
    fields = {k: int(v, 0) for k, v in _FIELD.findall(match.group(1))} if match else {}
    case_index = fields.get("case", -1)
    function = cases[case_index].function if 0 <= case_index < len(cases) else "outside any case"
    registers = {k: v for k, v in fields.items() if k not in ("case", "function")}
    location = _symbolize(elf, registers["pc"]) if "pc" in registers else ""
    described = " ".join(f"{k}={v:#010x}" for k, v in registers.items() if k != "exception")
    return QemuFaultError(
        f"kernels_c on {core.name}: CPU fault (exception {fields.get('exception', '?')}) "
        f"in case {case_index} ({function}){' in ' + location if location else ''}: "
        f"{described or console.strip()}",
        registers=registers,
        case_index=case_index,
        function=function,
        location=location,
        exit_status=exit_status,
    )


def run_batch(
    core: Core | str,
    cases: Sequence[Case],
    *,
    timeout: float = 60.0,
    harness: Harness | None = None,
    check: bool = True,
) -> BatchRun:
    """Run ``cases`` on ``core`` in one QEMU start and return their results in order.

    With ``check`` (the default), a case the harness could not run (bad arguments, a tier the
    core lacks, an output written out of bounds) raises QemuError naming it.
    """
    core = get_core(core) if isinstance(core, str) else core
    harness = harness or build_harness(core)
    batch = encode_batch(cases)
    if len(batch) > core.bulk.length // 2:
        raise QemuError(
            f"kernels_c on {core.name}: a batch must fit half the bulk region "
            f"({core.bulk.length // 2} bytes), got {len(batch)} bytes: split it"
        )
    with tempfile.TemporaryDirectory(prefix="refsim-qemu-") as tmp:
        workdir = Path(tmp)
        (workdir / "in.bin").write_bytes(batch)
        start = time.perf_counter()
        try:
            done = subprocess.run(
                qemu_command(core, harness.elf, "in.bin out.bin"),
                cwd=workdir,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise QemuTimeoutError(
                f"kernels_c on {core.name}: a batch of {len(cases)} cases must finish within {timeout} s, "
                "it did not (QEMU killed)"
            ) from None
        seconds = time.perf_counter() - start
        console = done.stderr
        if done.returncode == 4:
            raise _fault(core, harness.elf, done.returncode, console, cases)
        if done.returncode != 0:
            meaning = EXIT_STATUS.get(done.returncode, "unexpected exit status")
            raise QemuError(
                f"kernels_c on {core.name}: harness must exit 0, got {done.returncode} ({meaning}): "
                f"{console.strip()}"
            )
        results = tuple(decode_results((workdir / "out.bin").read_bytes(), len(cases)))
    if check:
        bad = [(i, r) for i, r in enumerate(results) if not r.ok]
        if bad:
            listed = "; ".join(
                f"case {i} ({r.function}, variant {cases[i].variant}): "
                f"{HARNESS_STATUS.get(r.harness_status, '?')}"
                for i, r in bad[:5]
            )
            raise QemuError(f"kernels_c on {core.name}: {len(bad)} of {len(cases)} cases not run: {listed}")
    return BatchRun(core=core, results=results, seconds=seconds, console=console)
