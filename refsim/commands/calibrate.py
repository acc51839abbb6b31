"""``refsim calibrate``: measure the designed shape sweep of every CMSIS-NN function on every core
and fit the Cortex-M cost formulas (isa_models.cortex_m), writing
``isa_models/cortex_m/calibration/<library>/<core>.json``.

    refsim calibrate                                   # kernels_c, every core
    refsim calibrate --kernels-dir ~/CMSIS-NN --library cmsis-nn --cpu cortex-m55
    refsim calibrate --kernels-dir ~/CMSIS-NN-4ab83cc3 --profile tflm --cpu cortex-m4   # -> cmsis-nn-tflm/

A ``--profile`` is how a runtime builds the library (refsim.qemu.library.BuildProfile):
``cmake`` (default) is CMSIS-NN's own CMake project at -Ofast, which ExecuTorch links unchanged;
``tflm`` is TFLM's Makefile build of CMSIS-NN (-O2 and TFLM's flags,
refsim.lab.tflm.build.cmsis_nn_profile), calibrated as library ``cmsis-nn-tflm``.

The sweep is each formula family's own (``isa_models.cortex_m.<family>.sweep``,
:func:`isa_models.cortex_m.formulas.sweep`): shapes chosen per routing variant so each feature
varies independently, with real MLPerf Tiny layers among them. Every fourth shape of each
variant is held out: it is measured and stored but never fitted, and the file's ``error`` is the
formula's relative error on those shapes.

Measurement: ``refsim.qemu.timing.time_cases`` (executed instructions and instruction-timed
cycles, one QEMU start per batch) when available; otherwise executed instructions from
``refsim.qemu.counting`` with cycles = instructions (CPI 1), recorded as such in the file's
``provenance.cycles_source`` so no one mistakes it for a cycle measurement.
"""

from __future__ import annotations

import datetime
import functools
import hashlib
import json
import shlex
import subprocess
import sys
import zlib
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer
from rich.table import Table

from refsim.cli import app, console
from refsim.errors import RefsimError

#: ``--library-commit``: what the checkout is (a copy without .git cannot say), for provenance.
LIBRARY_COMMIT: ContextVar[str] = ContextVar("refsim_calibrate_library_commit", default="")

HELD_OUT_EVERY = 4
MAX_BATCH_BYTES = 1_500_000
CPI1_SOURCE = "instruction counts (CPI 1): placeholder until instruction-timed cycles (refsim.qemu.timing)"
TIMED_SOURCE = "refsim.qemu.timing.time_cases (QEMU block counts x llvm-mca + TRM penalties)"

#: Scalar parameters every sweep shape gets unless it sets them (offsets and ranges typical of
#: int8 layers; they do not change the executed path).
DEFAULTS: dict[str, int] = {
    "input_offset": 128,
    "output_offset": -128,
    "filter_offset": 0,
    "activation.min": -128,
    "activation.max": 127,
    "multiplier": 1 << 30,
    "shift": -8,
    "input_1_offset": 3,
    "input_2_offset": -5,
    "input_1_mult": 1 << 30,
    "input_2_mult": 1 << 30,
    "input_1_shift": -1,
    "input_2_shift": -1,
    "left_shift": 20,
    "out_offset": 0,
    "out_mult": 1 << 30,
    "out_shift": -8,
    "out_activation_min": -128,
    "out_activation_max": 127,
    "lhs_offset": 128,
    "rhs_offset": 0,
    "pad_value": 0,
    "ch_mult": 1,
    "padding_offsets.h": 0,
    "padding_offsets.w": 0,
    "fc_params.input_offset": 128,
    "fc_params.filter_offset": 0,
    "fc_params.output_offset": -128,
    "fc_params.activation.min": -128,
    "fc_params.activation.max": 127,
    "dilation.h": 1,
    "dilation.w": 1,
    "ctx.size": -1,
    "adj_x": 0,
    "adj_y": 0,
}
#: arm_softmax_s8's mult, shift, diff_min for beta 1 and input scale 1/16.
SOFTMAX_DEFAULTS: dict[str, int] = {"mult": 1 << 30, "shift": 23, "diff_min": -248}


