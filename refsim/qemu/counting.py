"""Count executed instructions per kernel call, in total and per instruction class.

    from refsim.qemu.counting import count_instructions
    for c in count_instructions("cortex-m4", cases):   # one QEMU start for the batch
        print(c.kernel, c.shape, c.total, c.by_class["mac"], c.per_mac)

How: QEMU runs the harness with refsim's TCG plugin (refsim/qemu/plugin.py), which gives, for
every call between the harness markers ``rs_kernel_begin`` and ``rs_kernel_end``, how often
each instruction executed, added up by class (refsim/qemu/instruction_classes.py) and mnemonic
over the ELF's disassembly (refsim/qemu/disassembly.py). Here: a batch run with counting, and
per case its counts with the call's shape and multiply-accumulates.

What is counted: every instruction after ``rs_kernel_begin`` returns, up to and including the
call of ``rs_kernel_end``: the kernel itself and the few instructions of the call around it
(argument set-up, storing the status), nothing that a runtime prepares ahead of inference.
Condition-failed instructions of an IT block count, as they do on the hardware's issue slots.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from refsim.qemu.batch import HARNESS_STATUS, Case, decode_results, encode_batch
from refsim.qemu.build import Harness, build_harness
from refsim.qemu.cores import Core, get_core
from refsim.qemu.errors import QemuError
from refsim.qemu.plugin import run_qemu_counted
from refsim.qemu.run import EXIT_STATUS, BatchRun, _fault


@dataclass(frozen=True)
class InstructionCount:
    """Instructions one kernel call executed on one core.

    ``shape``: a short summary of the call's sizes; ``macs``: the multiply-accumulates (or
    elementwise operations) the call performs, None for functions without a formula.
    """

    kernel: str
    variant: str
    shape: str
    core: str
    total: int
    by_class: Mapping[str, int]
    macs: int | None
    by_mnemonic: Mapping[str, int] = field(default_factory=dict, repr=False, compare=False)

    @property
    def per_mac(self) -> float | None:
        return self.total / self.macs if self.macs else None

    def record(self) -> dict[str, Any]:
        """The JSON record of ``--count-instructions`` (docs/conformance.md)."""
        return {
            "kernel": self.kernel,
            "variant": self.variant,
            "shape": self.shape,
            "core": self.core,
            "instructions": self.total,
            "by_class": dict(self.by_class),
            "macs": self.macs,
        }


@dataclass(frozen=True)
class CountedRun:
    """A batch run with counting: the usual results, and per case its counts (None when the
    harness did not call the kernel: bad arguments, a tier the core lacks)."""

    run: BatchRun
    counts: tuple[InstructionCount | None, ...]


def _dims(p: Mapping[str, Any], prefix: str) -> tuple[int, int, int, int]:
    return tuple(int(p[f"{prefix}.{k}"]) for k in "nhwc")  # type: ignore[return-value]


def macs_of(function: str, params: Mapping[str, Any]) -> int | None:
    """Multiply-accumulates of one call from its (VECTORS.md-named) params; for elementwise
    functions the element count. None when the function has no formula here."""
    p = params
    try:
        if function.startswith("arm_fully_connected"):
            return int(p["input_dims.n"]) * int(p["filter_dims.n"]) * int(p["output_dims.c"])
        if function.startswith("arm_transpose_conv"):
            n, h, w, _ = _dims(p, "input_dims")
            _, kh, kw, c_in = _dims(p, "filter_dims")
            return n * h * w * c_in * kh * kw * int(p["output_dims.c"])
        if function.startswith("arm_convolve"):
            n, h, w, c = _dims(p, "output_dims")
            _, kh, kw, c_in = _dims(p, "filter_dims")
            return n * h * w * c * kh * kw * c_in
        if function.startswith("arm_depthwise_conv"):
            n, h, w, c = _dims(p, "output_dims")
            return n * h * w * c * int(p["filter_dims.h"]) * int(p["filter_dims.w"])
        if function == "arm_batch_matmul_s8":
            return int(np.prod(_dims(p, "output_dims"))) * int(p["input_lhs_dims.c"])
        if function.startswith(("arm_avgpool", "arm_max_pool")):
            n, h, w, c = _dims(p, "output_dims")
            return n * h * w * c * int(p["filter_dims.h"]) * int(p["filter_dims.w"])
        if function.startswith("arm_elementwise"):
            return int(p["block_size"])
        if function in ("arm_maximum_s8", "arm_minimum_s8"):
            return int(np.prod(_dims(p, "output_dims")))
        if function == "arm_softmax_s8":
            return int(p["num_rows"]) * int(p["row_size"])
    except KeyError:
        return None
    return None


def _x(dims: Sequence[int]) -> str:
    return "x".join(str(d) for d in dims)


def shape_of(case: Case) -> str:
    """A short summary of a case's sizes (``3x300->40`` for a fully connected layer: N x K -> C_OUT;
    ``1x9x9x8 k3x3 -> 1x4x4x16`` for a convolution or pooling; ``lhs 1x1x4x7 rhs 1x1x3x7`` ...)."""
    p, function = case.params, case.function
    try:
        if function.startswith("arm_fully_connected"):
            return f"{p['input_dims.n']}x{p['filter_dims.n']}->{p['output_dims.c']}"
        if function.startswith(
            ("arm_convolve", "arm_depthwise", "arm_transpose_conv", "arm_avgpool", "arm_max_pool")
        ):
            kernel = f"k{p['filter_dims.h']}x{p['filter_dims.w']}"
            return f"{_x(_dims(p, 'input_dims'))} {kernel} -> {_x(_dims(p, 'output_dims'))}"
        if function == "arm_batch_matmul_s8":
            return f"lhs {_x(_dims(p, 'input_lhs_dims'))} rhs {_x(_dims(p, 'input_rhs_dims'))}"
        if function in ("arm_maximum_s8", "arm_minimum_s8"):
            return f"{_x(_dims(p, 'input_1_dims'))}, {_x(_dims(p, 'input_2_dims'))} -> {_x(_dims(p, 'output_dims'))}"
        if function == "arm_softmax_s8":
            return f"{p['num_rows']}x{p['row_size']}"
        if function == "arm_vector_sum_s8":
            return f"{p['vector_rows']}x{p['vector_cols']}"
        if function == "arm_pad_s8":
            return (
                f"{_x(_dims(p, 'input_size'))} -> pad {_x(_dims(p, 'pre_pad'))} / {_x(_dims(p, 'post_pad'))}"
            )
        if function == "arm_transpose_s8":
            perm = ",".join(str(p[f"permutations[{k}]"]) for k in range(int(p["num_dims"])))
            return f"{_x(_dims(p, 'input_dims'))} perm {perm}"
        if "block_size" in p:
            return f"n={p['block_size']}"
    except KeyError:
        pass
    return " ".join(f"{name}[{np.asarray(a).size}]" for name, a in case.arrays.items())


def _runs_kernel(harness_status: int) -> bool:
    """Whether the harness called the kernel (and so the markers) for a case with this status."""
    return HARNESS_STATUS.get(harness_status) in ("ok", "kernel wrote past the end of its output")


def run_batch_counted(
    core: Core | str,
    cases: Sequence[Case],
    *,
    timeout: float = 60.0,
    harness: Harness | None = None,
    check: bool = True,
) -> CountedRun:
    """:func:`~refsim.qemu.run.run_batch` with the counting plugin: one QEMU start for the batch."""
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
        done, calls = run_qemu_counted(core, harness.elf, workdir, append="in.bin out.bin", timeout=timeout)
        seconds = time.perf_counter() - start
        if done.returncode == 4:
            raise _fault(core, harness.elf, done.returncode, done.stderr, cases)
        if done.returncode != 0:
            meaning = EXIT_STATUS.get(done.returncode, "unexpected exit status")
            raise QemuError(
                f"kernels_c on {core.name}: harness must exit 0, got {done.returncode} ({meaning}): "
                f"{done.stderr.strip()}"
            )
        results = tuple(decode_results((workdir / "out.bin").read_bytes(), len(cases)))
    ran = [i for i, r in enumerate(results) if _runs_kernel(r.harness_status)]
    if len(ran) != len(calls):
        raise QemuError(
            f"kernels_c on {core.name}: the plugin saw {len(calls)} kernel calls, the harness ran {len(ran)} "
            "cases: every case must call rs_kernel_begin/rs_kernel_end exactly once"
        )
    if check:
        bad = [(i, r) for i, r in enumerate(results) if not r.ok]
        if bad:
            listed = "; ".join(
                f"case {i} ({r.function}, variant {cases[i].variant}): {HARNESS_STATUS.get(r.harness_status, '?')}"
                for i, r in bad[:5]
            )
            raise QemuError(f"kernels_c on {core.name}: {len(bad)} of {len(cases)} cases not run: {listed}")
    counts: list[InstructionCount | None] = [None] * len(cases)
    for i, call in zip(ran, calls, strict=True):
        case = cases[i]
        counts[i] = InstructionCount(
            kernel=case.function,
            variant=case.variant,
            shape=shape_of(case),
            core=core.name,
            total=call.total,
            by_class=call.by_class,
            macs=macs_of(case.function, case.params),
            by_mnemonic=call.by_mnemonic,
        )
    run = BatchRun(core=core, results=results, seconds=seconds, console=done.stderr)
    return CountedRun(run=run, counts=tuple(counts))


def count_instructions(
    core: Core | str, cases: Sequence[Case], *, harness: Harness | None = None, timeout: float = 60.0
) -> list[InstructionCount]:
    """Executed instructions of every case, in order (one QEMU start). Every case must run."""
    counted = run_batch_counted(core, cases, harness=harness, timeout=timeout)
    assert all(c is not None for c in counted.counts)  # check=True raised for any case not run
    return [c for c in counted.counts if c is not None]


__all__ = [
    "CountedRun",
    "InstructionCount",
    "count_instructions",
    "macs_of",
    "run_batch_counted",
    "shape_of",
]
