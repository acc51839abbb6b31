"""Instruction-timed cycles: QEMU's exact per-block execution counts × each block's cycles on a core.

    from refsim.qemu.timing import time_cases
    for t in time_cases("cortex-m4", cases, system="nucleo-l4r5zi"):   # one QEMU start
        print(t.kernel, t.shape, t.instructions, t.cycles, t.by_component)

How (docs/cost-model.md, "Instruction-timed cycles"):

1. QEMU runs the batch with the counting plugin in block mode (kernels_c/qemu_plugin/insn_count.c,
   ``blocks=1``): per kernel call, every executed translation block (start, instructions,
   bytes), how often it ran, how often it was entered by a jump and left by one.
2. Each distinct block's instructions come from ``arm-none-eabi-objdump -d`` of the ELF;
   llvm-mca-19 (``-mcpu`` = the core's :attr:`~isa_models.cortex_m.cores.CoreModel.llvm_mca_cpu`) times
   all of them in one process (refsim/qemu/mca.py, cached by content hash): per instruction its
   steady-state span. Branches are not given to llvm-mca.
3. The TRM rules llvm-mca lacks are added per block (refsim/qemu/blocks.py; the numbers in
   isa_models/cortex_m/cores.py), and the system's memory wait states (isa_models/cortex_m/systems.py):

       cycles = Σ_blocks executions · (issue + load_store + multiply + branch + unparsed)
              + Σ_blocks left_by_jump · refill(last instruction)
              + Σ_blocks entered_by_jump · unaligned_target_refill (32-bit target at 2 mod 4)
              + ifetch_ws

   ``issue``: llvm-mca's spans (on a core without an llvm model, the M0+, the TRM's ALU and
   multiply cycles); ``load_store``: on ``load_store_rule == "trm"`` cores, TRM cycles minus
   llvm-mca's span for each load/store; ``multiply``: the M3's MLA/MLS 2 cycles; ``branch``:
   ``branch_cycles`` per branch executed (BL on the M0+ one more); ``unparsed``: instructions
   llvm could not time, one ALU cycle each (counted, so a report shows how many).

Cores QEMU cannot run: cortex-m0plus runs a ``-mcpu=cortex-m0plus`` build on the M3 board
(ARMv6-M is a subset of ARMv7-M) and is timed with its TRM table; cortex-m85 runs the M55 MVE
build and is timed with llvm-mca's M85 model.
"""

from __future__ import annotations

import dataclasses
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from isa_models.cortex_m.cores import CoreModel, get_core_model
from isa_models.cortex_m.systems import SystemPreset, get_system
from refsim.qemu import blocks as bl
from refsim.qemu import mca
from refsim.qemu.batch import FUNCTIONS, HARNESS_STATUS, Case, decode_results, encode_batch, encode_case
from refsim.qemu.build import Harness, build_harness
from refsim.qemu.cores import Core, get_core
from refsim.qemu.counting import _runs_kernel, macs_of, shape_of
from refsim.qemu.disassembly import Disassembly, disassemble
from refsim.qemu.errors import QemuError, QemuTimeoutError
from refsim.qemu.instruction_classes import classify
from refsim.qemu.plugin import _FILE_MAGIC, CallCount, _call_count, build_plugin, plugin_arguments
from refsim.qemu.run import EXIT_STATUS, _fault, qemu_command

#: Components of :attr:`CaseTiming.by_component`, in report order.
COMPONENTS: tuple[str, ...] = (
    "issue",
    "load_store",
    "multiply",
    "mve_overlap",
    "branch",
    "branch_refill",
    "unparsed",
    "ifetch_ws",
    "data_ws",
)

#: The arrays a deployment keeps with the program's constants (in flash on most presets).
WEIGHT_ARRAYS = frozenset({"filter", "bias", "multiplier", "shift", "table"})

_BLOCKS_VERSION = 2
_CALL_MARK = 2**64 - 1
_END_MARK = 2**64 - 2
_FLAGS_MARK = 2**64 - 3
_BLOCK_MARK = 2**64 - 4
_DATA_MARK = 2**64 - 5


