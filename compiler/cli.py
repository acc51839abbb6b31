"""``refsim compile``: contributed to refsim's CLI through the ``refsim.commands`` entry point.

    refsim compile zoo:kws --target cortex-m55 -o kws.pte
    refsim compile model.py:make_model --input-shape 1,3,32,32 --calibration data.npz -o m.pte

This module imports neither torch nor the pipeline at import time, so ``refsim`` keeps
working (and says what is missing) where the ``compile`` extra is not installed.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import sys
import time
from pathlib import Path
from typing import Annotated

import numpy as np
import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from compiler.errors import CompileError, ModelSpecError

DEFAULT_RANDOM_SAMPLES = 16


def register(app: typer.Typer) -> None:
    app.command(name="compile")(compile_command)


def parse_shape(text: str) -> tuple[int, ...]:
    try:
        shape = tuple(int(s) for s in text.replace("x", ",").split(",") if s.strip())
    except ValueError:
        raise CompileError(f"--input-shape: expected integers like 1,1,49,10, got {text!r}") from None
    if not shape or min(shape) < 1:
        raise CompileError(f"--input-shape: expected positive integers like 1,1,49,10, got {text!r}")
    return shape


def load_model(spec: str):
    """``zoo:NAME`` → (module, default input shape, zoo spec); ``FILE.py:FACTORY`` → (module, None, None)."""
    from compiler import zoo

    if spec.startswith("zoo:"):
        name = spec[4:]
        if name not in zoo.MODELS:
            raise ModelSpecError(
                f"unknown zoo model {name!r}: expected one of {', '.join(sorted(zoo.MODELS))}"
            )
        z = zoo.MODELS[name]
        return zoo.build(z, channels_last=False), z.shape, z
    path_text, sep, factory = spec.rpartition(":")
    if not sep or not path_text.endswith(".py") or not factory:
        raise ModelSpecError(f"model {spec!r}: expected MODULE.py:FACTORY or zoo:NAME")
    path = Path(path_text)
    if not path.is_file():
        raise ModelSpecError(f"model file {path} does not exist")
    module_name = f"refsim_user_model_{path.stem}"
    loader_spec = importlib.util.spec_from_file_location(module_name, path)
    if loader_spec is None or loader_spec.loader is None:
        raise ModelSpecError(f"cannot import {path}")
    module = importlib.util.module_from_spec(loader_spec)
    sys.path.insert(0, str(path.resolve().parent))
    try:
        sys.modules[module_name] = module
        loader_spec.loader.exec_module(module)
        make = getattr(module, factory, None)
        if not callable(make):
            raise ModelSpecError(f"{path} has no callable {factory!r}")
        built = make()
    except ModelSpecError:
        raise
    except Exception as exc:  # the user's code: one line naming where it failed
        raise ModelSpecError(f"{spec}: {type(exc).__name__}: {exc}") from exc
    finally:
        sys.path.pop(0)
    import torch

    if not isinstance(built, torch.nn.Module):
        raise ModelSpecError(f"{spec} returned {type(built).__name__}, expected a torch.nn.Module")
    return built, None, None


def calibration_samples(
    path: Path | None, random_count: int | None, shape: tuple[int, ...], zoo_spec, seed: int
):
    """A list of input tensors: from an npz (``input0`` [N, ...] or every array one batch of
    samples), N seeded uniform [-1, 1) draws, or the zoo's own calibration set."""
    import torch

    if path is not None:
        if not path.is_file():
            raise CompileError(f"--calibration: {path} does not exist")
        try:
            with np.load(path) as data:
                arrays = [data["input0"]] if "input0" in data.files else [data[k] for k in data.files]
        except (OSError, ValueError) as exc:
            raise CompileError(f"--calibration: {path} is not a readable npz ({exc})") from None
        samples = []
        for a in arrays:
            a = np.asarray(a, np.float32)
            if a.shape == shape:
                samples.append(torch.from_numpy(a))
            elif a.shape[1:] == shape[1:]:
                samples += [torch.from_numpy(a[k : k + shape[0]]) for k in range(0, len(a), shape[0])]
            else:
                raise CompileError(
                    f"--calibration: array of shape {list(a.shape)} does not match input shape {list(shape)}"
                )
        return samples
    if random_count is None and zoo_spec is not None:
        from compiler import zoo

        return zoo.calibration(zoo_spec, channels_last=False)
    count = DEFAULT_RANDOM_SAMPLES if random_count is None else random_count
    if count < 1:
        raise CompileError(f"--calibration-random: expected at least 1 sample, got {count}")
    generator = torch.Generator().manual_seed(seed)
    return [torch.rand(shape, generator=generator) * 2 - 1 for _ in range(count)]


