"""The Cortex-M cores refsim estimates, as one frozen table: :data:`CORE_MODELS`.

Every timing figure is a named field with the Technical Reference Manual (TRM) section it
comes from in ``sources``; where a TRM publishes no figure the field's comment says the value
is a model assumption. ``Source.status`` says how far a source was checked
(:data:`SOURCE_STATUSES`): the M3/M4 tables against public copies (``url``), the rest are
``unverified`` (entered from the TRMs without a copy at hand; the M0+ TRM's table, the M7, M33,
M55 and M85 TRMs had no public copy in reach). The instruction-timed cycles (refsim/qemu/timing.py, docs/cost-model.md
"Instruction-timed cycles") time each executed block as

    cycles(block) = issue           llvm-mca's in-order/dual-issue schedule of the block's
                                    non-branch instructions (``llvm_mca_cpu``), or, on cores
                                    llvm has no model for (M0+), the TRM table below
                  + load_store      where ``load_store_rule == "trm"``: the TRM's time for each
                                    run of loads/stores replaces llvm-mca's for it (LDR 2,
                                    pipelined LDR 1, STR #imm 1, LDM/STM/PUSH/POP 1+N, ...)
                  + multiply        TRM multiply cycles llvm-mca lacks (M3: MLA/MLS 2)
                  + mve_overlap     where ``mve_pair_overlap``: an MVE load/store next to an MVE
                                    compute instruction runs its beats alongside it (dual-beat
                                    overlap, M55/M85 TRM "beat-wise execution"): each such
                                    adjacent pair takes 4 / ``mve_beats_per_tick`` cycles
                                    together instead of llvm-mca's two spans
                  + branch          ``branch_cycles`` per executed branch instruction
                  + branch_refill   per taken branch: ``taken_branch_refill`` (+1 when the target
                                    is a 32-bit instruction that is not word aligned, on cores
                                    with ``unaligned_target_refill``); LE of a low-overhead loop:
                                    ``loop_end_refill``; POP {..,PC}/LDR PC: ``load_pc_refill``;
                                    BL: ``call_extra_cycles`` more

and the system (isa_models/cortex_m/systems.py) adds memory wait states. Peak MAC/cycle: the int8
multiply-accumulates per cycle of the best instruction sequence (REFERENCE.md section 4).
"""

# No ``from __future__ import annotations`` here: typing.NamedTuple compiles every string
# annotation into a ForwardRef at import (~10 µs a field), which the estimate's cold start pays.
from dataclasses import dataclass
from typing import NamedTuple

from isa_models.errors import UnknownNameError

#: ISA tiers, poorest first (the same names as ``refsim conformance --isa``).
TIERS: tuple[str, ...] = ("scalar", "dsp", "mve")


#: How far a fact's source was checked (``Source.status``):
#: ``confirmed``  read in a public copy of the document (or of its vendor's code that encodes it), ``url``;
#: ``corrected``  the value was changed to what that copy states (the old value in ``fact``);
#: ``unverified`` entered from the named document without a copy at hand; no public copy was found;
#: ``model``      refsim's own definition or assumption, no document states it.
SOURCE_STATUSES: tuple[str, ...] = ("confirmed", "corrected", "unverified", "model")


@dataclass(frozen=True)
class Source:
    """Where a fact comes from: a document and the section (or table) that states it, how far
    that was checked (:data:`SOURCE_STATUSES`), the public copy it was checked against, and the
    table fields (``SystemPreset`` / ``CoreModel`` names) it backs."""

    document: str
    section: str
    fact: str
    status: str = "unverified"
    url: str = ""
    fields: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        assert self.status in SOURCE_STATUSES, (self.document, self.status)
        assert self.status not in ("confirmed", "corrected") or self.url, (self.document, "no url")