def _n(p: Mapping[str, int], prefix: str) -> int:
    return int(np.prod([int(p.get(f"{prefix}.{k}", 1)) for k in "nhwc"]))


def _array_sizes(function: str, p: Mapping[str, int]) -> dict[str, int]:
    """Element counts of a call's arrays, from its params (VECTORS.md layouts)."""
    if function.startswith(("arm_convolve", "arm_transpose_conv", "arm_depthwise")):
        oc = int(p["output_dims.c"])
        return {"input": _n(p, "input_dims"), "filter": _n(p, "filter_dims"), "bias": oc, "multiplier": oc,
                "shift": oc}  # fmt: skip
    if function.startswith("arm_fully_connected"):
        n, k, c = int(p["input_dims.n"]), int(p["filter_dims.n"]), int(p["output_dims.c"])
        return {"input": n * k, "filter": k * c, "bias": c, "multiplier": c, "shift": c}
    if function == "arm_batch_matmul_s8":
        return {"input_lhs": _n(p, "input_lhs_dims"), "input_rhs": _n(p, "input_rhs_dims")}
    if function == "arm_vector_sum_s8":
        return {
            "vector_data": int(p["vector_rows"]) * int(p["vector_cols"]),
            "bias_data": int(p["vector_rows"]),
        }
    if function.startswith(("arm_avgpool", "arm_max_pool")):
        return {"input": _n(p, "input_dims")}
    if function.startswith("arm_elementwise"):
        return {"input_1": int(p["block_size"]), "input_2": int(p["block_size"])}
    if function in ("arm_maximum_s8", "arm_minimum_s8"):
        return {"input_1": _n(p, "input_1_dims"), "input_2": _n(p, "input_2_dims")}
    if function == "arm_softmax_s8":
        return {"input": int(p["num_rows"]) * int(p["row_size"])}
    if function == "arm_relu6_s8":
        return {"input": int(p["size"])}
    if function == "refsim_lut_s8":
        return {"input": int(p["size"]), "table": 256}
    if function == "arm_pad_s8":
        return {"input": _n(p, "input_size")}
    if function == "arm_transpose_s8":
        return {"input": _n(p, "input_dims")}
    raise RefsimError(f"calibrate: no array layout known for {function}")


def make_case(function: str, shape: Mapping[str, int], rng: np.random.Generator):
    """A harness case for ``function`` with ``shape``'s params, defaults for the rest, random data."""
    from refsim.qemu import batch

    spec = batch.FUNCTIONS[function]
    merged = {**DEFAULTS, **shape}
    if function == "arm_softmax_s8":  # beta 1, input scale 1/16 (kernels_py.softmax.softmax_params)
        merged = {**DEFAULTS, **SOFTMAX_DEFAULTS, **shape}  # a shape may set its own diff_min
    params = {}
    for name in spec.params:
        if name not in merged:
            raise RefsimError(f"calibrate: the {function} sweep shape lacks {name!r}")
        params[name] = int(merged[name])
    sizes = _array_sizes(function, shape)
    arrays: dict[str, np.ndarray] = {}
    for array in spec.arrays:
        count = sizes[array.name]
        if array.optional and array.name in ("bias", "bias_data") and shape.get("bias_is_null"):
            arrays[array.name] = np.zeros(0, array.dtype)  # passed to the kernel as NULL
        elif array.dtype == np.dtype(np.int8):
            arrays[array.name] = rng.integers(-128, 128, count, dtype=np.int16).astype(np.int8)
        elif array.name == "multiplier":
            arrays[array.name] = np.full(count, 1 << 30, np.int32)
        elif array.name == "shift":
            arrays[array.name] = np.full(count, -8, np.int32)
        else:
            arrays[array.name] = rng.integers(-1000, 1000, count, dtype=np.int32)
    return batch.Case(function, params, arrays, "default")


