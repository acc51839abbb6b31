"""The instructions of an executed block, and the TRM timing rules the timing layer adds to llvm-mca.

    insns = block_instructions(listing, start, count)      # from arm-none-eabi-objdump -d
    kinds = [kind_of(i) for i in insns]
    trm = memory_cycles(insns, core_model)                  # TRM cycles of each load/store, else None

Kinds: ``branch`` (B, BL, BX, CBZ, TBB, LE, WLS, ...: ends a block; not given to llvm-mca),
``loop_setup`` (DLS, DLSTP: no jump), ``load``/``store`` (single transfers; ``store_reg`` a
register-offset store), ``double`` (LDRD/STRD), ``multiple`` (LDM/STM/PUSH/POP/VLDM/VSTM/
VPUSH/VPOP), ``mla`` (multiply-accumulate, for the M3's 2-cycle MLA), ``other``. A POP or LDM
with PC in its list, or an LDR to PC, is a memory transfer that also jumps (``jumps`` true).

The load/store rule (Cortex-M3 TRM 3.3.1 / Cortex-M4 TRM 3.3.2 "Load/store timings", numbers in
isa_models.cortex_m.cores): LDR costs ``load_cycles`` (2), or ``pipelined_load_cycles`` (1) right after a
single load whose destination is not used in this instruction's address; STR with an immediate
offset ``store_cycles`` (1); a register-offset STR ``store_register_offset_cycles`` (2, or 1
pipelined after a load); LDRD/STRD ``double_transfer_cycles`` (3); LDM/STM/PUSH/POP
``multiple_transfer_base`` + N (N registers, a D register counting 2 words); and any transfer
whose address register the data-processing instruction just before wrote stalls
``address_dependency_stall`` (1) more.
"""

from __future__ import annotations

import functools
import re
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from isa_models.cortex_m.cores import CoreModel
from refsim.qemu.cores import Core
from refsim.qemu.disassembly import objdump_command
from refsim.qemu.errors import QemuError


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_INSN_LINE = re.compile(r"^\s*([0-9a-f]+):\t([0-9a-f]{4}(?: [0-9a-f]{4})?)\s*\t(\S+)[ \t]*([^;@]*)")
_CONDITIONS = _words("eq ne cs hs cc lo mi pl vs vc hi ls ge lt gt le al")
_BRANCHES = _words("b bl blx bx bxns blxns cbz cbnz tbb tbh le letp wls wlstp bf bfx bfl bflx bfcsel")
_LOOP_SETUP = _words("dls dlstp lctp")
_LOADS = _words(
    "ldr ldrb ldrh ldrsb ldrsh ldrt ldrbt ldrht ldrsbt ldrsht ldrex ldrexb ldrexh lda ldab ldah ldaex "
    "ldaexb ldaexh vldr"
)
_STORES = _words("str strb strh strt strbt strht strex strexb strexh stl stlb stlh stlex stlexb stlexh vstr")
_DOUBLES = _words("ldrd strd")
_MULTIPLES = _words(
    "ldm ldmia ldmdb ldmfd ldmea stm stmia stmdb stmea stmfd push pop vpush vpop vldm vldmia vldmdb vstm "
    "vstmia vstmdb"
)
_MLA = _words("mla mls")
_KNOWN = _BRANCHES | _LOADS | _STORES | _MULTIPLES | _DOUBLES | _MLA | _LOOP_SETUP
_NO_DEST = _words("cmp cmn tst teq it nop dmb dsb isb msr bkpt svc wfi wfe sev")
_ALIASES = {"ip": "r12", "fp": "r11", "sl": "r10", "sb": "r9"}
_REGISTER = re.compile(r"\b(r1[0-5]|r[0-9]|sp|lr|pc|ip|fp|sl|sb)\b")
_REGISTER_LIST = re.compile(r"\{([^}]*)\}")
_WIDTH = re.compile(r"\.[nw]$")  # llvm-mca-19 crashes on some explicit .w encodings (ldr.w rX, [rY], #4)
_ADDRESS_OPERAND = re.compile(r"\b[0-9a-f]+ <[^>]*>")


