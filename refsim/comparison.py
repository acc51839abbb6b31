"""Two programs of one network side by side on one core: `refsim compare A B`.

Each side is a loaded program (a .pte runs with ExecuTorch's semantics, a .tflite with TFLM's,
refsim/runtime/program.py) summarized the same way: its cycle estimate (refsim/runtime/estimate.py,
the CMSIS-NN profile and dispatch of its own runtime), its RAM and flash (each runtime's memory
model in refsim/memory/), and its per-op rows. The layers of the two sides are matched where the
graphs correspond: by the CMSIS-NN family of each call and its MACs, in order (difflib's longest
matching blocks), so a layer that one side splits, fuses or runs outside CMSIS-NN shows alone.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from refsim.errors import RefsimError
from refsim.runtime.program import Program


@dataclass
class Side:
    """One program's summary (the JSON ``a``/``b`` entries are `to_json`)."""

    path: str
    runtime: str
    latency_ms: float
    cycles_total: int
    estimate_complete: bool
    library: str
    ram_bytes: int | None
    flash_bytes: int | None
    macs: int
    inputs: list[tuple[list[int], str]]
    layers: list[dict] = field(default_factory=list)
    ram: list[dict] = field(default_factory=list)
    flash: list[dict] = field(default_factory=list)
    memory_note: str = ""
    #: refsim.runtime.estimate's basis: "shape only" when data-dependent rows (softmax) are priced
    #: at their bound (compare runs no inputs), "shape" when no row's work depends on the values.
    estimate_basis: str = "shape"

    def to_json(self) -> dict:
        return {
            "path": self.path,
            "runtime": self.runtime,
            "latency_ms": self.latency_ms,
            "cycles_total": self.cycles_total,
            "estimate_complete": self.estimate_complete,
            "estimate_basis": self.estimate_basis,
            "library": self.library,
            "ram_bytes": self.ram_bytes,
            "flash_bytes": self.flash_bytes,
            "macs": self.macs,
            "inputs": [{"shape": s, "dtype": d} for s, d in self.inputs],
            "breakdown": {"cycles": self.layers, "ram": self.ram, "flash": self.flash},
            **({"memory_note": self.memory_note} if self.memory_note else {}),
        }


def family(variant: str) -> str:
    """The kind of work a row's CMSIS-NN function does, for matching layers across runtimes."""
    v = variant.lower()
    for key, name in (
        ("depthwise", "depthwise"),
        ("transpose_conv", "transpose-conv"),
        ("convolve", "conv"),
        ("fully_connected", "fully-connected"),
        ("batch_matmul", "matmul"),
        ("avgpool", "avgpool"),
        ("max_pool", "maxpool"),
        ("softmax", "softmax"),
        ("elementwise_add", "add"),
        ("elementwise_mul", "mul"),
        ("pad", "pad"),
        ("transpose", "transpose"),
    ):
        if key in v:
            return name
    return "other"


def _memory(program: Program, path: Path, cpu: str) -> tuple[int | None, int | None, list, list, str]:
    """(ram, flash, ram lines, flash lines, note) from the program's runtime's memory model."""
    if program.runtime == "executorch":
        from refsim.memory.report import memory_report

        report = memory_report(program, path, "forward", cpu)
        report["note"] = ""
    else:
        from refsim.memory.tflm.budget import tflm_memory_report

        report = tflm_memory_report(program.file.file.model, path, cpu)
    lines = report["lines"]
    return (
        report["ram_total"],
        report["flash_total"],
        [ln for ln in lines if ln["section"] == "ram"],
        [ln for ln in lines if ln["section"] == "flash"],
        report["note"],
    )


def summarize(
    path: Path,
    cpu: str,
    system: str | None = None,
    clock_mhz: float | None = None,
    program: Program | None = None,
) -> Side:
    """One program's summary on one target; ``program``: ``path`` already loaded (``refsim sweep``
    estimates one loaded program on many targets; estimating leaves a program as it was)."""
    from refsim.runtime.estimate import estimate_method
    from refsim.runtime.tensor import TensorRef

    if program is None:
        program = Program.load(path)
    method = program.method()
    est = estimate_method(program, method, cpu=cpu, system=system, clock_mhz=clock_mhz)
    origins = program.file.origins if program.runtime == "tflm" else None
    layers = []
    for r in est.rows:
        name = r.name
        if r.index is not None and origins is not None:
            o = origins[r.index]
            name = f"{o.name} #{o.index}"
        layers.append(
            {
                "index": r.index,
                "name": name,
                "function": r.variant,
                "family": family(r.variant) if r.index is not None else "runtime",
                "macs": r.cost.macs,
                "cycles": round(r.cost.cycles) if r.estimated else None,
                "cmsis_nn": r.variant.startswith("arm_"),
                **({"basis": r.basis} if r.basis else {}),
            }
        )
    ram, flash, ram_lines, flash_lines, note = _memory(program, path, cpu)
    inputs = [
        (list(slot.sizes), str(slot.dtype)) if isinstance(slot, TensorRef) else ([], type(slot).__name__)
        for slot in method.inputs
    ]
    return Side(
        path=str(path),
        runtime=program.runtime,
        latency_ms=round(est.latency_ms, 6),
        cycles_total=est.cycles_total,
        estimate_complete=est.complete,
        library=est.library,
        ram_bytes=ram,
        flash_bytes=flash,
        macs=est.total.macs,
        inputs=inputs,
        layers=layers,
        ram=ram_lines,
        flash=flash_lines,
        memory_note=note,
        estimate_basis=est.basis,
    )


