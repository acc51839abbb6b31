"""Count executed instructions per kernel call, in total and per instruction class.

    from refsim.qemu.counting import count_instructions
    for c in count_instructions("cortex-m4", cases):   # one QEMU start for the batch
        print(c.kernel, c.shape, c.total, c.by_class["mac"], c.per_mac)

How: QEMU runs the harness with refsim's TCG plugin (``kernels_c/qemu_plugin/insn_count.c``,
built with the host's gcc and cached by content hash), which writes, for every call between
the harness markers ``rs_kernel_begin`` and ``rs_kernel_end``, how often each guest address
executed. Python maps addresses to mnemonics with ``arm-none-eabi-objdump -d`` (with
``-m armv8.1-m.main`` on MVE cores: QEMU 7.2's own disassembler mislabels MVE) and adds them
up by class. Counts are exact and repeatable: QEMU has no timer interrupts in these runs and
the plugin bumps one counter per executed instruction (docs/kernels_c.md, "Instruction
counting").

What is counted: every instruction after ``rs_kernel_begin`` returns, up to and including the
call of ``rs_kernel_end``: the kernel itself and the few instructions of the call around it
(argument set-up, storing the status), nothing that a runtime prepares ahead of inference.
Condition-failed instructions of an IT block count, as they do on the hardware's issue slots.

Classes (:data:`CLASSES`): ``load_store`` (LDR/STR/LDM/STM/PUSH/POP/PLD and the FP register
loads and stores), ``mac`` (MUL, MLA, SMLAD, SMLAL, SMUL*, ...: every multiply),
``alu`` (all other integer data processing, SXTB16, SSAT, the v8.1-M shifts and
conditional selects), ``branch`` (B, BL, BX, CBZ, TBB, the low-overhead loop instructions
DLS/WLS/LE/LETP), ``mve_load_store`` (VLDR*/VSTR*/VLD2x/VST4x on Q registers), ``mve_mac``
(every MVE multiply: VMLADAV, VMLAV, VMLA, VMUL, VQDMULH, VQRDMULH, ...), ``mve_other`` (every
other instruction on Q registers, VCTP and VPT/VPST), ``other`` (IT, NOP, barriers, system
registers, scalar FP arithmetic).
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from refsim.qemu.batch import HARNESS_STATUS, Case, decode_results, encode_batch
from refsim.qemu.build import KERNELS_C, Harness, build_harness, build_once, cache_root
from refsim.qemu.cores import Core, get_core
from refsim.qemu.errors import BuildError, QemuError, QemuTimeoutError, ToolchainMissingError
from refsim.qemu.run import EXIT_STATUS, BatchRun, _fault, qemu_command
from refsim.qemu.toolchain import find_toolchain

#: Instruction classes, in report order.
CLASSES: tuple[str, ...] = (
    "load_store",
    "mac",
    "alu",
    "branch",
    "mve_load_store",
    "mve_mac",
    "mve_other",
    "other",
)
_CLASS_INDEX = {name: i for i, name in enumerate(CLASSES)}

PLUGIN_DIR = KERNELS_C / "qemu_plugin"
PLUGIN_SOURCES = ("insn_count.c", "qemu_plugin_api.h")
PLUGIN_CFLAGS = ("-shared", "-fPIC", "-O2", "-std=c11", "-Wall", "-Wextra", "-fvisibility=hidden")
MARKERS = ("rs_kernel_begin", "rs_kernel_end")

# Plugin output records (insn_count.c): pairs of little-endian u64.
_FILE_MAGIC = int.from_bytes(b"RSINSCNT", "little")
_FILE_VERSION = 1
_CALL_MARK = 2**64 - 1
_END_MARK = 2**64 - 2
_FLAGS_MARK = 2**64 - 3
_FLAGS = {
    1: "a kernel call was still open at exit",
    2: "rs_kernel_begin ran twice",
    4: "rs_kernel_end ran first",
}


# --- classification -----------------------------------------------------------------------------


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_CONDITIONS = _words("eq ne cs hs cc lo mi pl vs vc hi ls ge lt gt le al")
_BRANCH = _words(
    "b bl blx bx bxns blxns cbz cbnz tbb tbh le letp lctp wls wlstp dls dlstp bf bfx bfl bflx bfcsel"
)
_LOAD_STORE = _words(
    """ldr ldrb ldrh ldrsb ldrsh ldrd ldrt ldrbt ldrht ldrsbt ldrsht ldrex ldrexb ldrexh lda ldab ldah
    ldaex ldaexb ldaexh ldm ldmia ldmdb ldmfd ldmea str strb strh strd strt strbt strht strex strexb strexh
    stl stlb stlh stlex stlexb stlexh stm stmia stmdb stmea stmfd push pop pld pldw pli vldr vstr vpush
    vpop vldm vldmia vldmdb vstm vstmia vstmdb vlldm vlstm vscclrm"""
)
_MAC = _words(
    """mul mla mls umull umlal umaal smull smlal smulbb smulbt smultb smultt smulwb smulwt smlabb smlabt
    smlatb smlatt smlawb smlawt smlalbb smlalbt smlaltb smlaltt smuad smuadx smusd smusdx smlad smladx
    smlsd smlsdx smlald smlaldx smlsld smlsldx smmul smmulr smmla smmlar smmls smmlsr vmul vmla vmls vnmul
    vnmla vnmls vfma vfms vfnma vfnms"""
)
_OTHER = _words(
    """nop bkpt svc dmb dsb isb ssbb pssbb msr mrs cpsie cpsid wfi wfe sev yield udf dbg csdb esb vmsr vmrs
    sg tt ttt tta ttat"""
)
_IT = re.compile(r"^it[te]{0,3}$")
_Q_REGISTER = re.compile(r"\bq[0-7]\b")
_MVE_PREDICATION = ("vctp", "vpst", "vpt", "vpnot")
_MVE_MEMORY = ("vldr", "vstr", "vld2", "vld4", "vst2", "vst4")
_MVE_MULTIPLY = ("vml", "vmul", "vqdml", "vqdmul", "vqrdml", "vqrdmul", "vrmul", "vrml", "vfm", "vqdmlad")


def _scalar_class(base: str) -> str:
    for candidate in (base, base[:-2] if base[-2:] in _CONDITIONS else None):
        if candidate is None:
            continue
        for name in (candidate, candidate[:-1] if candidate.endswith("s") else None):
            if name in _BRANCH:
                return "branch"
            if name in _LOAD_STORE:
                return "load_store"
            if name in _MAC:
                return "mac"
            if name in _OTHER or (name and _IT.match(name)):
                return "other"
    if base.startswith("v"):  # scalar floating point that is neither memory nor multiply
        return "other"
    return "alu"


def classify(mnemonic: str, operands: str = "", *, mve: bool = False) -> str:
    """The class (:data:`CLASSES`) of one instruction as objdump prints it (``ldrbne.w``,
    ``vmladava.s8``, ``vldrbt.u8``). ``mve``: the core has MVE, so ``v`` instructions on Q
    registers (and VCTP/VPT/VPST) are MVE."""
    base = mnemonic.lower().split(".")[0]
    if mve and base.startswith("v") and (_Q_REGISTER.search(operands) or base.startswith(_MVE_PREDICATION)):
        if base.startswith(_MVE_MEMORY):
            return "mve_load_store"
        if base.startswith(_MVE_MULTIPLY):
            return "mve_mac"
        return "mve_other"
    return _scalar_class(base)


def normalize(mnemonic: str) -> str:
    """The mnemonic without width qualifiers and data type (``ldrb.w`` → ``ldrb``,
    ``vldrb.u8`` → ``vldrb``), for instruction-mix histograms. Conditions stay."""
    return mnemonic.lower().split(".")[0]


# --- disassembly ---------------------------------------------------------------------------------

_INSN_LINE = re.compile(r"^\s*([0-9a-f]+):\t([0-9a-f]{4}(?: [0-9a-f]{4})?)\s*\t(\S+)[ \t]*([^;@]*)")
_FUNCTION_LINE = re.compile(r"^([0-9a-f]+) <(.+)>:$")


@dataclass(frozen=True)
class Disassembly:
    """Every instruction of an ELF, as arrays sorted by address: its class (index into
    :data:`CLASSES`), its normalized mnemonic (index into ``mnemonic_names``), whether it is part
    of a marker function's own body (not counted); and the markers' entry addresses."""

    addresses: np.ndarray  # uint64, sorted
    classes: np.ndarray  # intp
    mnemonic_ids: np.ndarray  # intp
    mnemonic_names: tuple[str, ...]
    excluded: np.ndarray  # bool
    functions: Mapping[int, str] = field(repr=False)  # address → the function it belongs to
    markers: tuple[int, int] = (0, 0)  # entry addresses of rs_kernel_begin and rs_kernel_end

    def mnemonic(self, address: int) -> str:
        i = int(np.searchsorted(self.addresses, address))
        return self.mnemonic_names[self.mnemonic_ids[i]]


def objdump_command(core: Core, elf: Path) -> list[str]:
    """``arm-none-eabi-objdump -d``, with ``-m armv8.1-m.main`` on MVE cores (REFERENCE §3: without
    it objdump, like QEMU's own disassembler, does not decode MVE)."""
    objdump = find_toolchain().binutil("objdump")
    arch = ["-m", "armv8.1-m.main"] if core.tier == "mve" else []
    return [str(objdump), "-d", *arch, str(elf)]


def _marker_symbols(elf: Path) -> dict[str, tuple[int, int]]:
    nm = find_toolchain().binutil("nm")
    out = subprocess.run([str(nm), "-S", str(elf)], capture_output=True, text=True, check=True).stdout
    found = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[3] in MARKERS:
            found[parts[3]] = (int(parts[0], 16) & ~1, int(parts[1], 16))
    missing = [m for m in MARKERS if m not in found]
    if missing:
        raise QemuError(
            f"{elf}: instruction counting needs the marker functions {missing} in the symbol table"
        )
    return found


@functools.cache
def _disassemble(core_name: str, elf: str, stamp: float) -> Disassembly:
    core = get_core(core_name)
    done = subprocess.run(objdump_command(core, Path(elf)), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise QemuError(f"objdump failed on {elf}: {done.stderr.strip()}")
    rows: list[tuple[int, int, str]] = []
    functions: dict[int, str] = {}
    mve = core.tier == "mve"
    function = "?"
    for line in done.stdout.splitlines():
        insn = _INSN_LINE.match(line)
        if insn is None:
            header = _FUNCTION_LINE.match(line)
            if header:
                function = header.group(2)
            continue
        mnemonic = insn.group(3)
        if mnemonic.startswith("."):  # literal pool or data objdump could not decode
            continue
        address = int(insn.group(1), 16)
        rows.append((address, _CLASS_INDEX[classify(mnemonic, insn.group(4), mve=mve)], normalize(mnemonic)))
        functions[address] = function
    rows.sort()
    names = tuple(sorted({name for _, _, name in rows}))
    name_ids = {name: i for i, name in enumerate(names)}
    addresses = np.array([r[0] for r in rows], dtype=np.uint64)
    symbols = _marker_symbols(Path(elf))
    excluded = np.zeros(len(rows), dtype=bool)
    for start, size in symbols.values():
        excluded |= (addresses >= start) & (addresses < start + max(size, 2))
    return Disassembly(
        addresses=addresses,
        classes=np.array([r[1] for r in rows], dtype=np.intp),
        mnemonic_ids=np.array([name_ids[r[2]] for r in rows], dtype=np.intp),
        mnemonic_names=names,
        excluded=excluded,
        functions=functions,
        markers=(symbols[MARKERS[0]][0], symbols[MARKERS[1]][0]),
    )


def disassemble(core: Core | str, elf: Path) -> Disassembly:
    """The disassembly of ``elf`` for ``core`` (cached per file and modification time)."""
    core = get_core(core) if isinstance(core, str) else core
    return _disassemble(core.name, str(elf), elf.stat().st_mtime)


# --- the plugin ---------------------------------------------------------------------------------


def find_host_cc() -> Path:
    """The host C compiler that builds the plugin: ``$REFSIM_HOST_CC``, else ``gcc`` on PATH."""
    name = os.environ.get("REFSIM_HOST_CC", "gcc")
    found = shutil.which(name)
    if found is None:
        raise ToolchainMissingError(
            f"kernels_c: instruction counting builds a QEMU plugin with the host C compiler; {name} not "
            "found on PATH (REFSIM_HOST_CC names another): install the Debian package gcc: apt-get install gcc",
            package="gcc",
        )
    return Path(found)


def plugin_key(cc: Path) -> str:
    """Hash of the plugin sources, the flags and the host compiler's version."""
    version = subprocess.run([str(cc), "--version"], capture_output=True, text=True, check=True).stdout
    digest = hashlib.sha256()
    for part in (version.splitlines()[0], *PLUGIN_CFLAGS):
        digest.update(part.encode() + b"\0")
    for name in PLUGIN_SOURCES:
        digest.update(name.encode() + b"\0" + (PLUGIN_DIR / name).read_bytes() + b"\0")
    return digest.hexdigest()[:16]


@functools.cache
def build_plugin() -> Path:
    """``insn_count.so``, built now or found in ``$REFSIM_CACHE/kernels_c/qemu-plugin-<key>/``."""
    if not (PLUGIN_DIR / PLUGIN_SOURCES[0]).is_file():
        raise QemuError(f"kernels_c: plugin sources expected in {PLUGIN_DIR}, found none")
    cc = find_host_cc()
    final = cache_root() / f"qemu-plugin-{plugin_key(cc)}"

    def make(staging: Path) -> None:
        command = [
            str(cc),
            *PLUGIN_CFLAGS,
            "-o",
            str(staging / "insn_count.so"),
            str(PLUGIN_DIR / "insn_count.c"),
        ]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise BuildError(f"kernels_c: building the QEMU plugin failed:\n{done.stderr.strip()}")

    return build_once(final, "insn_count.so", make)


def plugin_arguments(plugin: Path, markers: tuple[int, int], out: str) -> list[str]:
    """``-plugin`` with the marker addresses and the output file (QEMU option commas doubled)."""
    path = str(plugin).replace(",", ",,")
    return ["-plugin", f"{path},begin={markers[0]:#x},end={markers[1]:#x},out={out.replace(',', ',,')}"]


# --- per-call counts ----------------------------------------------------------------------------


@dataclass(frozen=True)
class CallCount:
    """What one kernel call executed: total, per class and per mnemonic."""

    total: int
    by_class: Mapping[str, int]
    by_mnemonic: Mapping[str, int] = field(repr=False)


def parse_counts(data: bytes, disassembly: Disassembly) -> list[CallCount]:
    """The plugin's output file → one :class:`CallCount` per kernel call, in call order."""
    words = np.frombuffer(data[: len(data) - len(data) % 16], dtype="<u8").reshape(-1, 2)
    if len(words) < 3 or (int(words[0, 0]), int(words[0, 1])) != (_FILE_MAGIC, _FILE_VERSION):
        raise QemuError(
            f"instruction counts: file must start with RSINSCNT v{_FILE_VERSION}, got {len(data)} bytes"
        )
    if int(words[-2, 0]) != _END_MARK or int(words[-1, 0]) != _FLAGS_MARK:
        raise QemuError("instruction counts: the plugin's file is cut short (QEMU did not exit normally)")
    flags = int(words[-1, 1])
    if flags:
        problems = "; ".join(text for bit, text in _FLAGS.items() if flags & bit)
        raise QemuError(f"instruction counts: unbalanced markers: {problems}")
    calls: list[CallCount] = []
    i, end = 1, len(words) - 2
    while i < end:
        mark, n = int(words[i, 0]), int(words[i, 1])
        if mark != _CALL_MARK or i + 1 + n > end:
            raise QemuError(f"instruction counts: malformed record at pair {i}")
        calls.append(_call_count(words[i + 1 : i + 1 + n], disassembly))
        i += 1 + n
    if len(calls) != int(words[-2, 1]):
        raise QemuError(
            f"instruction counts: the plugin reported {int(words[-2, 1])} calls, the file holds {len(calls)}"
        )
    return calls


def _call_count(pairs: np.ndarray, disassembly: Disassembly) -> CallCount:
    addresses, counts = pairs[:, 0], pairs[:, 1].astype(np.int64)
    index = np.searchsorted(disassembly.addresses, addresses)
    known = index < len(disassembly.addresses)
    known[known] = disassembly.addresses[index[known]] == addresses[known]
    if not known.all():
        address = int(addresses[~known][0])
        raise QemuError(
            f"instruction counts: executed address {address:#x} is no instruction objdump knows "
            f"(in {disassembly.functions.get(address, 'an unknown function')})"
        )
    keep = ~disassembly.excluded[index]
    index, counts = index[keep], counts[keep]
    by_class = np.zeros(len(CLASSES), dtype=np.int64)
    np.add.at(by_class, disassembly.classes[index], counts)
    by_mnemonic = np.zeros(len(disassembly.mnemonic_names), dtype=np.int64)
    np.add.at(by_mnemonic, disassembly.mnemonic_ids[index], counts)
    return CallCount(
        int(by_class.sum()),
        {name: int(n) for name, n in zip(CLASSES, by_class.tolist(), strict=True)},
        {disassembly.mnemonic_names[i]: int(by_mnemonic[i]) for i in np.flatnonzero(by_mnemonic)},
    )


def run_qemu_counted(
    core: Core | str,
    elf: Path,
    workdir: Path,
    *,
    append: str = "",
    timeout: float = 60.0,
) -> tuple[subprocess.CompletedProcess[str], list[CallCount]]:
    """Run ``elf`` on ``core`` in ``workdir`` with the counting plugin; QEMU's result and every
    marked call's counts. QEMU's exit status is the caller's to judge (counts only when 0).
    Any ELF with the two marker functions will do (tests/qemu/test_counting.py builds one)."""
    core = get_core(core) if isinstance(core, str) else core
    disassembly = disassemble(core, elf)
    command = [
        *qemu_command(core, elf, append),
        *plugin_arguments(build_plugin(), disassembly.markers, "counts.bin"),
    ]
    try:
        done = subprocess.run(
            command, cwd=workdir, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        raise QemuTimeoutError(
            f"kernels_c on {core.name}: the counted run must finish within {timeout} s, it did not (QEMU killed)"
        ) from None
    if done.returncode != 0:
        return done, []
    counts = workdir / "counts.bin"
    if not counts.is_file():
        raise QemuError(
            f"kernels_c on {core.name}: QEMU did not load the counting plugin: {done.stderr.strip()}"
        )
    return done, parse_counts(counts.read_bytes(), disassembly)


# --- batches --------------------------------------------------------------------------------------


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
    "CLASSES",
    "CallCount",
    "CountedRun",
    "Disassembly",
    "InstructionCount",
    "build_plugin",
    "classify",
    "count_instructions",
    "disassemble",
    "macs_of",
    "run_batch_counted",
    "run_qemu_counted",
    "shape_of",
]