def feature_params(function: str, shape: Mapping[str, int], case) -> dict[str, int]:
    """The params a sweep shape's features are computed from: the shape, plus the counts of its
    data-dependent work on the case's own data (refsim.ops.data_work: softmax's exponentials),
    as the golden kernels count them. Shapes of functions whose work the shape decides: as given."""
    from refsim.ops.data_work import call_counts

    return {**shape, **call_counts(function, case.params, case.arrays)}


def sweep_case(function: str, shape: Mapping[str, int], seed: int = 0):
    """The harness case of a sweep shape, its data drawn from a generator seeded by the shape
    itself, so a case (and its data-dependent counts) does not depend on the other shapes swept."""
    return make_case(function, shape, np.random.default_rng([seed, _shape_seed(function, shape)]))


def _case_bytes(case) -> int:
    return sum(a.nbytes for a in case.arrays.values()) + 4 * len(case.params)


def _batches(cases: Sequence[Any]) -> list[list[int]]:
    groups: list[list[int]] = [[]]
    size = 0
    for i, case in enumerate(cases):
        b = _case_bytes(case)
        if groups[-1] and size + b > MAX_BATCH_BYTES:
            groups.append([])
            size = 0
        groups[-1].append(i)
        size += b
    return groups


Measure = Callable[[Sequence[Any]], list[tuple[int, int]]]


def measurer(core: str, harness: Any | None) -> tuple[Measure, str]:
    """How to measure on ``core``: instruction-timed cycles when refsim.qemu.timing exists,
    else instruction counts with cycles = instructions (the source string says which)."""
    try:
        from refsim.qemu.timing import time_cases
    except ImportError:
        time_cases = None
    if time_cases is not None:

        def timed(cases: Sequence[Any]) -> list[tuple[int, int]]:
            return [
                (t.instructions, t.cycles) for t in time_cases(core, cases, harness=harness, timeout=300.0)
            ]

        return timed, TIMED_SOURCE
    from refsim.qemu.counting import count_instructions

    def counted(cases: Sequence[Any]) -> list[tuple[int, int]]:
        return [(c.total, c.total) for c in count_instructions(core, cases, harness=harness, timeout=300.0)]

    return counted, CPI1_SOURCE


def sweep_calls(
    tier: str, only: Sequence[str] | None = None, library: str | None = None, core: str | None = None
) -> list[tuple[str, str, dict[str, int], bool]]:
    """(public function, formula key, shape, held out) for every sweep shape, narrowed to
    ``only`` (formula keys, public functions or family names), with ``core``'s features.

    Every :data:`HELD_OUT_EVERY`-th shape of a key is held out, unless it is the only shape that
    exercises one of the key's features (then the next shape is tried): the fit must see every
    feature at least once, or its coefficient would be a guess."""
    from isa_models.cortex_m import formulas

    chosen: dict[str, list[tuple[str, dict[str, int]]]] = {}
    for name in formulas.FAMILY_NAMES:
        for function, shape in formulas.sweep(name, library, tier):
            key = formulas.route(function, shape, tier)
            if only and not ({key, key.split("/")[0], function, name} & set(only)):
                continue
            chosen.setdefault(key, []).append((function, shape))
    rows = []
    for key, calls in chosen.items():
        formula = formulas.FORMULAS[key]
        features = [
            formula.features_for(library, core)(
                feature_params(function, shape, sweep_case(function, shape)) if formula.data else shape, tier
            )
            for function, shape in calls
        ]
        held: set[int] = set()
        want = len(calls) // HELD_OUT_EVERY
        for i in [*range(HELD_OUT_EVERY - 1, len(calls), HELD_OUT_EVERY), *range(len(calls))]:
            if len(held) >= want or i in held:
                continue
            rest = [f for j, f in enumerate(features) if j != i and j not in held]
            if all(any(r.get(name, 0) for r in rest) for name, v in features[i].items() if v):
                held.add(i)
        rows += [(f, key, shape, i in held) for i, (f, shape) in enumerate(calls)]
    return rows