class TimingError(QemuError):
    """The instruction-timed cycles cannot be produced (the message says what is missing)."""


@dataclass(frozen=True)
class CaseTiming:
    """Instruction-timed cycles of one kernel call on one core model (and system)."""

    kernel: str
    variant: str
    shape: str
    core: str
    instructions: int
    cycles: int
    by_component: Mapping[str, int]
    macs: int | None
    system: str = ""
    unparsed_instructions: int = field(default=0, compare=False)

    @property
    def cycles_per_mac(self) -> float | None:
        return self.cycles / self.macs if self.macs else None

    def record(self) -> dict[str, Any]:
        """The JSON record of ``refsim conformance --count-cycles``."""
        return {
            "kernel": self.kernel,
            "variant": self.variant,
            "shape": self.shape,
            "core": self.core,
            "system": self.system,
            "instructions": self.instructions,
            "cycles": self.cycles,
            "by_component": dict(self.by_component),
            "macs": self.macs,
        }


@dataclass(frozen=True)
class DataReads:
    """Reads of one call's constant arrays: how many, how often the line changed from the
    previous such read, and how many distinct lines were read."""

    reads: int = 0
    line_switches: int = 0
    distinct_lines: int = 0


@dataclass(frozen=True)
class BlockRun:
    """One executed translation block of one call: where, how many instructions and bytes, and
    how often it ran, was entered by a jump and was left by one."""

    start: int
    insns: int
    size: int
    executions: int
    jumped_in: int
    jumped_out: int


def qemu_core_for(model: CoreModel) -> Core:
    """The refsim.qemu core that runs ``model``'s code: its QEMU board, and gcc's ``-mcpu`` of the
    model (cortex-m0plus: the M3 board with an ARMv6-M build)."""
    core = get_core(model.qemu_core)
    flags = tuple(f"-mcpu={model.gcc_mcpu}" if f.startswith("-mcpu=") else f for f in core.gcc_flags)
    return dataclasses.replace(core, gcc_flags=flags) if flags != core.gcc_flags else core


def harness_for(model: CoreModel) -> Harness:
    """The kernels_c harness running ``model``'s code path (ARMv6-M build for the M0+)."""
    qcore = qemu_core_for(model)
    if model.arch == "armv6-m":
        from refsim.qemu.v6m_build import build_v6m_harness

        return build_v6m_harness(qcore)
    return build_harness(qcore)


def default_system(model: CoreModel) -> SystemPreset:
    return get_system(f"ideal-{model.name.removeprefix('cortex-')}")


# --- the plugin's block file ---------------------------------------------------------------------


def parse_block_counts(
    data: bytes, disassembly: Disassembly, *, with_data: bool = False
) -> list[tuple[CallCount, list[BlockRun], DataReads]]:
    """The plugin's ``blocks=1`` file → per call its instruction counts, executed blocks and
    (``with_data``: the run had ``data=``) its constant-data reads."""
    words = np.frombuffer(data[: len(data) - len(data) % 16], dtype="<u8").reshape(-1, 2)
    if len(words) < 3 or (int(words[0, 0]), int(words[0, 1])) != (_FILE_MAGIC, _BLOCKS_VERSION):
        raise TimingError(
            f"block counts: file must start with RSINSCNT v{_BLOCKS_VERSION}, got {len(data)} bytes"
        )
    if int(words[-2, 0]) != _END_MARK or int(words[-1, 0]) != _FLAGS_MARK:
        raise TimingError("block counts: the plugin's file is cut short (QEMU did not exit normally)")
    if int(words[-1, 1]):
        raise TimingError(f"block counts: unbalanced markers (plugin flags {int(words[-1, 1])})")
    calls: list[tuple[CallCount, list[BlockRun], DataReads]] = []
    i, end = 1, len(words) - 2
    while i < end:
        mark, n = int(words[i, 0]), int(words[i, 1])
        if mark != _CALL_MARK or i + 2 + n > end or int(words[i + 1 + n, 0]) != _BLOCK_MARK:
            raise TimingError(f"block counts: malformed record at pair {i}")
        counts = _call_count(words[i + 1 : i + 1 + n], disassembly)
        m = int(words[i + 1 + n, 1])
        raw = words[i + 2 + n : i + 2 + n + 2 * m]
        runs = [
            BlockRun(
                start=int(raw[2 * k, 0]) & 0xFFFF_FFFF,
                insns=(int(raw[2 * k, 0]) >> 32) & 0xFFFF,
                size=int(raw[2 * k, 0]) >> 48,
                executions=int(raw[2 * k, 1]),
                jumped_in=int(raw[2 * k + 1, 0]),
                jumped_out=int(raw[2 * k + 1, 1]),
            )
            for k in range(m)
        ]
        i += 2 + n + 2 * m
        reads = DataReads()
        if with_data:
            if i + 2 > end or int(words[i, 0]) != _DATA_MARK:
                raise TimingError(f"block counts: data record expected at pair {i}")
            reads = DataReads(int(words[i, 1]), int(words[i + 1, 0]), int(words[i + 1, 1]))
            i += 2
        calls.append((counts, runs, reads))
    if len(calls) != int(words[-2, 1]):
        raise TimingError(
            f"block counts: the plugin reported {int(words[-2, 1])} calls, the file holds {len(calls)}"
        )
    return calls