class CoreModel(NamedTuple):
    """One Cortex-M core: architecture, tier, FPU, the pipeline facts the timing layer adds to
    llvm-mca, and how QEMU runs its code.

    ``qemu_core``: the refsim.qemu core whose board runs this core's code (M0+ runs ARMv6-M code
    built with ``gcc_mcpu`` on the M3 board, since v6-M is a subset of v7-M; M85 runs the M55
    MVE build). ``llvm_mca_cpu``: the ``-mcpu`` of llvm-mca-19, None when llvm has no
    scheduling model (then the TRM table fields time every instruction).
    """

    name: str
    arch: str
    tier: str
    fpu: str  # "none", "sp" (single precision), "dp" (single and double precision)
    pipeline_stages: int
    issue_width: int
    branch_predictor: bool
    peak_macs_per_cycle: float
    llvm_mca_cpu: str | None
    qemu_core: str
    gcc_mcpu: str
    # branches (taken: 1 + refill cycles)
    branch_cycles: int
    taken_branch_refill: int
    unaligned_target_refill: int
    loop_end_refill: int | None  # LE of the low-overhead-branch extension; None: no LOB
    load_pc_refill: int  # refill after POP {..,PC} / LDR PC (the load itself is a load/store)
    call_extra_cycles: int  # BL beyond branch_cycles + taken_branch_refill
    # loads and stores
    load_store_rule: str  # "trm": the fields below replace llvm-mca's time; "llvm": llvm-mca's
    load_cycles: int
    pipelined_load_cycles: int
    store_cycles: int
    store_register_offset_cycles: int
    double_transfer_cycles: int  # LDRD/STRD
    multiple_transfer_base: int  # LDM/STM/PUSH/POP: base + one per register
    address_dependency_stall: int  # an address computed by the instruction just before
    # multiplies and the rest (used where llvm-mca has no model, and for M3's MLA)
    alu_cycles: int
    multiply_cycles: int
    multiply_accumulate_cycles: int
    mve_beats_per_tick: int | None
    mve_beats_per_instruction: int | None  # a 128-bit vector instruction is 4 beats of 32 bits
    mve_pair_overlap: bool  # add the beat overlap of adjacent MVE load/store + MVE compute pairs
    sources: tuple[Source, ...]

    @property
    def tiers(self) -> tuple[str, ...]:
        """The tiers whose code this core runs: its own and every poorer one."""
        return TIERS[: TIERS.index(self.tier) + 1]


_M0P_TRM = "Arm Cortex-M0+ Processor Technical Reference Manual (DDI 0484)"
_M3_TRM = "Arm Cortex-M3 Processor Technical Reference Manual r2p1 (DDI 0337)"
_M4_TRM = "Arm Cortex-M4 Processor Technical Reference Manual r0p1 (DDI 0439)"
_M7_TRM = "Arm Cortex-M7 Processor Technical Reference Manual (DDI 0489)"
_M33_TRM = "Arm Cortex-M33 Processor Technical Reference Manual (100230)"
_M55_TRM = "Arm Cortex-M55 Processor Technical Reference Manual (101051)"
_M85_TRM = "Arm Cortex-M85 Processor Technical Reference Manual (101924)"
_LLVM = "LLVM 19 llvm/lib/Target/ARM (ARM.td processor definitions, ARMSchedule*.td)"

_V7M_LOAD_STORE = (
    "LDR 2 cycles; a following LDR/STR whose address does not use the loaded register pipelines "
    "(one cycle less); STR Rx,[Ry,#imm] always 1 cycle; nothing pipelines after a register-offset "
    "STR; LDRD/STRD not pipelined; an address computed by the preceding data-processing "
    "instruction stalls one cycle (no forwarding path)"
)