def compile_command(
    model: Annotated[
        str, typer.Argument(help="MODULE.py:FACTORY (a function returning an nn.Module) or zoo:NAME.")
    ],
    output: Annotated[Path, typer.Option("-o", "--output", help="The .pte to write.")],
    input_shape: Annotated[
        str | None, typer.Option("--input-shape", help="e.g. 1,1,49,10 (zoo models know theirs).")
    ] = None,
    target: Annotated[
        str, typer.Option("--target", help="cortex-m55, cortex-m4, cortex-m85, cortex-m7, ...")
    ] = "cortex-m55",
    calibration: Annotated[
        Path | None, typer.Option("--calibration", help="npz of calibration inputs.")
    ] = None,
    calibration_random: Annotated[
        int | None, typer.Option("--calibration-random", help="N random inputs in [-1, 1).")
    ] = None,
    planner: Annotated[
        str, typer.Option("--planner", help="Memory planner (see docs/compiler.md) or best.")
    ] = "best",
    reorder: Annotated[
        bool, typer.Option("--reorder", help="Reorder independent layers to lower the peak.")
    ] = False,
    json_path: Annotated[
        Path | None, typer.Option("--json", help="Write the compile report as JSON.")
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of --calibration-random.")] = 0,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No summary tables.")] = False,
) -> None:
    """Compile a PyTorch model to an int8 cortex_m .pte (CMSIS-NN numerics, planned memory)."""
    from refsim.cli import console

    # torchao logs its optional CUDA extensions failing to load, and torch a deprecation of
    # torchao's pytree registration, on every import: noise for a compile on a CPU machine.
    for name in ("torchao", "torch.utils._pytree"):
        logging.getLogger(name).setLevel(logging.ERROR)
    try:
        import torch  # noqa: F401

        from compiler.api import compile as compile_model
        from compiler.planner import ALGORITHMS
        from compiler.targets import get_target
    except ImportError as exc:
        raise CompileError(
            f"refsim compile needs torch and torchao (pip install 'refsim[compile]'): {exc}"
        ) from None

    started = time.perf_counter()
    tgt = get_target(target)
    if planner != "best" and planner not in ALGORITHMS:
        raise CompileError(
            f"--planner: unknown {planner!r}; expected one of {', '.join([*ALGORITHMS, 'best'])}"
        )
    if calibration is not None and calibration_random is not None:
        raise CompileError("give either --calibration or --calibration-random, not both")
    module, default_shape, zoo_spec = load_model(model)
    if input_shape is None and default_shape is None:
        raise CompileError("--input-shape is required for a module file (e.g. --input-shape 1,3,32,32)")
    shape = parse_shape(input_shape) if input_shape is not None else default_shape
    if default_shape is not None and shape != default_shape:
        raise CompileError(f"--input-shape {list(shape)}: {model} takes {list(default_shape)}")
    samples = calibration_samples(calibration, calibration_random, shape, zoo_spec, seed)
    if not samples:
        raise CompileError("calibration data is empty")
    if tuple(samples[0].shape) != shape:
        raise CompileError(
            f"calibration inputs have shape {list(samples[0].shape)}, --input-shape is {list(shape)}"
        )
    example = samples[0]
    columns = (TextColumn("calibrating"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True, disable=quiet) as bar:
        task = bar.add_task("calibrating", total=len(samples))
        result = compile_model(
            module,
            (example,),
            target=tgt,
            calibration=samples,
            planner=planner,
            reorder=reorder,
            path=output,
            progress=lambda k: bar.update(task, completed=k),
        )
    elapsed = time.perf_counter() - started
    report = compile_report(result, model, output, elapsed)
    if not quiet:
        print_summary(console, result, report)
    console.print(
        f"wrote {output}: {len(result.pte):,} B, arena {result.arena_bytes:,} B "
        f"(bound {result.planned.plan.lower_bound:,} B, {result.planned.plan.algorithm}), "
        f"constants {result.constant_bytes:,} B, {elapsed:.1f} s"
    )
    if json_path is not None:
        json_path.write_text(json.dumps(report, indent=2) + "\n")


def compile_report(result, model: str, output: Path, elapsed: float) -> dict:
    plan = result.planned.plan
    return {
        "model": model,
        "output": str(output),
        "target": result.target.name,
        "isa": result.target.isa,
        "pte_bytes": len(result.pte),
        "constant_bytes": result.constant_bytes,
        "memory": {
            "arena_bytes": plan.arena_bytes,
            "lower_bound": plan.lower_bound,
            "planner": plan.algorithm,
            "planners": {
                name: {"arena_bytes": p.arena_bytes, "lower_bound": p.lower_bound, "optimal": p.optimal}
                for name, p in result.planned.plans.items()
            },
            "scratch_bytes": sum(
                result.graph.tensors[s].nbytes for call in result.graph.calls for s in call.scratch
            ),
        },
        "layers": [
            {"name": x.name, "op": x.op, "status": x.status, "detail": x.detail} for x in result.layers
        ],
        "ops": [c.op for c in result.graph.calls],
        "io": {
            k: (None if v is None else {"scale": v[0], "zero_point": v[1]})
            for k, v in result.io_quantization().items()
        },
        "seconds": {"total": elapsed, **result.seconds},
    }


def print_summary(console, result, report: dict) -> None:
    layers = Table(title=f"layers ({result.target.name}, {result.target.isa})")
    for col in ("layer", "op", "int8?", "detail"):
        layers.add_column(col)
    style = {"int8": "green", "fused": "green", "folded": "green", "view": "green", "fp32": "yellow"}
    for x in result.layers:
        layers.add_row(x.name, x.op, f"[{style.get(x.status, '')}]{x.status}[/]", x.detail)
    console.print(layers)
    memory = Table(title="memory plan (arena 1)")
    for col in ("planner", "arena B", "lower bound B", "over bound"):
        memory.add_column(col, justify="right" if col != "planner" else "left")
    for name, p in report["memory"]["planners"].items():
        over = p["arena_bytes"] / p["lower_bound"] - 1 if p["lower_bound"] else 0.0
        memory.add_row(name, f"{p['arena_bytes']:,}", f"{p['lower_bound']:,}", f"{over:.1%}")
    console.print(memory)
    console.print(
        f"constants {report['constant_bytes']:,} B, scratch {report['memory']['scratch_bytes']:,} B planned with the activations"
    )