def _version(command: list[str]) -> str:
    try:
        out = subprocess.run(command, capture_output=True, text=True, timeout=20)
        return (out.stdout or out.stderr).splitlines()[0].strip()
    except (OSError, subprocess.SubprocessError, IndexError):
        return "unavailable"


def _flags(kernels_dir: Path | None, core: Any, common: Sequence[str]) -> str:
    """The compiler flags of the measured code: a CMake library is built by its own project
    (CMAKE_C_FLAGS = the core's flags + refsim.qemu.library.LIBRARY_CFLAGS, its own -O level)."""
    if kernels_dir is not None and (kernels_dir / "CMakeLists.txt").is_file():
        from refsim.qemu.library import LIBRARY_CFLAGS

        return (
            " ".join((*core.gcc_flags, *LIBRARY_CFLAGS))
            + " + the library's own CMake options (-Ofast for CMSIS-NN)"
        )
    return " ".join((*common, *core.gcc_flags))


def _tree_hash(root: Path, patterns: Sequence[str]) -> str:
    h = hashlib.sha256()
    for pattern in patterns:
        for path in sorted(root.glob(pattern)):
            if path.is_file():
                h.update(str(path.relative_to(root)).encode())
                h.update(path.read_bytes())
    return h.hexdigest()[:16]


def build_profile(name: str):
    """The :class:`refsim.qemu.library.BuildProfile` called ``name`` (``cmake`` or ``tflm``)."""
    from refsim.qemu.library import DEFAULT_PROFILE

    if name == DEFAULT_PROFILE.name:
        return DEFAULT_PROFILE
    if name == "tflm":
        from refsim.lab.tflm.build import cmsis_nn_profile

        return cmsis_nn_profile()
    raise RefsimError(f"--profile {name!r}: expected cmake (CMSIS-NN's own CMake, ExecuTorch) or tflm")


#: The calibration library a profile writes by default.
PROFILE_LIBRARY = {"cmake": "cmsis-nn", "tflm": "cmsis-nn-tflm"}


def provenance(
    library: str,
    kernels_dir: Path | None,
    core: Any,
    cycles_source: str,
    argv: Sequence[str],
    *,
    mcpu: str = "",
    profile: Any = None,
) -> dict:
    from refsim.qemu.build import KERNELS_C
    from refsim.qemu.cores import COMMON_CFLAGS
    from refsim.qemu.library import LIBRARY_CFLAGS
    from refsim.qemu.toolchain import find_toolchain

    toolchain = find_toolchain()
    if kernels_dir is not None:
        commit = _version(["git", "-C", str(kernels_dir), "rev-parse", "HEAD"])
        if not commit or commit == "unavailable" or "fatal" in commit:
            commit = "sources " + _tree_hash(kernels_dir, ("Source/**/*.c", "Include/**/*.h"))
        if LIBRARY_COMMIT.get():
            commit = f"{LIBRARY_COMMIT.get()} ({commit})"
    else:
        commit = "kernels_c sources " + _tree_hash(KERNELS_C, ("src/**/*.c", "src/**/*.h", "harness/*.[ch]"))
    return {
        "library": library,
        "library_commit": commit,
        "gcc": _version([str(toolchain.gcc), "--version"]),
        "qemu": _version([str(toolchain.qemu), "--version"]),
        "llvm_mca": _version(["llvm-mca-19", "--version"]) if cycles_source == TIMED_SOURCE else "not used",
        "flags": " ".join((*COMMON_CFLAGS, *core.gcc_flags))
        + (f" (code built with -mcpu={mcpu})" if mcpu else ""),
        "command": "refsim calibrate " + " ".join(shlex.quote(a) for a in argv),
        "date": datetime.date.today().isoformat(),
        "cycles_source": cycles_source,
        **(
            {
                "build_profile": profile.name,
                "build_profile_source": profile.description,
                "library_flags": " ".join((*core.gcc_flags, *LIBRARY_CFLAGS, *profile.c_flags))
                + " "
                + " ".join(f"-D{o}" for o in profile.cmake_options),
            }
            if profile is not None and kernels_dir is not None
            else {}
        ),
    }


