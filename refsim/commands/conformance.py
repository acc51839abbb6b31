"""``refsim conformance``: check or produce conformance vectors, or run them through C kernels
under QEMU (docs/conformance.md). The QEMU side lives in :mod:`refsim.qemu.conformance`."""

from __future__ import annotations

import contextlib
import enum
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich import box
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Column, Table

from refsim.cli import app, console
from refsim.errors import RefsimError, VectorError

if TYPE_CHECKING:
    from refsim.engine import Engine
    from refsim.qemu.conformance import Report, Target

#: FAIL lines printed per run; the closing line counts them all.
MAX_FAIL_LINES = 50


class Isa(enum.StrEnum):
    scalar = "scalar"
    dsp = "dsp"
    mve = "mve"


@app.command()
def conformance(
    vectors: Annotated[
        Path | None,
        typer.Option(
            "--vectors",
            help="Check this vector directory: against the golden model, or with --isa the C kernels.",
        ),
    ] = None,
    export_vectors: Annotated[
        Path | None, typer.Option("--export-vectors", help="Write golden-model cases to this directory.")
    ] = None,
    kernel: Annotated[
        list[str] | None,
        typer.Option(
            "--kernel", help="CMSIS-NN function or family to export or run (repeatable; default all)."
        ),
    ] = None,
    cases: Annotated[int, typer.Option("--cases", min=1, help="Cases per function to export or run.")] = 10,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the case generator.")] = 0,
    list_functions: Annotated[
        bool, typer.Option("--list", help="List the known functions and exit.")
    ] = False,
    isa: Annotated[
        Isa | None,
        typer.Option("--isa", help="Run C kernels of this tier under QEMU (default core: m3, m4, m55)."),
    ] = None,
    cpu: Annotated[
        str | None,
        typer.Option(
            "--cpu",
            help="Core for the C kernels: cortex-m3, -m4, -m7, -m33, -m55, or a core model run on "
            "another core's board: cortex-m0plus (ARMv6-M build on the M3), cortex-m85 (on the M55).",
        ),
    ] = None,
    kernels_dir: Annotated[
        Path | None,
        typer.Option(
            "--kernels-dir", help="Build this CMSIS-NN-API library (Include/, Source/) instead of kernels_c."
        ),
    ] = None,
    count_instructions: Annotated[
        Path | None,
        typer.Option(
            "--count-instructions", help="Count executed instructions per case; write them to this JSON file."
        ),
    ] = None,
    count_cycles: Annotated[
        Path | None,
        typer.Option(
            "--count-cycles",
            help="Instruction-timed cycles per case (QEMU blocks x llvm-mca + TRM rules); write them to this JSON file.",
        ),
    ] = None,
    system: Annotated[
        str | None,
        typer.Option(
            "--system", help="System preset for --count-cycles (memory wait states); default ideal-<core>."
        ),
    ] = None,
    failures_dir: Annotated[
        Path | None,
        typer.Option(
            "--failures-dir",
            help="Where to save the first failing case of every mismatch class (default: a new temporary directory).",
        ),
    ] = None,
    estimate: Annotated[
        bool,
        typer.Option(
            "--estimate",
            help="With --vectors DIR --cpu X: the cost model's instructions and cycles per case "
            "(beside instruction-timed ones when QEMU is available).",
        ),
    ] = False,
    json_path: Annotated[
        Path | None, typer.Option("--json", help="With --estimate: write per-case records to this JSON file.")
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers",
            min=1,
            help="With --isa/--cpu: shard the cases over N local worker processes (1: in process, in tasks).",
        ),
    ] = None,
    ray: Annotated[
        str | None,
        typer.Option(
            "--ray",
            help="With --isa/--cpu: shard the cases into Ray tasks: 'local' (a private instance), "
            "'auto' or a cluster ADDRESS (docs/scaling.md).",
        ),
    ] = None,
    per_task: Annotated[
        int, typer.Option("--per-task", min=1, help="With --workers/--ray: cases per task.")
    ] = 500,
) -> None:
    """Check or produce CMSIS-NN conformance vectors (format: docs/conformance.md)."""
    from refsim.conformance import registry
    from refsim.conformance import vectors as vec

    if list_functions:
        table = Table("function", "family", "arrays", "params")
        for name, fn in registry.functions().items():
            table.add_row(name, fn.family, ", ".join(fn.arrays), str(len(fn.params)))
        console.print(table)
        return
    if estimate or json_path is not None:
        from refsim.commands.conformance_estimate import estimate_vectors

        if not estimate or vectors is None or cpu is None:
            raise typer.BadParameter("--estimate needs --vectors DIR and --cpu (and --json needs --estimate)")
        estimate_vectors(vectors, cpu, kernel, json_path, kernels_dir=kernels_dir, system=system)
        return
    if system is not None and count_cycles is None:
        raise typer.BadParameter("--system applies to --count-cycles")
    sharded = workers is not None or ray is not None
    if sharded and isa is None and cpu is None and kernels_dir is None:
        raise RefsimError("--workers/--ray shard C-kernel runs: give --isa or --cpu")
    if sharded and count_cycles is not None:
        raise RefsimError("--count-cycles runs in this process: it takes no --workers/--ray")
    if any(option is not None for option in (isa, cpu, kernels_dir, count_instructions, count_cycles)):
        if export_vectors is not None:
            raise typer.BadParameter("--export-vectors writes golden-model vectors: it takes no --isa/--cpu")
        with contextlib.ExitStack() as stack:
            runner = None  # sharded runs: engine tasks (refsim.qemu.campaign)
            if sharded:
                from refsim.engine import make_engine

                # Ray or the pool refused before any build: a missing extra is one line, not a traceback
                runner = stack.enter_context(make_engine(workers or (None if ray else 1), ray))
            _run_c_kernels(
                isa.value if isa else None, cpu, vectors, kernel, cases, seed, kernels_dir,
                count_instructions, failures_dir, count_cycles=count_cycles, system=system,
                runner=runner, per_task=per_task if sharded else 0,
            )  # fmt: skip
        return
    if (vectors is None) == (export_vectors is None):
        raise typer.BadParameter("give exactly one of --vectors DIR or --export-vectors DIR")
    if export_vectors is not None:
        total = 0
        for function in vec.resolve_functions(kernel):
            for case in vec.generate_cases(function, cases, seed):
                vec.write_case(export_vectors, case)
                total += 1
        console.print(f"wrote {total} cases to {export_vectors}")
        return
    assert vectors is not None
    summary = vec.Summary()
    for case in vec.iter_directory(vectors):
        result = vec.check_case(case)
        summary.results.append(result)
        if not result.passed:
            console.print(f"FAIL {case.label}: {result.message}", markup=False, highlight=False)
    print(summary.closing_line())
    if summary.failed:
        raise typer.Exit(1)