@dataclass(frozen=True)
class Insn:
    """One instruction as objdump prints it: address, size in bytes, mnemonic, operands."""

    address: int
    size: int
    mnemonic: str
    operands: str

    @property
    def text(self) -> str:
        return f"{self.mnemonic} {self.operands}".strip()


@functools.cache
def _listing(core_name: str, core: Core, elf: str, stamp: float) -> dict[int, Insn]:
    done = subprocess.run(objdump_command(core, Path(elf)), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise QemuError(f"objdump failed on {elf}: {done.stderr.strip()}")
    listing: dict[int, Insn] = {}
    for line in done.stdout.splitlines():
        m = _INSN_LINE.match(line)
        if m is None or m.group(3).startswith("."):
            continue
        address = int(m.group(1), 16)
        size = 4 if " " in m.group(2) else 2
        listing[address] = Insn(address, size, m.group(3).lower(), m.group(4).strip())
    return listing


def listing_of(core: Core, elf: Path) -> dict[int, Insn]:
    """Address → instruction for every instruction objdump decodes in ``elf`` (cached per file)."""
    return _listing(core.name, core, str(elf), elf.stat().st_mtime)


def block_instructions(listing: Mapping[int, Insn], start: int, count: int, size: int) -> tuple[Insn, ...]:
    """The ``count`` instructions of the block at ``start`` spanning ``size`` bytes."""
    out: list[Insn] = []
    address = start
    while address < start + size:
        insn = listing.get(address)
        if insn is None:
            raise QemuError(f"timing: executed address {address:#x} is no instruction objdump decodes")
        out.append(insn)
        address += insn.size
    if len(out) != count:
        raise QemuError(
            f"timing: block at {start:#x} has {count} instructions in QEMU, {len(out)} in objdump"
        )
    return tuple(out)


@functools.cache
def base_mnemonic(mnemonic: str) -> str:
    """Without width/data-type suffixes and condition: ``ldrbne.w`` → ``ldrb``, ``bne.n`` → ``b``."""
    base = mnemonic.split(".")[0]
    if base in _BRANCHES or base in _LOADS or base in _STORES or base in _MULTIPLES or base in _DOUBLES:
        return base
    if len(base) > 2 and base[-2:] in _CONDITIONS:
        stem = base[:-2]
        for candidate in (stem, stem[:-1] if stem.endswith("s") else stem):
            if candidate in _KNOWN:
                return candidate
    return base


def _registers(text: str) -> set[str]:
    found: set[str] = set()
    for match in _REGISTER_LIST.finditer(text):
        found |= _expand(match.group(1))
    for name in _REGISTER.findall(_REGISTER_LIST.sub("", text)):
        found.add(_ALIASES.get(name, name))
    return found


def _expand(register_list: str) -> set[str]:
    out: set[str] = set()
    for part in register_list.split(","):
        part = part.strip()
        if "-" in part:
            lo, hi = (p.strip() for p in part.split("-"))
            if lo[0] == hi[0] and lo[1:].isdigit() and hi[1:].isdigit():
                out |= {f"{lo[0]}{k}" for k in range(int(lo[1:]), int(hi[1:]) + 1)}
        elif part:
            out.add(_ALIASES.get(part, part))
    return out


def transfer_words(insn: Insn) -> int:
    """Words a multiple transfer moves: registers in its list, D registers counting two."""
    match = _REGISTER_LIST.search(insn.operands)
    if match is None:
        return 1
    regs = _expand(match.group(1))
    return sum(2 if r.startswith("d") else 1 for r in regs)


@functools.cache
def kind_of(insn: Insn) -> str:
    base = base_mnemonic(insn.mnemonic)
    if base in _BRANCHES:
        return "branch"
    if base in _LOOP_SETUP:
        return "loop_setup"
    if base in _MULTIPLES:
        return "multiple"
    if base in _DOUBLES:
        return "double"
    if base in _LOADS:
        return "load"
    if base in _STORES:
        bracket = insn.operands[insn.operands.find("[") :]
        return "store_reg" if len(_REGISTER.findall(bracket.split("]")[0])) > 1 else "store"
    if base in _MLA:
        return "mla"
    return "other"


def jumps(insn: Insn) -> bool:
    """Whether the instruction can leave the block by a jump (a branch, or a transfer to PC)."""
    kind = kind_of(insn)
    if kind == "branch":
        return True
    if kind in ("multiple", "load"):
        first = insn.operands.split("[")[0] if kind == "load" else insn.operands
        return "pc" in _registers(first)
    return False


def destinations(insn: Insn) -> set[str]:
    """Registers the instruction writes (first operand for data processing and loads; a load
    multiple's list)."""
    kind = kind_of(insn)
    if kind == "multiple":
        return _registers(insn.operands) if base_mnemonic(insn.mnemonic).startswith(("ldm", "pop")) else set()
    if kind in ("store", "store_reg", "branch", "loop_setup") or base_mnemonic(insn.mnemonic) in _NO_DEST:
        return set()
    first = insn.operands.split(",")[0]
    regs = _registers(first)
    if kind == "double" and insn.mnemonic.startswith("ldrd"):
        regs |= _registers(insn.operands.split(",")[1])
    return regs


def address_registers(insn: Insn) -> set[str]:
    kind = kind_of(insn)
    if kind == "multiple":
        base = base_mnemonic(insn.mnemonic)
        if base in ("push", "pop", "vpush", "vpop"):
            return {"sp"}
        return _registers(insn.operands.split(",")[0])
    if "[" in insn.operands:
        return _registers(insn.operands[insn.operands.find("[") :].split("]")[0])
    return set()


def memory_cycles(insns: Sequence[Insn], core: CoreModel) -> list[int | None]:
    """Each instruction's TRM cycles if it is a load/store (module docstring), else None."""
    out: list[int | None] = []
    previous: Insn | None = None
    for insn in insns:
        kind = kind_of(insn)
        cycles: int | None = None
        if kind in ("load", "store", "store_reg", "double", "multiple"):
            addr = address_registers(insn)
            prev_kind = kind_of(previous) if previous is not None else None
            after_load = prev_kind == "load" and previous is not None and not (destinations(previous) & addr)
            if kind == "load":
                cycles = core.pipelined_load_cycles if after_load else core.load_cycles
            elif kind == "store":
                cycles = core.store_cycles
            elif kind == "store_reg":
                cycles = core.pipelined_load_cycles if after_load else core.store_register_offset_cycles
            elif kind == "double":
                cycles = core.double_transfer_cycles
            else:
                cycles = core.multiple_transfer_base + transfer_words(insn)
            if prev_kind in ("other", "mla") and previous is not None and destinations(previous) & addr:
                cycles += core.address_dependency_stall
        out.append(cycles)
        previous = insn
    return out


@functools.cache
def mca_text(insn: Insn) -> str | None:
    """The instruction as llvm-mca gets it, or None when it is left out (a branch: the timing layer
    charges branches itself). A POP/LDM with PC loses PC from its list."""
    kind = kind_of(insn)
    if kind in ("branch", "loop_setup"):
        return None
    if jumps(insn):
        if kind == "load":
            return None
        match = _REGISTER_LIST.search(insn.operands)
        assert match is not None
        regs = [r.strip() for r in match.group(1).split(",") if r.strip() != "pc"]
        if not regs:
            return None
        operands = insn.operands[: match.start()] + "{" + ", ".join(regs) + "}" + insn.operands[match.end() :]
        return f"{insn.mnemonic} {operands}"
    return _ADDRESS_OPERAND.sub(".", f"{_WIDTH.sub('', insn.mnemonic)} {insn.operands}".strip())


__all__ = [
    "Insn",
    "address_registers",
    "base_mnemonic",
    "block_instructions",
    "destinations",
    "jumps",
    "kind_of",
    "listing_of",
    "mca_text",
    "memory_cycles",
    "transfer_words",
]
