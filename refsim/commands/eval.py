"""``refsim eval MODEL --inputs data.npz``: the device's own int8 results over a whole data set.

``data.npz`` holds ``input0`` (``input1``, ...) with a leading sample axis; a float array given for
an int8 input is quantized with the program's input plan, as ``refsim run`` does. The samples run
through `Method.execute_batch` (every sample bit for bit what one ``refsim run`` gives it) in
chunks of ``--batch``. What is reported, all of it in ``--json``:

- top-1 accuracy against ``--labels`` (``.npy`` of integer class indices, one per sample, or an
  ``.npz`` holding ``labels``), the confusion matrix (rows: label, columns: prediction; ``--plot``
  draws it) and per-class accuracy (recall);
- against ``--reference`` float outputs (``output0``, ... with the sample axis; e.g. the float
  model's): top-1 agreement and the SNR of the dequantized output, ``10·log10(Σ ref² / Σ (ref - deq)²)``
  over all samples;
- throughput: samples per second and ms per inference (wall time of the batched runs);
- with ``--estimate-cycles`` (``--cpu``/``--system``/``--clock-mhz`` as for ``refsim run``): the
  device latency over the data set, min / median / max: each sample's data-dependent calls
  (softmax's exponentials, refsim.ops.data_work) priced on the values that sample gives them,
  the rest of the estimate shared (a program without data-dependent work has one latency).

The prediction of a sample is the argmax of its ``output0`` (flattened), ties to the lowest
index. Any malformed file, a shape or length mismatch, is one line and exit status 2.
"""

from __future__ import annotations

import json
import time
import zipfile
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer
from rich.table import Table

from refsim.cli import app, console
from refsim.errors import RefsimError

#: Confusion matrices with more classes than this are left out of the printed report (JSON keeps them).
PRINT_CLASSES = 20


