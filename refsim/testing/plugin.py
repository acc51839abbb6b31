"""pytest plugin: a kernel library's tests against refsim's golden model, under QEMU.

Registered through the ``pytest11`` entry point, so installing refsim is enough::

    pytest --refsim-kernels-dir path/to/my-cmsis-nn --refsim-cpu cortex-m55

    def test_my_conv(refsim_kernels):
        refsim_kernels.check("arm_convolve_wrapper_s8", cases=200, seed=0)

``--refsim-kernels-dir`` is a CMSIS-NN-API library laid out like CMSIS-NN (``Include/``,
``Source/**/*.c``, optionally its own ``CMakeLists.txt``), built for ``--refsim-cpu`` exactly as
``refsim conformance --kernels-dir`` builds it (:func:`refsim.qemu.library.build_library_harness`,
cached by content). The fixture :func:`refsim_kernels` runs cases through that build, one QEMU
start per batch (every case that fits the board's bulk memory), and compares each output bit
for bit with the golden model's. A failing check saves the first failing case of each mismatch
class as a vector directory (shared VECTORS.md) and names it in the assertion message, with the
``refsim conformance`` command that reruns it.

Without ``--refsim-kernels-dir`` (or without the cross toolchain and QEMU) the tests that use
the fixture are skipped with the reason. This module imports only pytest at import time.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from refsim.conformance.vectors import Case
    from refsim.qemu.conformance import Report, Target

#: Failures listed in an assertion message; the reproducer directory holds one per class.
SHOWN_FAILURES = 5


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("refsim", "refsim: test a CMSIS-NN-API kernel library against the golden model")
    group.addoption(
        "--refsim-kernels-dir",
        metavar="DIR",
        type=Path,
        help="the kernel library (Include/, Source/, optionally CMakeLists.txt) the refsim_kernels fixture builds",
    )
    group.addoption(
        "--refsim-cpu",
        metavar="CPU",
        default=None,
        help="the core to build for and emulate (cortex-m3, -m4, -m7, -m33, -m55 ...; default cortex-m4)",
    )
    group.addoption(
        "--refsim-failures-dir",
        metavar="DIR",
        type=Path,
        help="where failing cases are saved as vector directories (default: under pytest's basetemp)",
    )


def pytest_report_header(config: pytest.Config) -> str | None:
    kernels = config.getoption("refsim_kernels_dir")
    if kernels is None:
        return None
    return f"refsim: kernels {kernels} on {config.getoption('refsim_cpu') or DEFAULT_CPU}"


DEFAULT_CPU = "cortex-m4"


@dataclass
class KernelRunner:
    """What the ``refsim_kernels`` fixture gives a test: the built library on one core."""

    target: Target
    failures_root: Path

    @property
    def cpu(self) -> str:
        return self.target.core.name

    @property
    def functions(self) -> frozenset[str]:
        """The CMSIS-NN functions the library defines (and refsim knows)."""
        from refsim.qemu.conformance import kernel_functions

        return frozenset(
            f for f in kernel_functions() if self.target.available is None or f in self.target.available
        )

    def run(self, cases: Sequence[Case]) -> Report:
        """Run ``cases`` (conformance vectors with their expected outputs) through the library,
        one QEMU start per batch; the report, whatever it says."""
        from refsim.qemu.conformance import run_cases

        return run_cases(self.target, list(cases))

    def check_cases(self, cases: Sequence[Case], *, label: str | None = None) -> Report:
        """Run ``cases`` and fail the test, naming the saved reproducers, unless every output
        equals the golden model's bit for bit."""
        cases = list(cases)
        if not cases:
            raise ValueError("check_cases: no cases")
        functions = sorted({c.function for c in cases})
        missing = [f for f in functions if f not in self.functions]
        if missing:
            pytest.fail(
                f"{self.target.library_name} does not define {', '.join(missing)} "
                f"(it defines {', '.join(sorted(self.functions)) or 'no function refsim knows'})",
                pytrace=False,
            )
        report = self.run(cases)
        if report.failed:
            pytest.fail(self._failure_message(report, label or "-".join(functions)), pytrace=False)
        return report

    def check(self, function: str, cases: int = 100, seed: int = 0) -> Report:
        """``cases`` cases of ``function`` drawn by refsim's conformance generator (case ``i``
        from ``numpy.random.default_rng([seed, i])``, the same cases as
        ``refsim conformance --kernel FUNCTION --cases N --seed S``), checked as :meth:`check_cases`."""
        from refsim.conformance import vectors as vec

        return self.check_cases(
            list(vec.generate_cases(function, cases, seed)), label=f"{function}-seed{seed}"
        )

    def _failure_message(self, report: Report, label: str) -> str:
        from refsim.qemu.conformance import mismatch_classes, save_reproducers

        # Named by what failed, so a rerun of the same failure (hypothesis replays its failing
        # example once more at the end) writes the same directory again.
        failed = "\n".join(sorted(f.case.label for f in report.failures))
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", label)[:80]
        directory = self.failures_root / f"{safe}-{zlib.crc32(failed.encode()):08x}"
        directory.mkdir(parents=True, exist_ok=True)
        saved = save_reproducers(report, directory)
        ran = report.passed + report.failed
        lines = [
            f"{report.failed} of {ran} cases differ from refsim's golden model on {self.cpu} "
            f"({report.emulator_starts} QEMU start(s))",
            *(f"  {f.case.label}: {f.message}" for f in report.failures[:SHOWN_FAILURES]),
            *([f"  ... and {report.failed - SHOWN_FAILURES} more"] if report.failed > SHOWN_FAILURES else []),
            *(f"  mismatch class {fn}: {kind}: {len(fs)} case(s)" for (fn, kind), fs in mismatch_classes(report).items()),
            f"reproducers saved to {directory} ({len(saved)} case(s), one per mismatch class)",
            f"rerun: refsim conformance --vectors {directory} --cpu {self.cpu} --kernels-dir {self.target.library}",
        ]  # fmt: skip
        return "\n".join(lines)


