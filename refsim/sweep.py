"""Design-space sweeps: models × cores × systems × clocks, each estimated as `refsim compare` does.

    refsim sweep kws.pte vww.tflite --cpus cortex-m4,cortex-m55 --budget-ram 256KiB --budget-ms 50

One task per (model, core, system preset, clock): :func:`estimate_task` loads the model once per
worker and summarizes it with :func:`refsim.comparison.summarize`, the function `refsim compare`
reports from: the cycle estimate of ``refsim run --estimate-cycles`` (refsim/runtime/estimate.py,
each runtime's CMSIS-NN build and dispatch), the RAM and flash of ``refsim inspect --memory``
(refsim/memory/: ExecuTorch's for a .pte, TFLM's for a .tflite), and per-op rows whose CMSIS-NN
functions give the coverage. Nothing here prices or sizes anything itself.

A target: a core and one of its presets (isa_models/cortex_m/systems.py); a core named without a
system gets its ideal one (``ideal-m4``: zero wait states at the preset's clock), as ``run`` and
``compare`` do; ``--systems all`` takes every preset of each core. ``--clock-mhz`` lists override
the preset's clock (latency scales; cycles and wait states stay the preset's).

Each result is cached under a content key (:func:`task_key`): the model's bytes, the core, the
whole preset (every field), the clock, and the estimator's fingerprint (:func:`fingerprint`:
refsim's version and a hash of the code and data the estimate reads, calibration files included).
The tasks run on refsim/engine.py (in process, a process pool, or Ray) and each result is cached
as it finishes, so a re-run computes only new combinations and an interrupted sweep resumes.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from refsim.engine import Task, content_key
from refsim.errors import USER_ERRORS, RefsimError


class SweepError(RefsimError):
    """A sweep argument is wrong (the message names the option and what it expected)."""


# -- arguments ---------------------------------------------------------------------------------

_SIZE_UNITS = {"": 1, "b": 1, "k": 1024, "kib": 1024, "kb": 1000, "m": 1024**2, "mib": 1024**2, "mb": 10**6}


def parse_size(text: str, option: str = "--budget-ram") -> int:
    """Bytes from ``262144``, ``256KiB``, ``256K`` (KiB), ``256kB`` (1000 B), ``1.5MiB``, ``2MB``."""
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?)\s*([a-zA-Z]*)\s*", text)
    unit = match.group(2).lower() if match else ""
    if match is None or unit not in _SIZE_UNITS:
        raise SweepError(f"{option}: expected a size such as 256KiB, 256kB, 1.5MiB or 262144, got {text!r}")
    value = float(match.group(1)) * _SIZE_UNITS[unit]
    if value <= 0:
        raise SweepError(f"{option}: must be positive, got {text!r}")
    return int(value)


def parse_ms(text: str, option: str = "--budget-ms") -> float:
    """Milliseconds from ``50``, ``50ms``, ``0.05s``, ``500us``."""
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?)\s*(ms|s|us|µs)?\s*", text)
    if match is None or float(match.group(1)) <= 0:
        raise SweepError(f"{option}: expected a positive time such as 50, 50ms or 0.05s, got {text!r}")
    scale = {None: 1.0, "ms": 1.0, "s": 1e3, "us": 1e-3, "µs": 1e-3}[match.group(2)]
    return float(match.group(1)) * scale


def split_list(text: str | None) -> list[str]:
    """``a,b, c`` -> [a, b, c] (empty items dropped, order kept, duplicates once)."""
    if text is None:
        return []
    return list(dict.fromkeys(x.strip() for x in text.split(",") if x.strip()))


def parse_clocks(text: str | None) -> list[float | None]:
    """``--clock-mhz 80,160`` -> [80.0, 160.0]; none given -> [None] (each preset's own clock)."""
    clocks: list[float | None] = []
    for item in split_list(text):
        try:
            value = float(item)
        except ValueError:
            value = -1.0
        if not value > 0:
            raise SweepError(f"--clock-mhz: expected positive numbers (MHz), got {item!r}")
        clocks.append(value)
    return clocks or [None]


@dataclass(frozen=True)
class Model:
    """A model file of the sweep: the path as given, its content hash and front door."""

    path: Path
    sha256: str
    format: str  # "pte" or "tflite" (refsim/formats.py: by file identifier, never by name)

    @property
    def suffix(self) -> str:
        return ".tflite" if self.format == "tflite" else ".pte"


def read_models(paths: list[Path]) -> tuple[list[Model], dict[str, bytes]]:
    """The models and their bytes by hash (the engine's shared values); one line per bad file."""
    from refsim.formats import model_format

    if not paths:
        raise SweepError("sweep: name at least one model (.pte or .tflite)")
    models, blobs = [], {}
    for path in paths:
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise SweepError(f"{path}: no such file") from None
        except OSError as exc:
            raise SweepError(f"{path}: cannot read ({exc.strerror or exc})") from None
        fmt = model_format(data)
        if fmt is None:
            raise SweepError(f"{path}: neither an ExecuTorch .pte (ET12) nor a .tflite (TFL3) model")
        sha = hashlib.sha256(data).hexdigest()
        models.append(Model(path, sha, fmt))
        blobs[sha] = data
    return models, blobs


def targets(cpus: list[str], systems: list[str]) -> list[tuple[str, str]]:
    """(core, preset name) pairs, in the order given: each core's presets named by ``--systems``
    (``all``: every preset of the core), else its ideal system; a preset whose core is not among
    ``--cpus`` is refused; ``--systems`` alone names its cores."""
    from isa_models.cortex_m.cores import CORE_MODELS, get_core_model
    from isa_models.cortex_m.systems import get_system, systems_for

    if cpus == ["all"]:
        cpus = list(CORE_MODELS)
    cores = [get_core_model(c).name for c in cpus]  # unknown core: one line naming the valid ones
    every = systems == ["all"]
    if every and not cores:
        raise SweepError("--systems all: name the cores with --cpus (or --cpus all)")
    presets = [] if every else [get_system(s) for s in systems]
    if not cores:
        cores = list(dict.fromkeys(p.core for p in presets))
    for p in presets:
        if p.core not in cores:
            raise SweepError(f"--systems {p.name} has a {p.core}, not one of --cpus {', '.join(cores)}")
    if not cores:
        raise SweepError(
            "sweep: name the cores with --cpus (e.g. cortex-m4,cortex-m55) or presets with --systems"
        )
    out = []
    for core in cores:
        mine = list(systems_for(core)) if every else [p for p in presets if p.core == core]
        names = [p.name for p in mine] or [f"ideal-{core.removeprefix('cortex-')}"]
        out += [(core, name) for name in names]
    return out


# -- cache keys --------------------------------------------------------------------------------

_FINGERPRINT: str | None = None
#: Top-level folders of the packages that no estimate imports or reads (checked by the tests).
_NOT_ESTIMATOR = frozenset({"commands", "lab", "conformance"})


def fingerprint() -> str:
    """The estimator's identity: refsim's version and a hash of every .py and .json file of the
    packages an estimate reads (refsim, isa_models with its calibration files, kernels_py), less
    the parts no estimate imports or reads (the commands' printing, the lab, conformance), so a
    change of a table's layout keeps the cache."""
    global _FINGERPRINT
    if _FINGERPRINT is None:
        import isa_models
        import kernels_py
        import refsim

        h = hashlib.sha256(f"refsim {refsim.__version__}".encode())
        for package in (refsim, isa_models, kernels_py):
            root = Path(package.__file__).parent
            files = sorted(
                p
                for ext in ("*.py", "*.json")
                for p in root.rglob(ext)
                if "__pycache__" not in p.parts and p.relative_to(root).parts[0] not in _NOT_ESTIMATOR
            )
            for p in files:
                h.update(f"\0{package.__name__}/{p.relative_to(root).as_posix()}\0".encode())
                h.update(p.read_bytes())
        _FINGERPRINT = f"{refsim.__version__}+{h.hexdigest()[:16]}"
    return _FINGERPRINT


def task_key(model_sha: str, cpu: str, system: str, clock_mhz: float | None, estimator: str) -> str:
    """The content key of one estimate (module docstring): the preset enters with every field."""
    from isa_models.cortex_m.systems import get_system

    preset = asdict(get_system(system))
    return content_key("sweep/1", model_sha, cpu, preset, clock_mhz, estimator)


def make_tasks(models: list[Model], pairs: list[tuple[str, str]], clocks: list[float | None]) -> list[Task]:
    """One :class:`~refsim.engine.Task` per combination, models outermost, in the order given."""
    estimator = fingerprint()
    return [
        Task(
            key=task_key(m.sha256, cpu, system, clock, estimator),
            payload={
                "path": str(m.path),
                "model": m.sha256,
                "suffix": m.suffix,
                "cpu": cpu,
                "system": system,
                "clock_mhz": clock,
                "estimator": estimator,
            },
            needs=(m.sha256,),
        )
        for m in models
        for cpu, system in pairs
        for clock in clocks
    ]


# -- the task (runs in a worker) ---------------------------------------------------------------

_LOADED: dict[str, tuple[Any, Path]] = {}  # model hash -> (Program, its file), a few per worker
_WORKDIR: list[str] = []


def _loaded(sha: str, suffix: str, data: bytes) -> tuple[Any, Path]:
    """The program of ``data``, loaded once per worker. The memory models read the file (its size,
    TFLM's operator list), so the bytes go to a file of this worker first."""
    from refsim.runtime.program import Program

    if sha not in _LOADED:
        if not _WORKDIR:
            import atexit
            import shutil

            _WORKDIR.append(tempfile.mkdtemp(prefix="refsim-sweep-"))
            atexit.register(shutil.rmtree, _WORKDIR[0], True)
        path = Path(_WORKDIR[0]) / f"{sha}{suffix}"
        path.write_bytes(data)
        if len(_LOADED) >= 4:
            _LOADED.pop(next(iter(_LOADED)))
        _LOADED[sha] = (Program.load(path), path)
    return _LOADED[sha]


def estimate_task(payload: dict, blobs: dict[str, bytes]) -> dict:
    """One combination's totals (JSON-ready); a target the model cannot run on gives ``error``."""
    from refsim.comparison import summarize

    if payload["estimator"] != fingerprint():  # a cluster node with another refsim: its keys lie
        raise SweepError(
            f"worker {os.uname().nodename} runs refsim {fingerprint()}, the sweep expects "
            f"{payload['estimator']}: install the same refsim on every node"
        )
    program, path = _loaded(payload["model"], payload["suffix"], blobs[payload["model"]])
    try:
        side = summarize(path, payload["cpu"], payload["system"], payload["clock_mhz"], program=program)
    except USER_ERRORS as exc:
        return {"runtime": program.runtime, "error": str(exc)}
    calls = [r for r in side.layers if r["index"] is not None]
    macs = sum(r["macs"] for r in calls)
    cmsis_macs = sum(r["macs"] for r in calls if r["cmsis_nn"])
    return {
        "runtime": side.runtime,
        "library": side.library,
        "latency_ms": side.latency_ms,
        "cycles_total": side.cycles_total,
        "estimate_complete": side.estimate_complete,
        "estimate_basis": side.estimate_basis,  # "shape only" where a row's work depends on data
        "ram_bytes": side.ram_bytes,
        "flash_bytes": side.flash_bytes,
        "macs": side.macs,
        "ops": len(calls),
        "cmsis_nn_ops": sum(1 for r in calls if r["cmsis_nn"]),
        "cmsis_nn_macs_percent": round(100.0 * cmsis_macs / macs, 2) if macs else None,
        "memory_note": side.memory_note or None,
        "error": None,
    }


# -- rows --------------------------------------------------------------------------------------

#: The columns of a result row (CSV/parquet order).
ROW_FIELDS = (
    "model", "model_sha256", "runtime", "cpu", "system", "clock_mhz", "latency_ms", "cycles_total",
    "estimate_complete", "estimate_basis", "ram_bytes", "flash_bytes", "macs", "ops", "cmsis_nn_ops",
    "cmsis_nn_macs_percent", "library", "meets_ram", "meets_latency", "meets_budget", "pareto",
    "memory_note", "error",
)  # fmt: skip


def make_rows(
    tasks: list[Task],
    results: dict[str, dict],
    budget_ram: int | None,
    budget_ms: float | None,
) -> list[dict]:
    """The result rows in task order (so the same sweep gives the same bytes, whatever finished
    first), with the budget verdicts and each model's Pareto front (latency vs RAM)."""
    from isa_models.cortex_m.systems import get_system

    rows = []
    for task in tasks:
        p = task.payload
        r = results[task.key]
        clock = p["clock_mhz"] if p["clock_mhz"] is not None else float(get_system(p["system"]).clock_mhz)
        row = dict.fromkeys(ROW_FIELDS)
        row.update(
            model=p["path"], model_sha256=p["model"], cpu=p["cpu"], system=p["system"], clock_mhz=clock
        )
        row.update({k: v for k, v in r.items() if k in ROW_FIELDS})
        _budget(row, budget_ram, budget_ms)
        rows.append(row)
    _pareto(rows)
    return rows


def _budget(row: dict, budget_ram: int | None, budget_ms: float | None) -> None:
    """meets_ram / meets_latency: True, False, or None (no budget, no estimate; a latency that is
    a lower bound meets nothing for sure, though it can fail); meets_budget: both known True."""
    if row["error"] is not None:
        row.update(meets_ram=None, meets_latency=None, meets_budget=False)
        return
    if budget_ram is not None and row["ram_bytes"] is not None:
        row["meets_ram"] = row["ram_bytes"] <= budget_ram
    if budget_ms is not None:
        fits = row["latency_ms"] <= budget_ms
        row["meets_latency"] = fits if row["estimate_complete"] or not fits else None
    wanted = [row[k] for k, b in (("meets_ram", budget_ram), ("meets_latency", budget_ms)) if b is not None]
    row["meets_budget"] = bool(wanted) and all(v is True for v in wanted)


def _pareto(rows: list[dict]) -> None:
    """``pareto``: no other complete estimate of the same model is at most as slow and as large
    and better in one (equal points are both on the front)."""
    for row in rows:
        row["pareto"] = False
    ok = [r for r in rows if r["error"] is None and r["estimate_complete"] and r["ram_bytes"] is not None]
    for row in ok:
        row["pareto"] = not any(
            o["model"] == row["model"]
            and o["latency_ms"] <= row["latency_ms"]
            and o["ram_bytes"] <= row["ram_bytes"]
            and (o["latency_ms"], o["ram_bytes"]) != (row["latency_ms"], row["ram_bytes"])
            for o in ok
        )


def report(rows: list[dict], budget_ram: int | None, budget_ms: float | None) -> dict:
    """The JSON document of ``--out x.json``: no time nor host in it, so runs compare byte for byte."""
    import refsim

    return {
        "refsim": refsim.__version__,
        "estimator": fingerprint(),
        "budgets": {"ram_bytes": budget_ram, "latency_ms": budget_ms},
        "rows": rows,
    }


OUT_FORMATS = (".json", ".csv", ".parquet")


def check_out(path: Path | None) -> None:
    """Refuse an output the sweep could not write before any estimate runs."""
    if path is None:
        return
    if path.suffix.lower() not in OUT_FORMATS:
        raise SweepError(f"--out {path}: expected a .json, .csv or .parquet file")
    if path.suffix.lower() == ".parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise SweepError("--out .parquet needs pyarrow: pip install pyarrow") from None


def write_out(doc: dict, path: Path) -> None:
    import json

    suffix = path.suffix.lower()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if suffix == ".json":
            path.write_text(json.dumps(doc, indent=2) + "\n")
        elif suffix == ".csv":
            import csv

            with path.open("w", newline="") as f:
                writer = csv.DictWriter(f, fieldnames=ROW_FIELDS, lineterminator="\n")
                writer.writeheader()
                writer.writerows(doc["rows"])
        else:
            import pyarrow as pa
            import pyarrow.parquet as pq

            table = pa.Table.from_pylist(doc["rows"])
            table = table.replace_schema_metadata({"refsim": doc["refsim"], "estimator": doc["estimator"],
                                                   "budgets": json.dumps(doc["budgets"])})  # fmt: skip
            pq.write_table(table, path)
    except OSError as exc:
        raise SweepError(f"--out {path}: cannot write ({exc.strerror or exc})") from None


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/refsim/sweep``, else ``~/.cache/refsim/sweep``."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "refsim" / "sweep"


__all__ = [
    "ROW_FIELDS",
    "Model",
    "SweepError",
    "check_out",
    "default_cache_dir",
    "estimate_task",
    "fingerprint",
    "make_rows",
    "make_tasks",
    "parse_clocks",
    "parse_ms",
    "parse_size",
    "read_models",
    "report",
    "split_list",
    "targets",
    "task_key",
    "write_out",
]