@app.command("eval")
def eval_command(
    model: Annotated[Path, typer.Argument(help="A program refsim runs (.pte).")],
    inputs: Annotated[
        Path, typer.Option("--inputs", help="npz with input0, ... each with a leading sample axis.")
    ],
    labels: Annotated[
        Path | None, typer.Option("--labels", help="Class index per sample (.npy, or .npz with 'labels').")
    ] = None,
    reference: Annotated[
        Path | None,
        typer.Option("--reference", help="npz with float output0 per sample (agreement and SNR)."),
    ] = None,
    batch: Annotated[int, typer.Option("--batch", help="Samples per batched run.", min=1)] = 256,
    workers: Annotated[
        int | None, typer.Option("--workers", help="Threads (default: the CPUs available).", min=1)
    ] = None,
    outputs: Annotated[
        Path | None, typer.Option("--outputs", help="Write output0, ... (all samples) to this npz.")
    ] = None,
    json_path: Annotated[Path | None, typer.Option("--json", help="Write the report as JSON.")] = None,
    plot: Annotated[
        Path | None, typer.Option("--plot", help="Confusion matrix as a PNG (needs --labels).")
    ] = None,
    method_name: Annotated[str, typer.Option("--method", help="Method to run.")] = "forward",
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar, no tables.")] = False,
    estimate_cycles: Annotated[
        bool,
        typer.Option(
            "--estimate-cycles", help="Device latency per sample (min / median / max) from the cost model."
        ),
    ] = False,
    cpu: Annotated[
        str | None, typer.Option("--cpu", help="Core for the estimate (cortex-m0plus ... m85).")
    ] = None,
    system: Annotated[
        str | None, typer.Option("--system", help="System preset for the estimate (clock, memories).")
    ] = None,
    clock_mhz: Annotated[float | None, typer.Option("--clock-mhz", help="Clock for the latency.")] = None,
) -> None:
    """Run MODEL over every sample of a data set and report accuracy, agreement and throughput."""
    from refsim.runtime import Program, TensorRef

    if plot is not None and labels is None:
        raise RefsimError("--plot draws the confusion matrix: it needs --labels")
    if not estimate_cycles and (cpu or system or clock_mhz is not None):
        raise RefsimError("--cpu, --system and --clock-mhz need --estimate-cycles")
    program = Program.load(model)
    method = program.method(method_name)
    data = _load_npz(inputs, "--inputs")
    arrays, count = _batch_inputs(program, method, data, inputs)
    truth = _labels(labels, count) if labels is not None else None
    ref = _reference(reference, count) if reference is not None else None
    first = method.outputs[0] if method.outputs else None
    if not isinstance(first, TensorRef):
        raise RefsimError(f"method {method_name!r} returns no tensor output to evaluate")
    n_values = int(np.prod(first.sizes))
    if truth is not None and truth.size and truth.max() >= n_values:
        raise RefsimError(
            f"--labels: class index {int(truth.max())} but the model has {n_values} output values"
        )
    if ref is not None and ref.size != count * n_values:
        raise RefsimError(
            f"--reference: output0 has {ref.size // count} values per sample, the model {n_values}"
        )
    # Warm-up, before the clock: the stacked copies (or clones) a chunk needs, and numba's kernels.
    method.execute_batch([a[:batch] if isinstance(a, np.ndarray) else a for a in arrays], workers=workers)

    results: list[list[np.ndarray]] = []
    started = time.perf_counter()
    with _progress(count, quiet) as advance:
        for start in range(0, count, batch):
            chunk = [a[start : start + batch] if isinstance(a, np.ndarray) else a for a in arrays]
            results.append(method.execute_batch(chunk, workers=workers, progress=advance))
    wall = time.perf_counter() - started
    outs = [np.concatenate([r[k] for r in results]) for k in range(len(method.outputs))] if results else []

    report: dict[str, Any] = {
        "file": str(model),
        "method": method_name,
        "samples": count,
        "seconds": round(wall, 4),
        "samples_per_s": round(count / wall, 1) if wall > 0 else None,
        "ms_per_inference": round(wall * 1e3 / count, 5) if count else None,
        "outputs": [{"shape": list(o.shape[1:]), "dtype": str(o.dtype)} for o in outs],
    }
    scores = outs[0].reshape(count, -1)
    predicted = np.argmax(scores, axis=1) if scores.shape[1] else np.zeros(count, np.int64)
    if truth is not None:
        report.update(_classification(truth, predicted, scores.shape[1]))
    if ref is not None:
        report.update(_against_reference(program, method_name, outs[0], ref, predicted))
    if estimate_cycles:
        report["estimate"] = _latency_distribution(program, method, arrays, count, cpu, system, clock_mhz)
    if outputs is not None:
        try:
            np.savez(outputs, **{f"output{k}": o for k, o in enumerate(outs)})
        except OSError as exc:
            raise RefsimError(f"--outputs {outputs}: cannot write ({exc.strerror or exc})") from None
    if json_path is not None:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(report, indent=2) + "\n")
    if plot is not None:
        _plot_confusion(np.asarray(report["confusion_matrix"]), plot, title=model.name)
    if not quiet:
        _print_report(report)
    else:
        line = f"{count} samples, {report['ms_per_inference']} ms/inference"
        if "accuracy" in report:
            line += f", accuracy {report['accuracy']:.4f}"
        if "agreement" in report:
            line += f", agreement {report['agreement']:.4f}, SNR {report['snr_db']:.2f} dB"
        if "estimate" in report:
            ms = report["estimate"]["latency_ms"]
            line += f", device latency {ms['min']:.4f} / {ms['median']:.4f} / {ms['max']:.4f} ms (min / median / max)"
        print(line)


# --- reading the files ---------------------------------------------------------------------------------