CORE_MODELS: dict[str, CoreModel] = {
    core.name: core
    for core in (
        CoreModel(
            name="cortex-m0plus",
            arch="armv6-m",
            tier="scalar",
            fpu="none",
            pipeline_stages=2,
            issue_width=1,
            branch_predictor=False,
            peak_macs_per_cycle=0.5,  # MULS 1 + ADDS 1 per MAC (single-cycle multiplier option)
            llvm_mca_cpu=None,  # llvm-mca-19: "unable to find instruction-level scheduling information"
            qemu_core="cortex-m3",
            gcc_mcpu="cortex-m0plus",
            branch_cycles=1,
            taken_branch_refill=1,  # B taken 2, BL 3 (= 2 + its second half), BX/BLX 2
            unaligned_target_refill=0,
            loop_end_refill=None,
            load_pc_refill=2,  # M0+ TRM: POP {..,PC} 3+N
            call_extra_cycles=1,  # M0+ TRM: BL 3 cycles
            load_store_rule="trm",
            load_cycles=2,
            pipelined_load_cycles=2,  # the M0+ does not pipeline neighbouring loads
            store_cycles=2,
            store_register_offset_cycles=2,
            double_transfer_cycles=3,  # no LDRD in v6-M; kept for completeness of the rule
            multiple_transfer_base=1,
            address_dependency_stall=0,
            alu_cycles=1,
            multiply_cycles=1,
            multiply_accumulate_cycles=1,
            mve_beats_per_tick=None,
            mve_beats_per_instruction=None,
            mve_pair_overlap=False,
            sources=(
                Source(
                    _M0P_TRM,
                    "3.3 Instruction set summary, Table 3-1 Cortex-M0+ instruction summary",
                    "ALU 1; LDR/STR 2; LDM/STM/PUSH 1+N; POP {..,PC} 3+N; B taken 2, not taken 1; "
                    "BL 3; BX/BLX 2; MULS 1 (fast multiplier)",
                ),
                Source(_M0P_TRM, "1.2 Features", "2-stage pipeline, ARMv6-M, no FPU"),
                Source(
                    _LLVM, "ARM.td cortex-m0plus", "no scheduling model (ProcessorModel with NoSchedModel)"
                ),
            ),
        ),
        CoreModel(
            name="cortex-m3",
            arch="armv7-m",
            tier="scalar",
            fpu="none",
            pipeline_stages=3,
            issue_width=1,
            branch_predictor=False,
            peak_macs_per_cycle=0.5,  # MLA 2 cycles
            llvm_mca_cpu="cortex-m3",  # llvm reuses its Cortex-M4 model for the M3
            qemu_core="cortex-m3",
            gcc_mcpu="cortex-m3",
            branch_cycles=1,
            taken_branch_refill=2,  # TRM: 1 + P, P = 1..3; P = 2 base, +1 for an unaligned 32-bit target
            unaligned_target_refill=1,
            loop_end_refill=None,
            load_pc_refill=2,
            call_extra_cycles=0,
            load_store_rule="trm",
            load_cycles=2,
            pipelined_load_cycles=1,
            store_cycles=1,
            store_register_offset_cycles=2,
            double_transfer_cycles=3,
            multiple_transfer_base=1,
            address_dependency_stall=1,
            alu_cycles=1,
            multiply_cycles=1,
            multiply_accumulate_cycles=2,
            mve_beats_per_tick=None,
            mve_beats_per_instruction=None,
            mve_pair_overlap=False,
            sources=(
                Source(
                    _M3_TRM,
                    "3.3 Instruction set summary, Table 3-1 Cortex-M3 instruction set summary",
                    "B 1+P (P pipeline refill, 1 to 3 by target alignment and width); LDR 2; "
                    "LDM/STM 1+N; MUL 1; MLA/MLS 2 (checked in a public copy of the table: P's 1 to 3, "
                    "MUL 1, MLA/MLS 2)",
                    "confirmed",
                    "https://os.mbed.com/media/uploads/4180_1/cortexm3_instructions.htm",
                    ("taken_branch_refill", "multiply_cycles", "multiply_accumulate_cycles"),
                ),
                Source(_M3_TRM, "3.3.1 Load/store timings", _V7M_LOAD_STORE),
                Source(_LLVM, "ARM.td cortex-m3", 'ProcessorModel<"cortex-m3", CortexM4Model>'),
            ),
        ),
        CoreModel(
            name="cortex-m4",
            arch="armv7e-m",
            tier="dsp",
            fpu="sp",
            pipeline_stages=3,
            issue_width=1,
            branch_predictor=False,
            peak_macs_per_cycle=2.0,  # SMLAD: two 16x16 MACs in 1 cycle (operands SXTB16-extended)
            llvm_mca_cpu="cortex-m4",
            qemu_core="cortex-m4",
            gcc_mcpu="cortex-m4",
            branch_cycles=1,
            taken_branch_refill=2,
            unaligned_target_refill=1,
            loop_end_refill=None,
            load_pc_refill=2,
            call_extra_cycles=0,
            load_store_rule="trm",
            load_cycles=2,
            pipelined_load_cycles=1,
            store_cycles=1,
            store_register_offset_cycles=2,
            double_transfer_cycles=3,
            multiple_transfer_base=1,
            address_dependency_stall=1,
            alu_cycles=1,
            multiply_cycles=1,
            multiply_accumulate_cycles=1,
            mve_beats_per_tick=None,
            mve_beats_per_instruction=None,
            mve_pair_overlap=False,
            sources=(
                Source(
                    _M4_TRM + "; TI SWCU192 Table 3-25 (the M4F TRM's table)",
                    "3.3.1 Cortex-M4 instruction set summary, Table 3-1",
                    "B 1+P (P = 1..3 pipeline refill); LDR 2; LDM/STM 1+N; SMLAD/SMUAD/MLA 1; SXTB16 1 "
                    "(checked: MUL, MLA, MLS and the long multiplies 1, divide 2 to 12)",
                    "confirmed",
                    "https://ti.com/document-viewer/lit/html/SWCU192/GUID-86361CC6-93E0-4EA8-90CF-AF757C93D80D",
                    ("multiply_cycles", "multiply_accumulate_cycles"),
                ),
                Source(
                    _M4_TRM + "; TI SWCU192 (the M4F TRM's load/store timings)",
                    "3.3.2 Load/store timings",
                    _V7M_LOAD_STORE + " (checked: STR Rx,[Ry,#imm] one cycle; LDRs pipelined when "
                    "possible; the address-dependency stall; and LDR PC,[any] at least 2 for the load + 3 "
                    "for the pipeline reload, where load_pc_refill takes 2: not changed, a timing change "
                    "re-fits the calibrations)",
                    "confirmed",
                    "https://ti.com/document-viewer/lit/html/SWCU192/GUID-43FDD803-0838-46E1-A6C0-28C71F822F9C.html",
                    ("store_cycles", "pipelined_load_cycles", "address_dependency_stall"),
                ),
                Source(_LLVM, "ARMScheduleM4.td", "in-order, 1 issue/cycle, loads latency 2, no LDM 1+N"),
            ),
        ),
        CoreModel(
            name="cortex-m7",
            arch="armv7e-m",
            tier="dsp",
            fpu="dp",
            pipeline_stages=6,
            issue_width=2,
            branch_predictor=True,
            peak_macs_per_cycle=2.0,  # one SMLAD per cycle (one MAC pipe), loads dual-issued beside it
            llvm_mca_cpu="cortex-m7",
            qemu_core="cortex-m7",
            gcc_mcpu="cortex-m7",
            branch_cycles=1,
            taken_branch_refill=0,  # BTAC-predicted taken branches fold; mispredicts not modeled
            unaligned_target_refill=0,
            loop_end_refill=None,
            load_pc_refill=0,
            call_extra_cycles=0,
            load_store_rule="llvm",  # ARMScheduleM7.td models both load pipes and dual issue
            load_cycles=1,
            pipelined_load_cycles=1,
            store_cycles=1,
            store_register_offset_cycles=1,
            double_transfer_cycles=1,
            multiple_transfer_base=1,
            address_dependency_stall=0,
            alu_cycles=1,
            multiply_cycles=1,
            multiply_accumulate_cycles=1,
            mve_beats_per_tick=None,
            mve_beats_per_instruction=None,
            mve_pair_overlap=False,
            sources=(
                Source(
                    _M7_TRM,
                    "1.2 Features; 1.3 Interfaces (AXIM, TCM)",
                    "6-stage superscalar in-order pipeline, dual issue, branch prediction with a BTAC, "
                    "64-bit instruction fetch, FPv5 single and double precision (optional)",
                ),
                Source(
                    _LLVM,
                    "ARMScheduleM7.td",
                    "IssueWidth 2; two ALU pipes, one MAC pipe, load/store pipes; the TRM publishes no "
                    "per-instruction cycle table, so llvm-mca's schedule (dual-issue pairing included) stands",
                ),
            ),
        ),
        CoreModel(
            name="cortex-m33",
            arch="armv8-m.main",
            tier="dsp",
            fpu="sp",
            pipeline_stages=3,
            issue_width=1,
            branch_predictor=False,
            peak_macs_per_cycle=2.0,
            llvm_mca_cpu="cortex-m33",  # llvm reuses its Cortex-M4 model for the M33
            qemu_core="cortex-m33",
            gcc_mcpu="cortex-m33",
            branch_cycles=1,
            taken_branch_refill=2,
            unaligned_target_refill=1,
            loop_end_refill=None,
            load_pc_refill=2,
            call_extra_cycles=0,
            load_store_rule="trm",
            load_cycles=2,
            pipelined_load_cycles=1,
            store_cycles=1,
            store_register_offset_cycles=2,
            double_transfer_cycles=3,
            multiple_transfer_base=1,
            address_dependency_stall=1,
            alu_cycles=1,
            multiply_cycles=1,
            multiply_accumulate_cycles=1,
            mve_beats_per_tick=None,
            mve_beats_per_instruction=None,
            mve_pair_overlap=False,
            sources=(
                Source(
                    _M33_TRM,
                    "1.2 Features",
                    "3-stage pipeline, Armv8-M Mainline, optional DSP extension and FPv5 single precision",
                ),
                Source(
                    _M4_TRM,
                    "3.3.1, 3.3.2 (rule borrowed)",
                    "the M33 TRM publishes no instruction timing table; the M4's 3-stage rules are used",
                ),
            ),
        ),
        CoreModel(
            name="cortex-m55",
            arch="armv8.1-m.main",
            tier="mve",
            fpu="dp",
            pipeline_stages=4,
            issue_width=1,
            branch_predictor=False,
            peak_macs_per_cycle=8.0,  # VMLADAV.S8: 16 MACs over 4 beats, 2 beats per cycle
            llvm_mca_cpu="cortex-m55",
            qemu_core="cortex-m55",
            gcc_mcpu="cortex-m55",
            branch_cycles=1,
            taken_branch_refill=2,  # model assumption: no published figure (4-stage, no predictor)
            unaligned_target_refill=0,
            loop_end_refill=0,  # LE hits the loop-branch cache after the first iteration
            load_pc_refill=2,
            call_extra_cycles=0,
            load_store_rule="llvm",  # ARMScheduleM55.td models the MVE load and MAC pipes and beats
            load_cycles=1,
            pipelined_load_cycles=1,
            store_cycles=1,
            store_register_offset_cycles=1,
            double_transfer_cycles=1,
            multiple_transfer_base=1,
            address_dependency_stall=0,
            alu_cycles=1,
            multiply_cycles=1,
            multiply_accumulate_cycles=1,
            mve_beats_per_tick=2,
            mve_beats_per_instruction=4,
            mve_pair_overlap=False,  # ARMScheduleM55.td already overlaps them
            sources=(
                Source(
                    _M55_TRM,
                    "1.2 Features; 4 (Helium / M-profile Vector Extension) beat-wise execution",
                    "4-stage pipeline; dual-beat MVE (2 beats of 32 bits per tick, a 128-bit vector "
                    "instruction in 2 ticks), consecutive MVE instructions on different pipes overlap; "
                    "Low Overhead Branch extension with a loop-branch cache",
                ),
                Source(
                    "LLVM D66005 (ARM.td MVEVectorCostFactor)",
                    "mve1beat / mve2beat / mve4beat subtarget features",
                    "MVE instructions modelled as 2 beats per tick by default (cost factor 2)",
                    "confirmed",
                    "https://reviews.llvm.org/D66005",
                    ("mve_beats_per_tick",),
                ),
                Source(
                    _LLVM,
                    "ARMScheduleM55.td",
                    "MVE instructions occupy their pipe 2 cycles; loads and MACs on separate resources "
                    "overlap (beat overlap is in the model: measured 4 cycles for VLDRB,VLDRB,VMLADAVA)",
                ),
            ),
        ),
        CoreModel(
            name="cortex-m85",
            arch="armv8.1-m.main",
            tier="mve",
            fpu="dp",
            pipeline_stages=7,
            issue_width=2,
            branch_predictor=True,
            peak_macs_per_cycle=8.0,
            llvm_mca_cpu="cortex-m85",
            qemu_core="cortex-m55",
            gcc_mcpu="cortex-m55",  # QEMU 7.2 has no M85; its code path is the M55 MVE build
            branch_cycles=1,
            taken_branch_refill=0,  # predicted taken branches fold (branch predictor); mispredicts not modeled
            unaligned_target_refill=0,
            loop_end_refill=0,
            load_pc_refill=0,
            call_extra_cycles=0,
            load_store_rule="llvm",
            load_cycles=1,
            pipelined_load_cycles=1,
            store_cycles=1,
            store_register_offset_cycles=1,
            double_transfer_cycles=1,
            multiple_transfer_base=1,
            address_dependency_stall=0,
            alu_cycles=1,
            multiply_cycles=1,
            multiply_accumulate_cycles=1,
            mve_beats_per_tick=2,
            mve_beats_per_instruction=4,
            mve_pair_overlap=True,  # ARMScheduleM85.td serializes VLDR and VMLADAV (4 cycles; M55 model 2)
            sources=(
                Source(
                    _M85_TRM,
                    "1.2 Features",
                    "7-stage dual-issue in-order pipeline, branch prediction, dual-beat MVE, LOB, "
                    "L1 instruction and data caches, TCMs",
                ),
                Source(
                    _LLVM,
                    "ARMScheduleM85.td",
                    "IssueWidth 2; llvm-mca-19 times VLDRB.U8 + VMLADAVA.S8 at 4 cycles (2 + 2, no beat "
                    "overlap) where the M55 model gives 2: the overlap is added (mve_pair_overlap)",
                ),
            ),
        ),
    )
}


def get_core_model(name: str) -> CoreModel:
    """The core named ``name`` (``cortex-m4``); a one-line error listing the valid names otherwise."""
    try:
        return CORE_MODELS[name]
    except KeyError:
        raise UnknownNameError("core", name, tuple(CORE_MODELS)) from None


__all__ = ["CORE_MODELS", "SOURCE_STATUSES", "TIERS", "CoreModel", "Source", "get_core_model"]