@dataclass(frozen=True)
class CorePlan:
    """One core's calibration before measuring: what to run, batched, and how it will be measured."""

    model: Any
    qcore: Any
    library: str
    kernels_dir: Path | None
    profile: Any
    seed: int
    rows: list[tuple[str, str, dict[str, int], bool]]
    groups: list[list[int]]
    source: str


def plan_core(
    core_name: str,
    *,
    library: str,
    kernels_dir: Path | None,
    only: Sequence[str] | None,
    seed: int = 0,
    profile: Any = None,
) -> CorePlan:
    """The sweep rows of ``core_name`` and their QEMU batches (the library's harness is built here:
    its defined functions narrow the rows)."""
    from isa_models.cortex_m.cores import get_core_model
    from isa_models.errors import IsaModelError

    try:
        model = get_core_model(core_name)
    except IsaModelError as exc:
        raise RefsimError(str(exc)) from None
    qcore = _qemu_core(model)
    harness, available = _harness(model.name, _dir_key(kernels_dir), _profile_key(profile))
    _measure, source = measurer(model.name, harness)
    rows = sweep_calls(model.tier, only, library, model.name)
    if available is not None:  # a library measures the functions it has (refsim_lut_s8 is ours)
        rows = [r for r in rows if r[0] in available]
    if not rows:
        raise RefsimError(f"calibrate: no sweep shapes match {', '.join(only or [])}")
    cases = [sweep_case(function, shape, seed) for function, _key, shape, _held in rows]
    return CorePlan(model, qcore, library, kernels_dir, profile, seed, rows, _batches(cases), source)


def _dir_key(kernels_dir: Path | None) -> str | None:
    return None if kernels_dir is None else str(Path(kernels_dir).resolve())


def _profile_key(profile: Any) -> str | None:
    return None if profile is None else profile.name


@functools.lru_cache(maxsize=16)
def _harness(core_name: str, kernels_dir: str | None, profile: str | None) -> tuple[Any, Any]:
    """The library's harness for the core (built, or found in this node's cache) and its defined
    functions; (None, None) for kernels_c (the measurer builds it). Once per process."""
    if kernels_dir is None:
        return None, None
    from isa_models.cortex_m.cores import get_core_model
    from refsim.qemu.conformance import build_library_harness

    qcore = _qemu_core(get_core_model(core_name))
    extra = {"profile": build_profile(profile)} if profile else {}
    return build_library_harness(qcore, Path(kernels_dir), **extra)


def measure_task(payload: tuple, blobs: dict[str, Any]) -> tuple[str, list[tuple[int, int]]]:
    """The engine task of a sharded calibration: one QEMU batch of sweep shapes on this worker's
    node (cases rebuilt from their shapes and seed); how it measured, and the measurements."""
    core_name, kernels_dir, profile, seed, calls = payload
    harness, _ = _harness(core_name, kernels_dir, profile)
    measure, source = measurer(core_name, harness)
    return source, [tuple(m) for m in measure([sweep_case(f, shape, seed) for f, shape in calls])]


def measure_tasks(plan: CorePlan) -> list[Any]:
    """One engine task per QEMU batch of the plan, keyed ``<core>/<batch>``."""
    from refsim.engine import Task

    head = (plan.model.name, _dir_key(plan.kernels_dir), _profile_key(plan.profile), plan.seed)
    return [
        Task(f"{plan.model.name}/{k}", (*head, [(plan.rows[i][0], plan.rows[i][2]) for i in group]))
        for k, group in enumerate(plan.groups)
    ]


def measure_plan(plan: CorePlan) -> list[tuple[int, int]]:
    """The plan measured here, batch after batch (the serial path)."""
    harness, _ = _harness(plan.model.name, _dir_key(plan.kernels_dir), _profile_key(plan.profile))
    measure, _ = measurer(plan.model.name, harness)
    measured: list[tuple[int, int]] = [(0, 0)] * len(plan.rows)
    for group in plan.groups:
        calls = [sweep_case(plan.rows[i][0], plan.rows[i][2], plan.seed) for i in group]
        for i, m in zip(group, measure(calls), strict=True):
            measured[i] = m
    return measured