def _say(text: str) -> None:
    """One line as is: no markup, no highlighting, never wrapped (paths stay whole)."""
    console.print(text, markup=False, highlight=False, soft_wrap=True)


def _progress() -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=not console.is_terminal,
    )


def _run_c_kernels(
    isa: str | None,
    cpu: str | None,
    vectors: Path | None,
    kernel: list[str] | None,
    cases: int,
    seed: int,
    kernels_dir: Path | None,
    count_instructions: Path | None,
    failures_dir: Path | None,
    *,
    count_cycles: Path | None,
    system: str | None,
    runner: Engine | None,
    per_task: int,
) -> None:
    """The run itself, in this process (``runner`` None) or on the engine ``runner``."""
    from refsim.qemu import conformance as qc
    from refsim.qemu import timing_cli

    timed_cpu = cpu
    if count_cycles is not None:
        from isa_models.cortex_m.cores import get_core_model
        from isa_models.cortex_m.systems import get_system

        if system is not None:
            preset = get_system(system)
            if cpu is not None and preset.core != get_core_model(cpu).name:
                raise typer.BadParameter(f"--system {system} is a {preset.core} system; --cpu is {cpu}")
        if cpu is not None:
            get_core_model(cpu)
        if system is not None and cpu is None:
            timed_cpu = get_system(system).core
    with console.status("building the harness"):
        # a core model QEMU has no machine for (cortex-m0plus, cortex-m85) runs its own build on its board
        target = timing_cli.model_target(isa, timed_cpu, kernels_dir)
    tier = "public functions" if target.variant == "default" else f"{target.variant} variants"
    _say(f"{target.describe()}: --isa {target.isa}, {tier}")
    if runner is not None:
        _run_sharded(
            target,
            runner,
            vectors,
            kernel,
            cases,
            seed,
            kernels_dir,
            count_instructions,
            failures_dir,
            per_task,
        )
        return
    if vectors is not None:
        todo = _vector_cases(vectors, kernel)
        source = str(vectors)
    else:
        functions = _c_kernel_functions(kernel)
        with _progress() as progress:
            task = progress.add_task("generating cases", total=len(functions) * cases)
            todo = qc.generate_cases(functions, cases, seed, progress=lambda n: progress.advance(task, n))
        source = f"seed {seed}, {cases} per kernel"
    with _progress() as progress:
        task = progress.add_task(f"running on {target.cpu}", total=len(todo))
        report = qc.run_cases(
            target, todo, count=count_instructions is not None, progress=lambda n: progress.advance(task, n)
        )
    _conclude(report, target, source, count_instructions, failures_dir, count_cycles=count_cycles,
              system=system, todo=todo, timed_cpu=timed_cpu)  # fmt: skip


def _vector_cases(vectors: Path, kernel: list[str] | None) -> list:
    """The vectors in ``vectors`` of the functions ``--kernel`` names."""
    from refsim.conformance import vectors as vec

    chosen = set(vec.resolve_functions(kernel))
    return [c for c in vec.iter_directory(vectors) if c.function in chosen]


def _c_kernel_functions(kernel: list[str] | None) -> list[str]:
    """The functions ``--kernel`` names that have a C kernel; none is an error."""
    from refsim.qemu import conformance as qc

    functions = qc.kernel_functions(kernel)
    if not functions:
        raise VectorError(f"--kernel {' '.join(kernel or ['all'])}: no such function has a C kernel")
    return functions