@pytest.fixture(scope="session")
def refsim_target(request: pytest.FixtureRequest) -> Target:
    """The user's library built for ``--refsim-cpu`` (a :class:`refsim.qemu.conformance.Target`).
    Skips without ``--refsim-kernels-dir``, or without arm-none-eabi-gcc/newlib/qemu-system-arm."""
    config = request.config
    kernels_dir: Path | None = config.getoption("refsim_kernels_dir")
    if kernels_dir is None:
        pytest.skip(
            "refsim: no kernel library to test: run pytest with --refsim-kernels-dir DIR "
            "(and --refsim-cpu CPU, default cortex-m4)"
        )
    from refsim.errors import RefsimError
    from refsim.qemu import missing_toolchain
    from refsim.qemu.conformance import resolve_target
    from refsim.qemu.errors import ToolchainMissingError

    reason = missing_toolchain()
    if reason is not None:
        pytest.skip(f"refsim: {reason}")
    kernels_dir = (config.invocation_params.dir / kernels_dir).resolve()
    try:
        return resolve_target(None, config.getoption("refsim_cpu") or DEFAULT_CPU, kernels_dir)
    except ToolchainMissingError as error:
        pytest.skip(f"refsim: {error}")
    except RefsimError as error:
        raise pytest.UsageError(f"refsim: {error}") from None


@pytest.fixture(scope="session")
def refsim_kernels(refsim_target: Target, request: pytest.FixtureRequest, tmp_path_factory) -> KernelRunner:
    """The user's library on one core: ``check(function, cases, seed)`` and ``check_cases(cases)``
    run drawn cases under QEMU against the golden model (:class:`KernelRunner`). Session-scoped,
    so a hypothesis ``@given`` test may use it."""
    root = request.config.getoption("refsim_failures_dir")
    if root is None:
        root = tmp_path_factory.getbasetemp() / "refsim-failures"
    return KernelRunner(refsim_target, Path(root).resolve())