def finish_core(plan: CorePlan, measured: Sequence[tuple[int, int]], argv: Sequence[str]) -> dict:
    """The calibration document of a measured plan (fit, held-out error, provenance)."""
    from isa_models.cortex_m import calibration, formulas

    model = plan.model

    def features(function: str, key: str, shape: Mapping[str, int]) -> dict:
        formula = formulas.FORMULAS[key]
        # a data formula's features count the work on the case's own data (the same case the
        # harness ran: sweep_case is seeded by the shape)
        params = (
            feature_params(function, shape, sweep_case(function, shape, plan.seed)) if formula.data else shape
        )
        return formula.features_for(plan.library, model.name)(params, model.tier)

    measurements = [
        calibration.Measurement(
            key=key,
            shape={"function": function, **shape},
            features=features(function, key, shape),
            instructions=ins,
            cycles=cyc,
            held_out=held,
        )
        for (function, key, shape, held), (ins, cyc) in zip(plan.rows, measured, strict=True)
    ]
    prov = provenance(
        plan.library,
        plan.kernels_dir,
        plan.qcore,
        plan.source,
        argv,
        mcpu=model.gcc_mcpu,
        profile=plan.profile,
    )
    return calibration.build_document(plan.library, model.name, model.tier, prov, measurements)


def calibrate_core(
    core_name: str,
    *,
    library: str,
    kernels_dir: Path | None,
    only: Sequence[str] | None,
    argv: Sequence[str],
    seed: int = 0,
    profile: Any = None,
) -> dict:
    """Measure the sweep on one core model (isa_models.cortex_m.cores: cortex-m0plus .. m85; M0+ and M85
    run on their code path's QEMU board, timed with their own model) and return the document."""
    plan = plan_core(
        core_name, library=library, kernels_dir=kernels_dir, only=only, seed=seed, profile=profile
    )
    return finish_core(plan, measure_plan(plan), argv)


def calibrate_on(engine: Any, plans: Sequence[CorePlan], argv: Sequence[str]) -> list[dict]:
    """Every plan's batches as engine tasks at once (all cores together), then one document per
    plan: the same documents as :func:`calibrate_core` gives one core after another."""
    tasks = {plan.model.name: measure_tasks(plan) for plan in plans}
    by_key = {t.key: (plan, k) for plan in plans for k, t in enumerate(tasks[plan.model.name])}
    measured = {plan.model.name: [(0, 0)] * len(plan.rows) for plan in plans}
    for task, (source, values) in engine.map(measure_task, [t for ts in tasks.values() for t in ts], {}):
        plan, k = by_key[task.key]
        if source != plan.source:
            raise RefsimError(
                f"calibrate: a worker measured {plan.model.name} with {source!r}, this machine with "
                f"{plan.source!r}: install the same refsim and tools on every node"
            )
        for i, m in zip(plan.groups[k], values, strict=True):
            measured[plan.model.name][i] = tuple(m)
    return [finish_core(plan, measured[plan.model.name], argv) for plan in plans]


def refit_document(document: Mapping[str, Any]) -> dict:
    """``document`` refitted without QEMU: its stored measurements, with the current formula
    code's routing, features and held-out choice (:func:`sweep_calls`). This is what a fresh
    ``refsim calibrate`` writes when only the formulas changed (the measurement is exact and
    repeatable); a sweep shape the file has not measured is an error (measure it: no --refit)."""
    from isa_models.cortex_m import calibration, formulas

    library, tier, core = str(document["library"]), str(document["tier"]), str(document["core"])
    stored: dict[str, tuple[int, int]] = {}
    for entry in document["functions"].values():
        for record in entry["fit"] + entry["held_out"]:
            stored[_record_id(record["shape"])] = (int(record["instructions"]), int(record["cycles"]))
    measured_functions = {json.loads(k)["function"] for k in stored}
    measurements = []
    missing = []
    for function, key, shape, held in sweep_calls(tier, None, library, core):
        found = stored.get(_record_id({"function": function, **shape}))
        if found is None:
            if function in measured_functions:  # a function the library lacks is not measured at all
                missing.append(f"{function} {dict(shape)}")
            continue
        formula = formulas.FORMULAS[key]
        params = feature_params(function, shape, sweep_case(function, shape)) if formula.data else shape
        features = formula.features_for(library, core)(params, tier)
        measurements.append(
            calibration.Measurement(key, {"function": function, **shape}, features, *found, held_out=held)
        )
    if missing:
        raise RefsimError(
            f"--refit: {document['library']}/{document['core']} has no measurement of {len(missing)} sweep "
            f"shape(s), e.g. {missing[0]}; measure them (refsim calibrate without --refit)"
        )
    return calibration.build_document(
        library, str(document["core"]), tier, document["provenance"], measurements
    )