def _run_sharded(
    target: Target,
    runner: Engine,
    vectors: Path | None,
    kernel: list[str] | None,
    cases: int,
    seed: int,
    kernels_dir: Path | None,
    count_instructions: Path | None,
    failures_dir: Path | None,
    per_task: int,
) -> None:
    """The campaign as engine tasks (refsim/qemu/campaign.py); the same report as the serial path."""
    from refsim.qemu import campaign

    spec = campaign.TargetSpec(
        target.isa,
        target.cpu,
        str(kernels_dir.resolve()) if kernels_dir is not None else None,
    )
    if vectors is not None:
        tasks = campaign.case_tasks(_vector_cases(vectors, kernel), per_task=per_task)
        source = str(vectors)
    else:
        tasks = campaign.generated_tasks(_c_kernel_functions(kernel), cases, seed, per_task=per_task)
        source = f"seed {seed}, {cases} per kernel"
    total = sum(campaign.task_cases(t) for t in tasks)
    started = time.perf_counter()
    with _progress() as progress:
        bar = progress.add_task(f"running on {target.cpu} ({runner.name})", total=total)
        report = campaign.run_campaign(
            runner, target, spec, tasks, count=count_instructions is not None,
            progress=lambda n: progress.advance(bar, n),
        )  # fmt: skip
    wall = time.perf_counter() - started
    _say(f"{total} cases in {len(tasks)} task(s) on {runner.name} in {wall:.1f} s")
    _conclude(report, target, source, count_instructions, failures_dir)


def _conclude(
    report: Report,
    target: Target,
    source: str,
    count_instructions: Path | None,
    failures_dir: Path | None,
    *,
    count_cycles: Path | None = None,
    system: str | None = None,
    todo: list | None = None,
    timed_cpu: str | None = None,
) -> None:
    """The table, the closing lines, the reproducers and the files, from a run's report."""
    from refsim.qemu import conformance as qc
    from refsim.qemu import timing_cli

    if not report.kernels:
        raise VectorError(f"{source}: no case is of a function {target.library_name} runs")

    console.print(_summary_table(report, counted=count_instructions is not None))
    ran = sum(k.cases for k in report.kernels.values())
    _say(f"{ran} cases in {report.emulator_starts} QEMU start(s) ({source})")
    for function, skipped in report.skipped.items():
        _say(f"skipped {skipped} cases of {function}: {report.skip_reason[function]}")
    for failure in report.failures[:MAX_FAIL_LINES]:
        _say(f"FAIL {failure.case.label}: {failure.message}")
    if len(report.failures) > MAX_FAIL_LINES:
        _say(f"... and {len(report.failures) - MAX_FAIL_LINES} more failures")
    if report.failures:
        directory = failures_dir or Path(tempfile.mkdtemp(prefix="refsim-conformance-failure-"))
        classes = qc.mismatch_classes(report)
        saved = qc.save_reproducers(report, directory)
        library = f" --kernels-dir {target.library}" if target.library else ""
        _say(f"first failing case saved to {next(iter(saved.values()))}")
        for (function, kind), failures in classes.items():
            _say(
                f"mismatch class {function}: {kind}: {len(failures)} case(s), reproducer {saved[function, kind]}"
            )
        _say(
            f"reproduce: refsim conformance --vectors {directory} --isa {target.isa} "
            f"--cpu {target.cpu}{library}"
        )
    if count_instructions is not None:
        qc.write_counts(count_instructions, report)
        _say(f"wrote {len(report.counts)} instruction counts to {count_instructions}")
    if count_cycles is not None:
        with console.status("timing the cases (QEMU blocks, llvm-mca)"):
            labelled, header = timing_cli.count_cycles(
                target, todo, cpu=timed_cpu, system=system, runnable=frozenset(report.kernels)
            )
        timing_cli.write_cycles(count_cycles, labelled, header)
        _say(
            f"wrote {len(labelled)} instruction-timed cycle records ({header['core']}, {header['system']}) to {count_cycles}"
        )
    print(report.closing_line())
    if report.failed:
        raise typer.Exit(1)


def _summary_table(report: Report, *, counted: bool) -> Table:
    width = max(len(name) for name in report.kernels)
    columns = [Column("kernel", no_wrap=True, min_width=width), "cases", "pass", "fail"]
    if counted:
        columns += ["instrs", "instr/MAC"]
    table = Table(
        *columns,
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        title=f"{report.target.cpu}, --isa {report.target.isa}",
        caption="instrs: executed instructions per case (mean)" if counted else None,
    )
    for summary in report.kernels.values():
        row = [summary.function, str(summary.cases), str(summary.passed), str(summary.failed)]
        if counted:
            row += [
                f"{summary.per_case:,.0f}" if summary.per_case is not None else "—",
                f"{summary.per_mac:.2f}" if summary.per_mac is not None else "—",
            ]
        table.add_row(*row, style="red" if summary.failed else None)
    return table