def run_blocks(
    core: Core,
    elf: Path,
    workdir: Path,
    *,
    append: str = "",
    timeout: float = 60.0,
    data_ranges: Sequence[tuple[int, int]] | None = None,
    line_bytes: int = 16,
) -> tuple[Any, list[tuple[CallCount, list[BlockRun], DataReads]]]:
    """Run ``elf`` with the plugin in block mode; QEMU's result and every marked call's counts.
    ``data_ranges``: per call the address range of its constant arrays, whose reads are counted
    in lines of ``line_bytes``. Any ELF with the marker functions will do (the tests run
    hand-written loops)."""
    disassembly = disassemble(core, elf)
    plugin = plugin_arguments(build_plugin(), disassembly.markers, "blocks.bin")
    plugin[-1] += ",blocks=1"
    if data_ranges is not None:
        flat = np.array(data_ranges, dtype="<u8").reshape(-1)
        (workdir / "data.bin").write_bytes(flat.tobytes())
        plugin[-1] += f",data={(workdir / 'data.bin')},line={line_bytes}"
    try:
        done = subprocess.run(
            [*qemu_command(core, elf, append), *plugin],
            cwd=workdir,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise QemuTimeoutError(
            f"kernels_c on {core.name}: the timed run must finish within {timeout} s, it did not (QEMU killed)"
        ) from None
    if done.returncode != 0:
        return done, []
    out = workdir / "blocks.bin"
    if not out.is_file():
        raise TimingError(
            f"kernels_c on {core.name}: QEMU did not load the counting plugin: {done.stderr.strip()}"
        )
    return done, parse_block_counts(out.read_bytes(), disassembly, with_data=data_ranges is not None)


# --- timing blocks -------------------------------------------------------------------------------


@dataclass(frozen=True)
class BlockCost:
    """Cycles of one block: per execution by component, per jump out and per jump in."""

    per_execution: Mapping[str, int]
    per_jump_out: int
    per_jump_in: int
    unparsed: int


def _static_cost(insns: Sequence[bl.Insn], spans: Sequence[int | None], model: CoreModel) -> dict[str, int]:
    """Cycles of one execution of a block by component (module docstring); ``spans``: llvm-mca's,
    one per instruction it was given (:func:`refsim.qemu.blocks.mca_text` not None)."""
    parts = dict.fromkeys(("issue", "load_store", "multiply", "mve_overlap", "branch", "unparsed"), 0)
    trm = bl.memory_cycles(insns, model)
    mca_index = 0
    for insn, memory in zip(insns, trm, strict=True):
        kind = bl.kind_of(insn)
        if kind in ("branch", "loop_setup"):
            parts["branch"] += model.branch_cycles
            if bl.base_mnemonic(insn.mnemonic) == "bl":
                parts["branch"] += model.call_extra_cycles
            continue
        in_mca = bl.mca_text(insn) is not None
        span: int | None = None
        if in_mca and model.llvm_mca_cpu is not None:
            span = spans[mca_index]
            mca_index += 1
        if model.llvm_mca_cpu is None:  # no llvm model: the TRM table times everything
            if memory is not None:
                parts["load_store"] += memory
            else:
                parts["issue"] += model.multiply_cycles if kind == "mla" else model.alu_cycles
            continue
        if span is None:
            if in_mca:
                parts["unparsed"] += model.alu_cycles
            span_used = 0 if not in_mca else model.alu_cycles
        else:
            parts["issue"] += span
            span_used = span
        if memory is not None and (model.load_store_rule == "trm" or not in_mca):
            parts["load_store"] += memory - span_used  # not given to llvm: POP {PC}, LDR PC
        elif kind == "mla" and model.multiply_accumulate_cycles > max(1, span_used):
            parts["multiply"] += model.multiply_accumulate_cycles - span_used
    if model.mve_pair_overlap:
        assert model.mve_beats_per_tick is not None and model.mve_beats_per_instruction is not None
        ticks = model.mve_beats_per_instruction // model.mve_beats_per_tick
        parts["mve_overlap"] = -_mve_overlap(insns, spans, ticks)
    return parts


def _mve_overlap(insns: Sequence[bl.Insn], spans: Sequence[int | None], ticks: int) -> int:
    """Cycles the beats of adjacent (MVE load/store, MVE compute) pairs overlap. A 128-bit MVE
    instruction is 4 beats, ``ticks`` = 4 / beats per tick cycles on its pipe; two on different
    pipes overlap to ``ticks`` together, so a pair llvm-mca spans over ``a + b`` cycles gives
    back ``max(0, a + b - ticks)`` (pairs taken greedily in order)."""
    timed = [i for i in insns if bl.mca_text(i) is not None]
    kinds = [classify(i.mnemonic, i.operands, mve=True) for i in timed]
    overlap, k = 0, 0
    while k + 1 < len(timed):
        pair = {kinds[k], kinds[k + 1]}
        a, b = spans[k], spans[k + 1]
        if "mve_load_store" in pair and pair & {"mve_mac", "mve_other"} and a is not None and b is not None:
            overlap += max(0, a + b - ticks)
            k += 2
        else:
            k += 1
    return overlap


def _refill_out(last: bl.Insn, model: CoreModel) -> int:
    if bl.base_mnemonic(last.mnemonic) in ("le", "letp") and model.loop_end_refill is not None:
        return model.loop_end_refill
    if bl.jumps(last) and bl.kind_of(last) != "branch":
        return model.load_pc_refill
    return model.taken_branch_refill


def time_blocks(
    model: CoreModel, listing: Mapping[int, bl.Insn], keys: Sequence[tuple[int, int, int]]
) -> dict[tuple[int, int, int], BlockCost]:
    """The cost of every block (start, instructions, bytes); llvm-mca once for all of them."""
    block_insns = {k: bl.block_instructions(listing, *k) for k in keys}
    texts: list[list[str]] = []
    for k in keys:
        texts.append([t for t in (bl.mca_text(i) for i in block_insns[k]) if t is not None])
    if model.llvm_mca_cpu is not None:
        all_spans = mca.block_spans(model.llvm_mca_cpu, model.arch, texts)
    else:
        all_spans = [()] * len(keys)
    costs: dict[tuple[int, int, int], BlockCost] = {}
    for k, spans in zip(keys, all_spans, strict=True):
        insns = block_insns[k]
        static = _static_cost(insns, spans, model)
        first = insns[0]
        unaligned = first.size == 4 and first.address % 4 == 2
        costs[k] = BlockCost(
            per_execution=static,
            per_jump_out=_refill_out(insns[-1], model),
            per_jump_in=model.unaligned_target_refill if unaligned else 0,
            unparsed=sum(1 for s in spans if s is None),
        )
    return costs


def _ifetch_ws(cost: BlockCost, run: BlockRun, per_exec: int, system: SystemPreset) -> int:
    """Instruction-fetch wait states of one block (isa_models/cortex_m/systems.py docstring)."""
    ws = system.ifetch_wait_states
    if ws == 0 or system.instruction_accelerator is not None:
        return 0
    line = system.flash_line_bytes
    lines = (run.start + run.size - 1) // line - run.start // line + 1
    stream = max(0, lines * (1 + ws) - per_exec)
    return stream * run.executions + run.jumped_in * ws


def case_cycles(
    runs: Sequence[BlockRun],
    costs: Mapping[tuple[int, int, int], BlockCost],
    system: SystemPreset,
    reads: DataReads | None = None,
) -> dict[str, int]:
    total = dict.fromkeys(COMPONENTS, 0)
    if reads is not None and system.data_wait_states:
        fits = reads.distinct_lines * system.flash_line_bytes <= system.data_cache_bytes
        lines = reads.distinct_lines if fits else reads.line_switches
        total["data_ws"] = lines * system.data_wait_states
    for run in runs:
        cost = costs[(run.start, run.insns, run.size)]
        per_exec = sum(cost.per_execution.values())
        for name, value in cost.per_execution.items():
            total[name] += value * run.executions
        total["branch_refill"] += cost.per_jump_out * run.jumped_out + cost.per_jump_in * run.jumped_in
        total["ifetch_ws"] += _ifetch_ws(cost, run, per_exec, system)
    return total


def weight_ranges(cases: Sequence[Case], origin: int) -> list[tuple[int, int]]:
    """Per case, the guest address range [lo, hi) of its :data:`WEIGHT_ARRAYS` in the batch the
    harness reads to ``origin`` (the bulk region) and uses in place (batch.py's layout: batch
    header, per case its header, params, then per array an 8-byte header and the padded data).
    (0, 0) for a case without weights."""
    out: list[tuple[int, int]] = []
    offset = origin + 16
    for case in cases:
        spec = FUNCTIONS[case.function]
        at = offset + 12 + 4 * len(spec.params)
        lo, hi = None, None
        for array in spec.arrays:
            size = np.asarray(case.arrays[array.name]).nbytes
            data = at + 8
            if array.name in WEIGHT_ARRAYS and size:
                lo = data if lo is None else min(lo, data)
                hi = data + size if hi is None else max(hi, data + size)
            at = data + size + (-size % 4)
        length = len(encode_case(case))
        assert at == offset + length, (case.function, at - offset, length)
        out.append((lo, hi) if lo is not None and hi is not None else (0, 0))
        offset += length
    return out


def _kept(runs: Sequence[BlockRun], disassembly: Disassembly) -> list[BlockRun]:
    """The blocks outside the marker functions (whose instructions are not counted either)."""
    index = np.searchsorted(disassembly.addresses, [r.start for r in runs])
    return [r for r, i in zip(runs, index, strict=True) if not disassembly.excluded[i]]


def time_elf(
    core: str, elf: Path, *, system: str | None = None, append: str = "", timeout: float = 60.0
) -> list[dict[str, int]]:
    """Cycles by component of every marked call of any ELF with the marker functions, run on the
    QEMU board of ``core`` (a core model name); for hand-written loops in the tests."""
    model = get_core_model(core)
    preset = get_system(system) if system else default_system(model)
    qcore = qemu_core_for(model)
    with tempfile.TemporaryDirectory(prefix="refsim-timing-") as tmp:
        done, calls = run_blocks(qcore, elf, Path(tmp), append=append, timeout=timeout)
    if done.returncode != 0:
        raise TimingError(f"{elf}: QEMU exited {done.returncode}: {done.stderr.strip()[:300]}")
    disassembly = disassemble(qcore, elf)
    listing = bl.listing_of(qcore, elf)
    kept = [_kept(runs, disassembly) for _, runs, _ in calls]
    keys = sorted({(r.start, r.insns, r.size) for runs in kept for r in runs})
    costs = time_blocks(model, listing, keys)
    out = []
    for (count, _, _), runs in zip(calls, kept, strict=True):
        parts = case_cycles(runs, costs, preset)
        out.append({"instructions": count.total, "cycles": sum(parts.values()), **parts})
    return out


def time_cases(
    core: str,
    cases: Sequence[Case],
    *,
    system: str | None = None,
    harness: Harness | None = None,
    timeout: float = 60.0,
) -> list[CaseTiming]:
    """Instruction-timed cycles of every case on the core model ``core`` (cortex-m0plus ..
    cortex-m85), in order; one QEMU start for the batch. ``system``: a preset of
    isa_models.cortex_m.systems (default ``ideal-<core>``); ``harness``: e.g. a ``--kernels-dir`` library
    build (refsim.qemu.conformance.build_library_harness) for the core's QEMU board."""
    model = get_core_model(core)
    preset = get_system(system) if system else default_system(model)
    if preset.core != model.name:
        raise TimingError(f"system {preset.name} is built on {preset.core}; the timed core is {model.name}")
    qcore = qemu_core_for(model)
    harness = harness or harness_for(model)
    if harness.core.machine != qcore.machine:
        raise TimingError(
            f"{model.name} runs on the QEMU board {qcore.machine}; the harness given is built for "
            f"{harness.core.machine}"
        )
    batch = encode_batch(cases)
    if len(batch) > qcore.bulk.length // 2:
        raise TimingError(f"kernels_c on {qcore.name}: a batch must fit half the bulk region: split it")
    with tempfile.TemporaryDirectory(prefix="refsim-timing-") as tmp:
        workdir = Path(tmp)
        (workdir / "in.bin").write_bytes(batch)
        ranges = weight_ranges(cases, harness.core.bulk.origin) if preset.data_wait_states else None
        done, calls = run_blocks(
            harness.core,
            harness.elf,
            workdir,
            append="in.bin out.bin",
            timeout=timeout,
            data_ranges=ranges,
            line_bytes=preset.flash_line_bytes,
        )
        if done.returncode == 4:
            raise _fault(harness.core, harness.elf, done.returncode, done.stderr, cases)
        if done.returncode != 0:
            meaning = EXIT_STATUS.get(done.returncode, "unexpected exit status")
            raise TimingError(
                f"kernels_c on {qcore.name}: harness must exit 0, got {done.returncode} ({meaning}): "
                f"{done.stderr.strip()}"
            )
        results = decode_results((workdir / "out.bin").read_bytes(), len(cases))
    bad = [(i, r) for i, r in enumerate(results) if not r.ok]
    if bad:
        listed = "; ".join(
            f"case {i} ({r.function}, variant {cases[i].variant}): {HARNESS_STATUS.get(r.harness_status, '?')}"
            for i, r in bad[:5]
        )
        raise TimingError(f"kernels_c on {qcore.name}: {len(bad)} of {len(cases)} cases not run: {listed}")
    ran = [i for i, r in enumerate(results) if _runs_kernel(r.harness_status)]
    if len(ran) != len(calls) or len(ran) != len(cases):
        raise TimingError(
            f"kernels_c on {qcore.name}: the plugin saw {len(calls)} kernel calls for {len(cases)} cases"
        )
    disassembly = disassemble(harness.core, harness.elf)
    listing = bl.listing_of(harness.core, harness.elf)
    kept = [_kept(runs, disassembly) for _, runs, _ in calls]
    keys = sorted({(r.start, r.insns, r.size) for runs in kept for r in runs})
    costs = time_blocks(model, listing, keys)
    timings: list[CaseTiming] = []
    for case, (count, _, reads), runs in zip(cases, calls, kept, strict=True):
        parts = case_cycles(runs, costs, preset, reads)
        timings.append(
            CaseTiming(
                kernel=case.function,
                variant=case.variant,
                shape=shape_of(case),
                core=model.name,
                instructions=count.total,
                cycles=sum(parts.values()),
                by_component=parts,
                macs=macs_of(case.function, case.params),
                system=preset.name,
                unparsed_instructions=sum(
                    costs[(r.start, r.insns, r.size)].unparsed * r.executions for r in runs
                ),
            )
        )
    return timings


__all__ = [
    "COMPONENTS",
    "BlockRun",
    "CaseTiming",
    "TimingError",
    "case_cycles",
    "parse_block_counts",
    "qemu_core_for",
    "run_blocks",
    "time_blocks",
    "time_cases",
    "time_elf",
]
