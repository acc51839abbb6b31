"""Instruction classes: every instruction objdump prints, by mnemonic and operands, in one of
:data:`CLASSES` (the classes instruction counting reports; docs/kernels_c.md, "Instruction
counting").

Classes: ``load_store`` (LDR/STR/LDM/STM/PUSH/POP/PLD and the FP register
loads and stores), ``mac`` (MUL, MLA, SMLAD, SMLAL, SMUL*, ...: every multiply),
``alu`` (all other integer data processing, SXTB16, SSAT, the v8.1-M shifts and
conditional selects), ``branch`` (B, BL, BX, CBZ, TBB, the low-overhead loop instructions
DLS/WLS/LE/LETP), ``mve_load_store`` (VLDR*/VSTR*/VLD2x/VST4x on Q registers), ``mve_mac``
(every MVE multiply: VMLADAV, VMLAV, VMLA, VMUL, VQDMULH, VQRDMULH, ...), ``mve_other`` (every
other instruction on Q registers, VCTP and VPT/VPST), ``other`` (IT, NOP, barriers, system
registers, scalar FP arithmetic).
"""

from __future__ import annotations

import re

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


__all__ = ["CLASSES", "classify", "normalize"]