def match_layers(a: Side, b: Side) -> list[tuple[dict | None, dict | None]]:
    """Pairs of per-op rows (a row alone where the other side has no counterpart), in order."""
    ra = [r for r in a.layers if r["index"] is not None]
    rb = [r for r in b.layers if r["index"] is not None]
    keys_a = [(r["family"], r["macs"]) for r in ra]
    keys_b = [(r["family"], r["macs"]) for r in rb]
    pairs: list[tuple[dict | None, dict | None]] = []
    i = j = 0
    for block in difflib.SequenceMatcher(a=keys_a, b=keys_b, autojunk=False).get_matching_blocks():
        pairs += _gap(ra[i : block.a], rb[j : block.b])
        matched = zip(ra[block.a : block.a + block.size], rb[block.b : block.b + block.size], strict=True)
        pairs += list(matched)
        i, j = block.a + block.size, block.b + block.size
    return pairs


def _gap(ra: list[dict], rb: list[dict]) -> list[tuple[dict | None, dict | None]]:
    """Rows between two matched blocks: a layer each runtime computes with another CMSIS-NN
    family (a one-channel conv that ExecuTorch lowers as a depthwise) still pairs when the MACs
    agree, in order; the rest stand alone."""
    out: list[tuple[dict | None, dict | None]] = []
    j = 0
    for r in ra:
        k = next((n for n in range(j, len(rb)) if r["macs"] and rb[n]["macs"] == r["macs"]), None)
        if k is None:
            out.append((r, None))
            continue
        out += [(None, x) for x in rb[j:k]] + [(r, rb[k])]
        j = k + 1
    return out + [(None, x) for x in rb[j:]]


def warnings_for(a: Side, b: Side) -> list[str]:
    """What makes the two programs look like different networks (shown, never silent)."""
    out = []
    if len(a.inputs) != len(b.inputs):
        out.append(f"the programs take {len(a.inputs)} and {len(b.inputs)} inputs: not the same network?")
    for k, ((sa, da), (sb, db)) in enumerate(zip(a.inputs, b.inputs, strict=False)):
        if sa != sb and sorted(sa) == sorted(sb):
            out.append(f"input{k}: shapes {sa} and {sb} hold the same elements in another layout")
        elif sa != sb:
            out.append(f"input{k}: shapes {sa} and {sb} differ: not the same network?")
        if da != db:
            out.append(f"input{k}: dtypes {da} and {db} differ")
    if a.macs and b.macs and abs(a.macs - b.macs) > 0.05 * max(a.macs, b.macs):
        out.append(f"MACs differ by more than 5% ({a.macs:,} vs {b.macs:,}): not the same network?")
    return out


def percent(a: float | None, b: float | None) -> float | None:
    """B relative to A in % (positive: B is larger)."""
    if a is None or b is None or a == 0:
        return None
    return round(100.0 * (b - a) / a, 2)


def compare(
    path_a: Path, path_b: Path, cpu: str, system: str | None = None, clock_mhz: float | None = None
) -> dict[str, Any]:
    """The comparison report (JSON-ready): ``a``, ``b``, ``diff`` per total, ``layers``, ``warnings``."""
    if path_a.resolve() == path_b.resolve():
        raise RefsimError(f"compare: A and B are the same file ({path_a})")
    a = summarize(path_a, cpu, system, clock_mhz)
    b = summarize(path_b, cpu, system, clock_mhz)
    diff = {}
    for key in ("latency_ms", "cycles_total", "ram_bytes", "flash_bytes"):
        va, vb = getattr(a, key), getattr(b, key)
        winner = None if va is None or vb is None or va == vb else ("a" if va < vb else "b")
        diff[key] = {"b_vs_a_percent": percent(va, vb), "smaller": winner}
    layers = [
        {
            "a": None if ra is None else {k: ra[k] for k in ("index", "name", "function", "macs", "cycles")},
            "b": None if rb is None else {k: rb[k] for k in ("index", "name", "function", "macs", "cycles")},
        }
        for ra, rb in match_layers(a, b)
    ]
    return {
        "cpu": cpu,
        "system": system,
        "a": a.to_json(),
        "b": b.to_json(),
        "diff": diff,
        "layers": layers,
        "outside_cmsis_nn": {
            "a": [r["name"] for r in a.layers if r["index"] is not None and not r["cmsis_nn"]],
            "b": [r["name"] for r in b.layers if r["index"] is not None and not r["cmsis_nn"]],
        },
        "warnings": warnings_for(a, b),
    }