def _load_npz(path: Path, option: str) -> dict[str, np.ndarray]:
    if not path.exists():
        raise RefsimError(f"{option} {path}: no such file")
    try:
        with np.load(path, allow_pickle=False) as z:
            if not isinstance(z, np.lib.npyio.NpzFile):
                raise ValueError("a single array, not an .npz archive")
            return {k: z[k] for k in z.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise RefsimError(f"{option} {path}: not a readable .npz file ({exc})") from None


def _batch_inputs(program, method, data: dict[str, np.ndarray], path: Path) -> tuple[list[Any], int]:
    """The method's inputs, each with the leading sample axis, float ones quantized."""
    from refsim.runtime import TensorRef

    data = {k: v for k, v in data.items() if not k.startswith("output")}
    expected = {f"input{k}" for k in range(len(method.inputs))}
    unknown = sorted(set(data) - expected)
    if unknown:
        raise RefsimError(
            f"{path}: unexpected arrays {unknown}; the method takes input0..input{len(method.inputs) - 1}"
        )
    arrays: list[Any] = []
    count = None
    for k, slot in enumerate(method.inputs):
        if not isinstance(slot, TensorRef):
            arrays.append(slot)
            continue
        arr = data.get(f"input{k}")
        sizes = tuple(slot.sizes)
        if arr is None:
            raise RefsimError(f"{path}: missing input{k} (shape [N, {', '.join(map(str, sizes))}])")
        if arr.ndim != len(sizes) + 1 or arr.shape[1:] != sizes:
            raise RefsimError(
                f"{path}: input{k} has shape {list(arr.shape)}; expected [N, {', '.join(map(str, sizes))}] "
                "(a leading sample axis)"
            )
        if count is not None and arr.shape[0] != count:
            raise RefsimError(f"{path}: input{k} has {arr.shape[0]} samples, input0 has {count}")
        count = arr.shape[0]
        arrays.append(_as_input_dtype(program, method, k, slot.dtype, arr, path))
    if count is None:
        raise RefsimError(f"method {method.name!r} has no tensor input to evaluate over")
    if count == 0:
        raise RefsimError(f"{path}: no samples (the leading axis of input0 is 0)")
    return arrays, count


def _as_input_dtype(program, method, k: int, dtype: np.dtype, arr: np.ndarray, path: Path) -> np.ndarray:
    if arr.dtype == dtype:
        return arr
    from kernels_py.quantize import quantize_per_tensor
    from refsim.runtime.describe import io_quantization

    q = io_quantization(program, method.name, "input", k)
    if arr.dtype.kind == "f" and dtype == np.int8 and q is not None:
        lo = -128 if q.quant_min is None else q.quant_min
        hi = 127 if q.quant_max is None else q.quant_max
        return quantize_per_tensor(arr.astype(np.float32), q.scale, q.zero_point, lo, hi)
    raise RefsimError(f"{path}: input{k} has dtype {arr.dtype}; expected {dtype}")


def _labels(path: Path, count: int) -> np.ndarray:
    if not path.exists():
        raise RefsimError(f"--labels {path}: no such file")
    try:
        loaded = np.load(path, allow_pickle=False)
        if isinstance(loaded, np.lib.npyio.NpzFile):
            with loaded:
                if "labels" not in loaded.files:
                    raise RefsimError(f"--labels {path}: an .npz must hold an array named 'labels'")
                loaded = loaded["labels"]
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise RefsimError(f"--labels {path}: not a readable .npy/.npz file ({exc})") from None
    arr = np.asarray(loaded)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise RefsimError(
            f"--labels {path}: expected one class index per sample, got shape {list(arr.shape)}"
        )
    if arr.shape[0] != count:
        raise RefsimError(f"--labels {path}: {arr.shape[0]} labels for {count} samples")
    if arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
        arr = arr.astype(np.int64)
    if arr.dtype.kind not in "iu":
        raise RefsimError(f"--labels {path}: class indices must be integers, got dtype {arr.dtype}")
    if arr.size and arr.min() < 0:
        raise RefsimError(f"--labels {path}: negative class index {int(arr.min())}")
    return arr.astype(np.int64)


def _reference(path: Path, count: int) -> np.ndarray:
    data = _load_npz(path, "--reference")
    if "output0" not in data:
        raise RefsimError(f"--reference {path}: missing output0 (float outputs, one row per sample)")
    ref = data["output0"]
    if ref.ndim < 1 or ref.shape[0] != count:
        raise RefsimError(
            f"--reference {path}: output0 has shape {list(ref.shape)}; expected {count} samples"
        )
    if ref.dtype.kind not in "fiu":
        raise RefsimError(f"--reference {path}: output0 must be numeric, got dtype {ref.dtype}")
    return ref.astype(np.float64)


# --- the numbers ---------------------------------------------------------------------------------------


def _classification(truth: np.ndarray, predicted: np.ndarray, n_outputs: int) -> dict[str, Any]:
    classes = n_outputs
    confusion = np.zeros((classes, classes), np.int64)
    np.add.at(confusion, (truth, predicted), 1)
    support = confusion.sum(axis=1)
    correct = np.diag(confusion)
    per_class = [
        {
            "class": c,
            "samples": int(support[c]),
            "accuracy": float(correct[c] / support[c]) if support[c] else None,
        }
        for c in range(classes)
    ]
    return {
        "accuracy": float(correct.sum() / truth.size),
        "correct": int(correct.sum()),
        "confusion_matrix": confusion.tolist(),
        "per_class": per_class,
    }


def _against_reference(program, method_name: str, out: np.ndarray, ref: np.ndarray, predicted) -> dict:
    from refsim.runtime.describe import io_quantization

    count = out.shape[0]
    q = io_quantization(program, method_name, "output", 0)
    values = out.astype(np.float64)
    if q is not None and out.dtype.kind in "iu":
        values = (values - q.zero_point) * q.scale
    ref = ref.reshape(count, -1)
    values = values.reshape(count, -1)
    noise = float(np.sum((ref - values) ** 2))
    signal = float(np.sum(ref**2))
    snr = float("inf") if noise == 0 else (10 * np.log10(signal / noise) if signal > 0 else float("-inf"))
    agree = np.argmax(ref, axis=1) == predicted if ref.shape[1] else np.ones(count, bool)
    return {
        "agreement": float(np.mean(agree)),
        "snr_db": snr,
        "dequantized": q is not None and out.dtype.kind in "iu",
        "max_abs_error": float(np.max(np.abs(ref - values))) if ref.size else 0.0,
    }


def _latency_distribution(program, method, arrays, count: int, cpu, system, clock_mhz) -> dict[str, Any]:
    """The estimate once (shape only), then per sample its data-dependent rows repriced on the
    counts that sample's run reports (one more run per sample, with a counting trace); a
    program whose work the shapes decide has the one latency."""
    from refsim.ops.data_work import CountingTrace, data_dependent
    from refsim.runtime.estimate import BASIS_DATA, estimate_method, report_fields, reprice

    base = estimate_method(program, method, cpu=cpu, system=system, clock_mhz=clock_mhz)
    fields = report_fields(base)
    if any(c is not None and data_dependent(c.op.name) for c in method.calls):
        cycles = []
        for i in range(count):
            trace = CountingTrace()
            method.execute([a[i] if isinstance(a, np.ndarray) else a for a in arrays], trace=trace)
            cycles.append(reprice(base, method, trace.counts))
        basis = BASIS_DATA
    else:
        cycles, basis = [base.total.cycles] * count, fields["estimate_basis"]
    per_ms = 1.0 / (base.target.clock_mhz * 1e3)
    spread = np.asarray(cycles, np.float64)
    stats = {k: float(f(spread)) for k, f in (("min", np.min), ("median", np.median), ("max", np.max))}
    return {
        **{k: fields[k] for k in ("cpu", "isa", "clock_mhz", "system", "library", "estimate_complete")},
        "estimate_basis": basis,
        "samples": count,
        "cycles": {k: round(v) for k, v in stats.items()},
        "latency_ms": {k: round(v * per_ms, 6) for k, v in stats.items()},
        "shape_only_cycles": base.cycles_total,
    }


# --- presentation --------------------------------------------------------------------------------------


class _progress:
    """A rich progress bar with samples/s (stderr), or nothing when quiet."""

    def __init__(self, total: int, quiet: bool) -> None:
        self.total, self.quiet = total, quiet
        self.bar: Any = None

    def __enter__(self):
        if self.quiet:
            return None
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        class _Rate(TextColumn):
            def render(self, task):
                speed = task.finished_speed or task.speed
                return super().render(task) if speed is None else f"{speed:,.0f} samples/s"

        self.bar = Progress(
            TextColumn("eval"),
            BarColumn(),
            MofNCompleteColumn(),
            _Rate(""),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        self.bar.start()
        task = self.bar.add_task("eval", total=self.total)
        return lambda n: self.bar.advance(task, n)

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.stop()


def _print_report(report: dict) -> None:
    summary = Table(
        "samples", "ms/inference", "samples/s", "accuracy", "agreement", "SNR dB", title=report["file"]
    )
    fmt = lambda v, f: "-" if v is None else format(v, f)  # noqa: E731
    summary.add_row(
        str(report["samples"]),
        fmt(report["ms_per_inference"], ".4f"),
        fmt(report["samples_per_s"], ",.0f"),
        fmt(report.get("accuracy"), ".4f"),
        fmt(report.get("agreement"), ".4f"),
        fmt(report.get("snr_db"), ".2f"),
    )
    console.print(summary)
    est = report.get("estimate")
    if est is not None:
        ms = est["latency_ms"]
        bound = "" if est["estimate_complete"] else " (lower bound: some ops have no estimate)"
        console.print(
            f"device latency on {est['cpu']} at {est['clock_mhz']:g} MHz ({est['library']}, {est['estimate_basis']}): "
            f"min {ms['min']:.4f} / median {ms['median']:.4f} / max {ms['max']:.4f} ms over {est['samples']} "
            f"samples{bound}; shape-only bound {est['shape_only_cycles']:,} cycles",
            highlight=False,
        )
    if "confusion_matrix" not in report:
        return
    confusion = report["confusion_matrix"]
    if len(confusion) > PRINT_CLASSES:
        console.print(f"confusion matrix: {len(confusion)} classes (in --json)")
        return
    table = Table(
        "label \\ predicted", *map(str, range(len(confusion))), "samples", "accuracy", title="confusion"
    )
    for c, row in enumerate(confusion):
        per = report["per_class"][c]
        table.add_row(str(c), *map(str, row), str(per["samples"]), fmt(per["accuracy"], ".3f"))
    console.print(table)


def _plot_confusion(confusion: np.ndarray, path: Path, *, title: str) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise RefsimError("--plot needs matplotlib (a dependency of refsim)") from None
    n = confusion.shape[0]
    fig, ax = plt.subplots(figsize=(max(4, 0.5 * n + 2), max(3.5, 0.5 * n + 1.5)))
    image = ax.imshow(confusion, cmap="Blues")
    fig.colorbar(image, ax=ax)
    if n <= PRINT_CLASSES:
        top = confusion.max() or 1
        for (i, j), v in np.ndenumerate(confusion):
            ax.text(
                j, i, str(v), ha="center", va="center", fontsize=8, color="white" if v > top / 2 else "black"
            )
    ax.set_xlabel("predicted")
    ax.set_ylabel("label")
    ax.set_title(f"{title}: confusion ({int(np.trace(confusion))}/{int(confusion.sum())} correct)")
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=110)
    except OSError as exc:
        raise RefsimError(f"--plot {path}: cannot write ({exc.strerror or exc})") from None
    finally:
        plt.close(fig)