def merge_remeasured(shipped: Mapping[str, Any], partial: Mapping[str, Any]) -> dict:
    """``shipped`` with the functions ``partial`` (a ``--kernel`` run) measured replaced by its
    entries, so re-measuring one function keeps every other function's data; the file keeps its
    provenance, and the re-measurement is recorded under ``provenance["remeasured"]``."""
    if (shipped.get("library"), shipped.get("core")) != (partial["library"], partial["core"]):
        raise RefsimError(
            f"calibrate --kernel: {shipped.get('library')}/{shipped.get('core')} is not "
            f"{partial['library']}/{partial['core']}"
        )
    merged = dict(shipped)
    merged["functions"] = dict(sorted({**shipped["functions"], **partial["functions"]}.items()))
    prov = dict(shipped["provenance"])
    new = partial["provenance"]
    prov["remeasured"] = [
        *prov.get("remeasured", ()),
        {"functions": sorted(partial["functions"]), "date": new["date"], "command": new["command"]},
    ]
    for key in ("library_commit", "gcc", "qemu", "llvm_mca", "flags", "cycles_source"):
        if new.get(key) != prov.get(key):
            raise RefsimError(
                f"calibrate --kernel: the shipped {shipped['library']}/{shipped['core']} was measured with "
                f"{key} {prov.get(key)!r}, this run with {new.get(key)!r}; re-measure every function"
            )
    merged["provenance"] = prov
    return merged


def _record_id(shape: Mapping[str, Any]) -> str:
    return json.dumps(dict(shape), sort_keys=True)


def _shape_seed(function: str, shape: Mapping[str, int]) -> int:
    return zlib.crc32(json.dumps([function, dict(shape)], sort_keys=True).encode())


def _qemu_core(model: Any):
    from refsim.qemu.cores import get_core

    try:
        from refsim.qemu.timing import qemu_core_for
    except ImportError:
        return get_core(model.qemu_core)
    return qemu_core_for(model)


def _cores(cpus: list[str] | None) -> list[str]:
    from isa_models.cortex_m.cores import CORE_MODELS, get_core_model
    from isa_models.errors import IsaModelError

    if not cpus:
        return list(CORE_MODELS)
    try:
        return [get_core_model(c).name for c in cpus]
    except IsaModelError as exc:
        raise RefsimError(str(exc)) from None


@app.command()
def calibrate(
    kernels_dir: Annotated[
        Path | None,
        typer.Option("--kernels-dir", help="A CMSIS-NN-API library (Include/, Source/); default kernels_c."),
    ] = None,
    cpu: Annotated[
        list[str] | None, typer.Option("--cpu", help="Core to calibrate (repeatable; default all).")
    ] = None,
    library: Annotated[
        str | None,
        typer.Option(
            "--library", help="Name of the calibration (directory); default cmsis-nn with --kernels-dir."
        ),
    ] = None,
    kernel: Annotated[
        list[str] | None,
        typer.Option("--kernel", help="Only these functions, routing variants or families (repeatable)."),
    ] = None,
    library_commit: Annotated[
        str | None, typer.Option("--library-commit", help="Record this as the library's commit (provenance).")
    ] = None,
    out_dir: Annotated[
        Path | None,
        typer.Option(
            "--out-dir", help="Write <library>/<core>.json here (default isa_models/cortex_m/calibration)."
        ),
    ] = None,
    profile: Annotated[
        str,
        typer.Option(
            "--profile",
            help="How the runtime builds the library: cmake (CMSIS-NN's own CMake, -Ofast; ExecuTorch) "
            "or tflm (TFLM's Makefile, -O2; library cmsis-nn-tflm).",
        ),
    ] = "cmake",
    refit: Annotated[
        bool,
        typer.Option(
            "--refit",
            help="No QEMU: refit the files' stored measurements (in --out-dir) with the current formulas.",
        ),
    ] = False,
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers", min=1, help="Measure the QEMU batches of every core on N local worker processes."
        ),
    ] = None,
    ray: Annotated[
        str | None,
        typer.Option(
            "--ray",
            help="Measure the QEMU batches as Ray tasks: 'local', 'auto' or a cluster ADDRESS (docs/scaling.md).",
        ),
    ] = None,
) -> None:
    """Measure every CMSIS-NN function's sweep on each core and fit the cost formulas."""
    from isa_models.cortex_m import calibration

    if kernels_dir is not None and not kernels_dir.is_dir():
        raise RefsimError(f"--kernels-dir {kernels_dir}: not a directory")
    chosen_profile = build_profile(profile)
    if profile != "cmake" and kernels_dir is None:
        raise RefsimError(f"--profile {profile}: needs --kernels-dir (a CMSIS-NN checkout)")
    name = library or (PROFILE_LIBRARY[profile] if kernels_dir is not None else "kernels_c")
    LIBRARY_COMMIT.set(library_commit or "")
    argv = sys.argv[2:] if len(sys.argv) > 2 and sys.argv[1] == "calibrate" else []
    table = Table(
        "core", "function / variant", "fit", "held out", "instr err (max)", "cycle err (max)", "source"
    )
    sharded = workers is not None or ray is not None
    if sharded and refit:
        raise RefsimError("--refit runs no QEMU: it takes no --workers/--ray")
    measured: dict[str, dict] = {}
    if sharded:
        from refsim.engine import make_engine

        with make_engine(workers or (None if ray else 1), ray) as engine:
            lib_profile = chosen_profile if kernels_dir is not None else None
            plans = [
                plan_core(core, library=name, kernels_dir=kernels_dir, only=kernel, profile=lib_profile)
                for core in _cores(cpu)
            ]
            tasks = sum(len(p.groups) for p in plans)
            with console.status(f"measuring {tasks} QEMU batches on {engine.name}"):
                for plan, document in zip(plans, calibrate_on(engine, plans, argv), strict=True):
                    measured[plan.model.name] = document
    for core in _cores(cpu):
        if core in measured:
            document = measured[core]
        elif refit:
            try:
                shipped = json.loads(calibration.path_for(name, core, out_dir).read_text())
            except (OSError, json.JSONDecodeError) as exc:
                raise RefsimError(f"--refit: no readable {name} calibration for {core} ({exc})") from None
            document = refit_document(shipped)
        else:
            document = calibrate_core(
                core,
                library=name,
                kernels_dir=kernels_dir,
                only=kernel,
                argv=argv,
                profile=chosen_profile if kernels_dir is not None else None,
            )
        path = calibration.path_for(name, core, out_dir)
        if kernel and not refit and path.is_file():
            document = merge_remeasured(json.loads(path.read_text()), document)
        calibration.write(document, path)
        for key, entry in document["functions"].items():
            err = entry["error"]
            table.add_row(
                core, key, str(len(entry["fit"])), str(len(entry["held_out"])),
                f"{100 * err['instructions']['max_abs']:.1f}%", f"{100 * err['cycles']['max_abs']:.1f}%",
                "cycles" if document["provenance"]["cycles_source"] == TIMED_SOURCE else "instr (CPI 1)",
            )  # fmt: skip
        console.print(f"wrote {path}", highlight=False)
    console.print(table)
