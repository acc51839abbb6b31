"""Hostile .pte files: every corruption ends in a `RefsimError` or a run, in bounded time and memory.

This module is also the corruption engine that benchmarks/fuzz_pte.py drives for long
campaigns. It lives under tests/ on purpose: Hypothesis harvests the literal constants of
every non-test module loaded in a process into all its strategies
(hypothesis.internal.constants_ast), so an engine full of 0x7FFFFFFF-like values outside
tests/ would steer the derandomized examples of unrelated test modules.

Valid programs (the bundled KWS model, the mixed, conv-family and other cortex_m fixtures, fp32
fixtures) are corrupted two ways, 1-4 mutations per file:

- **bytes**: bit flips, byte and 16/32/64-bit overwrites (aligned or not, with the values a
  flatbuffer or a size field trusts: 0, 0x7FFFFFFF, 2^32, 2^64 - 1, ...), truncation, inserted
  and deleted bytes, random spans, and int32 overwrites inside the segment data (weights,
  multipliers, shifts);
- **meaning**: the program is decoded, changed and written again with `write_program`
  (``validate=False``): tensor sizes, rank, dim_order and dtype, an op's arguments swapped or
  re-pointed, scalars of the wrong kind or of extreme value, a JumpFalseCall that loops
  forever, out-of-range op indices, unknown or wrong operator names, arenas shrunk or huge,
  constant indices changed, huge numels (with the arena grown to fit), allocations moved,
  method inputs/outputs re-pointed, moves, frees, dropped instructions, NaN or infinite I/O
  quantization constants.

Each case goes through `Program.load`, ``program.method()`` (with the reports `refsim run`
makes: kernels, MACs, scratch) and ``execute`` with random valid inputs (`run_case`). It must
end in a `RefsimError` subclass or run, never in another exception, within `SECONDS_PER_CASE`
(a SIGALRM timer is the net under it). A corruption that leaves the program and its constants
unchanged must compute exactly what the original computes. Named cases pin the error each
classic corruption gives.

Memory: the seeded campaign and the huge-size cases run benchmarks/fuzz_pte.py in a subprocess
whose address space is capped (RLIMIT_AS at its size plus `HEADROOM_MB`), so an unbounded
allocation would be a MemoryError there; the subprocess timeout is a second hang net.
Corrupt files through ``refsim run``/``refsim inspect`` are in test_cli.py. Counts print with
``pytest -s``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import random
import re
import resource
import signal
import subprocess
import sys
import time
import traceback
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from refsim.errors import RefsimError
from refsim.ops.registry import all_ops
from refsim.pte import ProgramError, ProgramFile, load_program, write_program
from refsim.pte import model as m
from refsim.runtime import Program, TensorRef

ROOT = Path(__file__).resolve().parents[2]
MODELS_DIR = ROOT / "examples" / "models"
FIXTURES = ROOT / "tests" / "fixtures" / "pte"

#: The files the tests corrupt: one real model, the mixed fixture, the conv family, a sample of
#: the other cortex_m fixtures and of the fp32 (portable) ones.
TEST_CORPUS = {
    "kws": MODELS_DIR / "kws.pte",
    "cm_mixed": FIXTURES / "cm_mixed.pte",
    **{p.stem: p for p in sorted(FIXTURES.glob("cm_conv_*.pte"))},
    **{name: FIXTURES / f"{name}.pte" for name in ("cm_binary", "cm_pooling_nhwc", "cm_rows", "qp_linear")},
    **{f"fp32/{n}": FIXTURES / "fp32" / f"{n}.pte" for n in ("linear", "conv2d", "add_sub_alpha", "mean")},
}
#: benchmarks/fuzz_pte.py: every bundled model and fixture.
FULL_CORPUS = {
    **{p.stem: p for p in sorted(MODELS_DIR.glob("*.pte"))},
    **{p.stem: p for p in sorted(FIXTURES.glob("*.pte"))},
    **{f"fp32/{p.stem}": p for p in sorted((FIXTURES / "fp32").glob("*.pte"))},
}

#: A case slower than this fails the tests: the bound catches a hang, not slowness (their slowest:
#: a jump loop in kws, whose 1000 passes the instruction bound allows take ~1.2 s on an idle
#: machine and 6 s on a shared one with eight jobs on two cores). benchmarks/fuzz_pte.py allows
#: more by default: the full corpus has bigger models (a loop in ic takes ~5 s idle).
SECONDS_PER_CASE = 20.0
#: The SIGALRM safety net per case.
ALARM_SECONDS = 60.0


#: Overwrite values: what offsets, vector lengths and size fields trust.
INTERESTING = (
    *(0, 1, 2, 3, 4, 7, 8, 15, 16, 0x7F, 0x80, 0xFF, 0x100, 0x7FFF, 0x8000, 0xFFFF, 0x10000),
    *(0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 1 << 32, (1 << 63) - 1, 1 << 63, (1 << 64) - 1),
)
BYTE_KINDS = ("bit", "byte", "u16", "u32", "u64", "truncate", "insert", "delete", "span", "data")
SEMANTIC_KINDS = (
    *("sizes", "rank", "dim_order", "scalar_type", "huge_numel", "allocation", "data_buffer_idx"),
    *("swap_args", "arg_index", "op_index", "scalar_kind", "scalar_value", "jump_loop", "operator_name"),
    *("arena", "io", "move", "free", "drop_instruction", "io_quant"),
)
SIZES = (0, 1, 2, 3, -1, 255, 65536, (1 << 31) - 1)  # -1: the old size plus one
#: Int values: int8 edges first (the first 17 are small enough for an offset), then int32/int64.
INTS = (
    *(0, 1, -1, 2, 7, 31, 32, 63, 64, -31, -32, 127, 128, 255, 256, -128, -129),
    *((1 << 31) - 1, -(1 << 31), 1 << 31, (1 << 63) - 1, -(1 << 63), 1 << 40),
)
#: Double values: NaN, infinities, zeros, the smallest float32 subnormal, the largest double.
DOUBLES = (
    *(math.nan, math.inf, -math.inf, 0.0, -0.0, float(np.finfo(np.float32).smallest_subnormal)),
    *(sys.float_info.max, -1.0, 0.5),
)
#: A mutation: (kind, a, b, c); byte kinds read a = where, b = value.
Mutation = tuple[str, int, int, int]


# -- byte corruption -------------------------------------------------------------------------


def mutate_bytes(data: bytes, kind: str, where: int, value: int) -> bytes:
    buf = bytearray(data)
    n = len(buf)
    if n == 0:
        return data
    pos = (where >> 1) % n
    if kind == "bit":
        buf[pos] ^= 1 << (value % 8)
    elif kind == "byte":
        buf[pos] = value & 0xFF
    elif kind in ("u16", "u32", "u64", "data"):
        width = {"u16": 2, "u32": 4, "u64": 8, "data": 4}[kind]
        if kind == "data":  # inside the segments: constant tensors (weights, multipliers, shifts)
            base = int.from_bytes(buf[24:32], "little") if n >= 32 and buf[8:12] == b"eh00" else 0
            if not 0 < base < n:
                return data
            pos = base + (where >> 1) % (n - base)
        if not where & 1:  # aligned, as flatbuffer fields are
            pos -= pos % width
        buf[pos : pos + width] = (value % (1 << 8 * width)).to_bytes(width, "little")[: n - pos]
    elif kind == "truncate":
        del buf[pos:]
    elif kind == "insert":
        buf[pos:pos] = bytes([value >> 8 & 0xFF]) * (1 + value % 16)
    elif kind == "delete":
        del buf[pos : pos + 1 + value % 16]
    elif kind == "span":
        length = min(1 + value % 64, n - pos)
        buf[pos : pos + length] = random.Random(value).randbytes(length)
    else:
        raise ValueError(f"unknown byte mutation {kind!r}")
    return bytes(buf)


# -- semantic corruption: decode, change, write again -----------------------------------------


def _pick(seq, k: int):
    return seq[k % len(seq)]


def main_plan_index(program: m.Program) -> int:
    """The method with instructions (``forward``), not one of the constant methods."""
    for i, plan in enumerate(program.execution_plan):
        if any(c.instructions for c in plan.chains):
            return i
    return 0


def write_variant(pf: ProgramFile, program: m.Program) -> bytes:
    """``program`` with ``pf``'s constants and segments, unchecked; b"" if it cannot be encoded."""
    extra = [pf.segment_data(i) for i in range(1, len(pf.segments))]
    try:
        return write_program(program, pf.constants(), segments=extra, validate=False)
    except ProgramError:  # a value does not fit its field (an int64 beyond 2^63, ...)
        return b""


def replace_plan(pf: ProgramFile, change, index: int | None = None) -> bytes:
    """Write ``pf`` with ``change(plan) -> plan`` applied to its main method (or plan ``index``)."""
    program = pf.program
    plans = list(program.execution_plan)
    i = main_plan_index(program) if index is None else index
    plans[i] = change(plans[i])
    return write_variant(pf, dataclasses.replace(program, execution_plan=tuple(plans)))


def _tensor_mutation(plan: m.ExecutionPlan, values: list, kind: str, a: int, b: int, c: int) -> dict:
    R = dataclasses.replace
    tensors = [i for i, v in enumerate(values) if isinstance(v, m.Tensor)]
    pool = {
        "data_buffer_idx": [i for i in tensors if values[i].data_buffer_idx > 0],
        "allocation": [i for i in tensors if values[i].allocation is not None],
    }.get(kind) or tensors
    if not pool:
        return {}
    index = _pick(pool, a)
    t: m.Tensor = values[index]
    rank = len(t.sizes)
    changes: dict = {}
    if kind == "sizes":
        sizes = list(t.sizes) or [1]
        d, choice = b % len(sizes), _pick(SIZES, c)
        sizes[d] = sizes[d] + 1 if choice == -1 else choice
        t = R(t, sizes=tuple(sizes), dim_order=t.dim_order if t.sizes else (0,))
    elif kind == "rank":
        if b % 2 and rank:
            drop = t.dim_order[-1]
            t = R(
                t,
                sizes=tuple(s for k, s in enumerate(t.sizes) if k != drop),
                dim_order=tuple(o - (o > drop) for o in t.dim_order[:-1]),
            )
        else:
            t = R(t, sizes=(*t.sizes, 1), dim_order=(*t.dim_order, rank))
    elif kind == "dim_order":
        order = random.Random(b).sample(range(rank), rank)
        if c % 5 == 0 and rank:
            order[0] = order[-1] if rank > 1 else 1  # not a permutation
        t = R(t, dim_order=tuple(order))
    elif kind == "scalar_type":
        t = R(t, scalar_type=_pick(list(m.ScalarType), b))
    elif kind == "huge_numel":
        big = _pick(((1 << 31) - 1, 1 << 28, 1 << 20, 1 << 16), b)
        sizes = (big,) * max(1, min(rank, 1 + c % 3))
        t = R(t, sizes=sizes, dim_order=tuple(range(len(sizes))))
        arenas = list(plan.non_const_buffer_sizes)
        if c % 2 and t.allocation is not None and 0 < t.allocation.memory_id < len(arenas):
            end = t.allocation.offset + t.nbytes  # grow the arena to fit: only the 4 GiB cap stops it
            arenas[t.allocation.memory_id] = max(arenas[t.allocation.memory_id], end)
            changes["non_const_buffer_sizes"] = tuple(arenas)
    elif kind == "allocation":
        mode = b % 5
        if mode == 0 or t.allocation is None:
            t = R(t, allocation=m.Allocation(1, c % (1 << 12)))
        elif mode == 1:
            t = R(t, allocation=m.Allocation(t.allocation.memory_id, _pick(INTS[:17], c) % (1 << 32)))
        elif mode == 2:
            t = R(t, allocation=m.Allocation(c % 4, t.allocation.offset))
        elif mode == 3:
            t = R(t, allocation=None)
        else:
            t = R(t, allocation=m.Allocation(t.allocation.memory_id, t.allocation.offset + 1 + c % 64))
    else:  # data_buffer_idx
        n_constants = max((values[i].data_buffer_idx for i in tensors), default=0)
        t = R(t, data_buffer_idx=b % (n_constants + 3))
    values[index] = t
    return changes


def _scalar_mutation(values: list, kind: str, a: int, b: int, c: int) -> None:
    scalars = [i for i, v in enumerate(values) if not isinstance(v, m.Tensor)]
    if not scalars:
        return
    index = _pick(scalars, a)
    v = values[index]
    if kind == "scalar_kind":
        values[index] = _pick(
            (
                *(m.Int(c % 7), m.Double(0.5), m.Bool(True), m.Null(), m.String("x"), m.IntList(())),
                *(m.DoubleList((1.0,)), m.BoolList((True,)), m.TensorList(())),
                m.Tensor(m.ScalarType.INT8, (1,), (0,)),
            ),
            b,
        )
    elif isinstance(v, m.Double):
        values[index] = m.Double(_pick(DOUBLES, b))
    elif isinstance(v, m.Bool):
        values[index] = m.Bool(not v.value)
    elif isinstance(v, m.DoubleList) and v.items:
        items = list(v.items)
        items[c % len(items)] = _pick(DOUBLES, b)
        values[index] = m.DoubleList(tuple(items))
    elif isinstance(v, m.IntList):
        items = list(v.items)
        if b % 3 == 0 and items:
            items.pop()
        elif b % 3 == 1:
            items.append(items[0] if items else 0)
        elif items:
            items[c % len(items)] = c % len(values)
        values[index] = m.IntList(tuple(items))
    else:
        values[index] = m.Int(_pick(INTS, b))


def _call_mutation(plan: m.ExecutionPlan, instructions: list, values: list, kind, a, b, c) -> None:
    calls = [i for i, ins in enumerate(instructions) if isinstance(ins, m.KernelCall)]
    if not calls:
        return
    position = _pick(calls, a)
    call = instructions[position]
    args = list(call.args)
    if kind == "swap_args" and args:
        i, j = b % len(args), c % len(args)
        args[i], args[j] = args[j], args[i]
    elif kind == "arg_index" and args:
        args[b % len(args)] = c % (len(values) + 1)  # one past the end sometimes
    elif kind == "op_index":
        choice = _pick((len(plan.operators), -1, (1 << 31) - 1, None), b)
        op_index = c % max(len(plan.operators), 1) if choice is None else choice
        instructions[position] = dataclasses.replace(call, op_index=op_index)
        return
    instructions[position] = dataclasses.replace(call, args=tuple(args))


def _io_quant_mutation(pf: ProgramFile, a: int, b: int) -> bytes:
    """A constant method (``forward_input0_scale`` ...) returns a NaN, an infinity, a string..."""
    plans = pf.program.execution_plan
    constants = [
        i
        for i, p in enumerate(plans)
        if not any(ch.instructions for ch in p.chains)
        and len(p.outputs) == 1
        and p.outputs[0] < len(p.values)
    ]
    if not constants:
        return b""
    replacement = _pick(
        (
            *(
                m.Double(math.nan),
                m.Double(math.inf),
                m.Double(0.0),
                m.Double(-1.0),
                m.Double(sys.float_info.min),
            ),
            *(m.Int(0), m.Int((1 << 63) - 1), m.Int(-(1 << 63)), m.Int(1 << 9), m.Int(-(1 << 9))),
            *(m.Bool(True), m.String("x"), m.Null()),
        ),
        b,
    )

    def change(plan: m.ExecutionPlan) -> m.ExecutionPlan:
        values = list(plan.values)
        values[plan.outputs[0]] = replacement
        return dataclasses.replace(plan, values=tuple(values))

    return replace_plan(pf, change, _pick(constants, a))


def mutate_program(pf: ProgramFile, kind: str, a: int, b: int, c: int) -> bytes:
    """``pf`` with one semantic corruption, as file bytes (b"" if the writer cannot encode it)."""
    if kind == "io_quant":
        return _io_quant_mutation(pf, a, b)
    if not pf.program.execution_plan:
        return b""
    plan = pf.program.execution_plan[main_plan_index(pf.program)]
    values = list(plan.values)
    chain = plan.chains[0] if plan.chains else m.Chain()
    instructions = list(chain.instructions)
    n_values = max(len(values), 1)
    changes: dict = {}
    if kind in ("sizes", "rank", "dim_order", "scalar_type", "huge_numel", "allocation", "data_buffer_idx"):
        changes = _tensor_mutation(plan, values, kind, a, b, c)
    elif kind in ("swap_args", "arg_index", "op_index"):
        _call_mutation(plan, instructions, values, kind, a, b, c)
    elif kind in ("scalar_kind", "scalar_value"):
        _scalar_mutation(values, kind, a, b, c)
    elif kind == "jump_loop":  # JumpFalse on a False: back to itself or to the start, forever
        values.append(m.Bool(False))
        at = a % (len(instructions) + 1)
        instructions.insert(at, m.JumpFalseCall(len(values) - 1, at if b % 2 else 0))
    elif kind == "operator_name" and plan.operators:
        operators = list(plan.operators)
        if c % 4 == 0:
            operators[a % len(operators)] = m.Operator("refsim_fuzz::no_such_op", "out")
        else:
            name, _, overload = _pick(sorted(all_ops()), b).partition(".")
            operators[a % len(operators)] = m.Operator(name, overload)
        changes["operators"] = tuple(operators)
    elif kind == "arena":
        arenas = list(plan.non_const_buffer_sizes) or [0]
        k = a % len(arenas)
        old = arenas[k]
        arenas[k] = _pick((old * (c % 100) // 100, old - 1 - c % 64, 0, 1 << 32, (1 << 32) + 1, 1 << 40), b)
        changes["non_const_buffer_sizes"] = tuple(arenas)
    elif kind == "io":
        io = {"inputs": list(plan.inputs), "outputs": list(plan.outputs)}
        target = io["inputs" if b % 2 else "outputs"]
        if c % 3 == 0 and target:
            target.pop()
        elif c % 3 == 1:
            target.append(a % n_values)
        elif target:
            target[a % len(target)] = c % n_values
        changes = {k: tuple(v) for k, v in io.items()}
    elif kind == "move":
        instructions.insert(a % (len(instructions) + 1), m.MoveCall(b % n_values, c % n_values))
    elif kind == "free":
        instructions.insert(a % (len(instructions) + 1), m.FreeCall(b % n_values))
    elif kind == "drop_instruction" and instructions:
        del instructions[a % len(instructions)]
    new_chain = dataclasses.replace(chain, instructions=tuple(instructions), stacktrace=None)
    return replace_plan(
        pf,
        lambda p: dataclasses.replace(p, values=tuple(values), chains=(new_chain, *p.chains[1:]), **changes),
    )


def apply_mutations(data: bytes, mutations: list[Mutation]) -> bytes:
    """Apply byte and semantic mutations in turn; a semantic one on an unreadable file is skipped."""
    for kind, a, b, c in mutations:
        if kind in BYTE_KINDS:
            data = mutate_bytes(data, kind, a, b)
            continue
        try:
            pf = load_program(data)
        except RefsimError:
            continue
        data = mutate_program(pf, kind, a, b, c) or data
    return data


def random_mutations(rng: random.Random, semantic_share: float = 0.5) -> list[Mutation]:
    """1 to 4 mutations, semantic ones with probability ``semantic_share``."""
    out = []
    for _ in range(rng.choice((1, 1, 1, 2, 3, 4))):
        if rng.random() < semantic_share:
            out.append((rng.choice(SEMANTIC_KINDS), *(rng.getrandbits(32) for _ in range(3))))
        else:
            value = rng.choice(INTERESTING) if rng.random() < 0.5 else rng.getrandbits(64)
            out.append((rng.choice(BYTE_KINDS), rng.getrandbits(25), value, 0))
    return out


# -- running one case --------------------------------------------------------------------------


class CaseTimeout(Exception):
    """The SIGALRM safety net fired: a case ran past ALARM_SECONDS (a hang)."""


@contextlib.contextmanager
def alarm(seconds: float):
    def fire(signum, frame):
        raise CaseTimeout(f"case still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@dataclass
class Outcome:
    """How a case ended: ``stage`` load/method/execute/ok, the error type and message."""

    stage: str
    error: str | None = None
    message: str = ""
    seconds: float = 0.0
    unexpected: str | None = None  # the traceback of anything but a RefsimError
    outputs: list = field(default_factory=list, repr=False)

    @property
    def label(self) -> str:
        """ "ok" or "<stage>: <Error>: <first words of the message>" with numbers as N, for tallies."""
        if self.error is None:
            return "ok"
        words = re.sub(r"(?<![A-Za-z_])\d+", "N", " ".join(self.message.split()[:5]))
        return f"{self.stage}: {self.error}: {words}"

    @property
    def kind(self) -> str:
        """ "ok" or "<stage>: <Error>"."""
        return "ok" if self.error is None else f"{self.stage}: {self.error}"


#: Inputs with more elements are zeros (drawing them would cost the harness more than refsim).
MAX_RANDOM_INPUT = 1 << 22


def random_inputs(method, rng: np.random.Generator) -> list:
    """Valid inputs of each input's dtype and logical shape (as `refsim run` draws them)."""
    values: list[Any] = []
    for slot in method.inputs:
        if not isinstance(slot, TensorRef):
            values.append(slot)
            continue
        shape, dtype = tuple(slot.sizes), slot.dtype
        if slot.meta.numel > MAX_RANDOM_INPUT:
            values.append(np.zeros(shape, dtype))
        elif dtype.kind == "f":
            values.append(rng.standard_normal(shape).astype(dtype))
        elif dtype == np.bool_:
            values.append(rng.integers(0, 2, shape).astype(bool))
        elif dtype.kind in "iu":
            info = np.iinfo(dtype)
            values.append(
                rng.integers(max(info.min, -128), min(info.max, 127), shape, endpoint=True, dtype=dtype)
            )
        else:
            values.append(np.zeros(shape, dtype))
    return values


def run_case(data: bytes, seed: int | tuple[int, ...] = 0, limit: float = ALARM_SECONDS) -> Outcome:
    """Load, bind and execute ``data`` the way `refsim run` does (reports included), on inputs
    from ``default_rng(seed)`` (a campaign's case ``i`` passes ``(seed, i)``)."""
    from refsim.runtime.describe import method_ops, scratch_bytes

    stage = "load"
    start = time.perf_counter()
    try:
        with alarm(limit), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # LayoutWarning and numpy's on corrupt values are expected
            program = Program.load(bytes(data))
            stage = "method"
            if not program.method_names:
                return Outcome("ok", seconds=time.perf_counter() - start)
            name = "forward" if "forward" in program.method_names else program.method_names[0]
            method = program.method(name)
            method_ops(method, "mve")
            scratch_bytes(method)
            stage = "execute"
            outputs = method.execute(random_inputs(method, np.random.default_rng(seed)))
    except RefsimError as exc:
        return Outcome(stage, type(exc).__name__, str(exc), time.perf_counter() - start)
    except Exception as exc:  # everything else is what this module hunts for
        return Outcome(
            stage, type(exc).__name__, str(exc), time.perf_counter() - start, traceback.format_exc()
        )
    return Outcome("ok", seconds=time.perf_counter() - start, outputs=outputs)


# -- tests -------------------------------------------------------------------------------------

FUZZ_SCRIPT = ROOT / "benchmarks" / "fuzz_pte.py"
HEADROOM_MB = 1024
ORIGINALS = {name: path.read_bytes() for name, path in TEST_CORPUS.items()}
EXAMPLES = 3 * settings().max_examples  # 180 in the derandomized ci profile
byte_mutations = st.tuples(
    st.sampled_from(BYTE_KINDS),
    st.integers(0, 1 << 25),
    st.sampled_from(INTERESTING) | st.integers(0, (1 << 64) - 1),
    st.just(0),
)
semantic_mutations = st.tuples(
    st.sampled_from(SEMANTIC_KINDS), st.integers(0, 1 << 32), st.integers(0, 1 << 32), st.integers(0, 1 << 32)
)
_reference_outputs: dict[str, list] = {}
#: Files tried in this process by the stage they ended at ("ok": ran), and how many of those
#: that ran had a program equal to the original's (their outputs are compared bit for bit).
TRIED: Counter = Counter()
UNCHANGED: Counter = Counter()


@pytest.fixture(autouse=True, scope="module")
def _print_counts():
    yield
    print(
        f"\nhostile input, in-process: {TRIED.total()} files tried: {dict(TRIED)}; "
        f"{UNCHANGED.total()} ran unchanged programs, outputs identical"
    )


def check_case(name: str, mutations: list[Mutation]) -> Outcome:
    """Run a case; a corruption that leaves the program and its constants unchanged (padding, an
    unused byte) must compute exactly what the original computes."""
    data = apply_mutations(ORIGINALS[name], mutations)
    outcome = run_case(data)
    TRIED[outcome.stage] += 1
    assert outcome.unexpected is None, f"{name} {mutations}:\n{outcome.unexpected}"
    assert outcome.seconds < SECONDS_PER_CASE, f"{name} {mutations}: {outcome.seconds:.1f} s"
    if outcome.stage == "ok" and data != ORIGINALS[name]:
        original, mutated = load_program(ORIGINALS[name]), load_program(data)
        if mutated.program == original.program and [bytes(c) for c in mutated.constants()] == [
            bytes(c) for c in original.constants()
        ]:
            UNCHANGED[name] += 1
            if name not in _reference_outputs:
                _reference_outputs[name] = run_case(ORIGINALS[name]).outputs
            for got, want in zip(outcome.outputs, _reference_outputs[name], strict=True):
                np.testing.assert_array_equal(got, want)
    return outcome


@settings(max_examples=EXAMPLES)
@given(st.sampled_from(sorted(ORIGINALS)), st.lists(byte_mutations, min_size=1, max_size=4))
def test_byte_corruption_ends_in_a_refsim_error_or_a_run(name, mutations):
    check_case(name, mutations)


@settings(max_examples=EXAMPLES)
# Found by an unseeded run: fp32/linear's bias given rank 2 ([6, 1]) broadcast with [out_features]
# and passed the validator, then failed inside the kernel (ValueError, not a RefsimError).
@example("fp32/linear", [("rank", 1, 0, 0)])
@given(
    st.sampled_from(sorted(ORIGINALS)),
    st.tuples(semantic_mutations, st.lists(semantic_mutations | byte_mutations, max_size=2)).map(
        lambda first_and_rest: [first_and_rest[0], *first_and_rest[1]]
    ),
)
def test_semantic_corruption_ends_in_a_refsim_error_or_a_run(name, mutations):
    check_case(name, mutations)


def test_seeded_campaign_under_a_memory_limit(tmp_path):
    """benchmarks/fuzz_pte.py in a subprocess whose address space is capped (RLIMIT_AS), so an
    unbounded allocation would be a MemoryError there; the subprocess timeout is the hang net."""
    report = tmp_path / "fuzz.json"
    cmd = [sys.executable, str(FUZZ_SCRIPT), "--files", "1000", "--seed", "1", "--corpus", "tests"]
    cmd += ["--headroom-mb", str(HEADROOM_MB), "--max-seconds", str(SECONDS_PER_CASE)]
    cmd += ["--json", str(report), "--quiet"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode in (0, 1), done.stderr[-3000:]
    result = json.loads(report.read_text())
    print(
        f"seeded campaign: {result['files']} files tried; {result['by_stage']}; max {result['max_seconds']:.2f} s"
    )
    assert result["files"] == 1000
    assert not result["failures"], json.dumps(result["failures"][:3], indent=1)
    assert result["max_seconds"] < SECONDS_PER_CASE


def _big(pf: ProgramFile, sizes: tuple[int, ...], arena: int | None = None) -> bytes:
    """The first memory-planned tensor resized to ``sizes``, its arena grown to ``arena``."""

    def change(plan: m.ExecutionPlan) -> m.ExecutionPlan:
        values = list(plan.values)
        index = next(i for i, v in enumerate(values) if isinstance(v, m.Tensor) and v.allocation)
        values[index] = dataclasses.replace(values[index], sizes=sizes, dim_order=tuple(range(len(sizes))))
        arenas = list(plan.non_const_buffer_sizes)
        if arena is not None:
            arenas[values[index].allocation.memory_id] = arena
        return dataclasses.replace(plan, values=tuple(values), non_const_buffer_sizes=tuple(arenas))

    return replace_plan(pf, change)


def _relu_of(pf: ProgramFile, numel: int) -> bytes:
    """fp32/relu.pte (values 0 input, 1 out) on ``numel`` elements: a large program that is valid."""

    def change(plan: m.ExecutionPlan) -> m.ExecutionPlan:
        x, y = plan.values[0], plan.values[1]
        x = dataclasses.replace(x, sizes=(numel,), dim_order=(0,), allocation=m.Allocation(1, 0))
        y = dataclasses.replace(y, sizes=(numel,), dim_order=(0,), allocation=m.Allocation(1, 4 * numel))
        return dataclasses.replace(
            plan, values=(x, y, *plan.values[2:]), non_const_buffer_sizes=(0, 8 * numel)
        )

    return replace_plan(pf, change)


def _huge_cases() -> dict[str, bytes]:
    kws = load_program(ORIGINALS["kws"])
    relu = load_program((FIXTURES / "fp32" / "relu.pte").read_bytes())
    small = ORIGINALS["fp32/linear"]
    cases = {
        "arena 0 declared 4 GiB": replace_plan(
            kws,
            lambda p: dataclasses.replace(p, non_const_buffer_sizes=(1 << 32, *p.non_const_buffer_sizes[1:])),
        ),
        "64 arenas of 4 GiB": replace_plan(
            kws,
            lambda p: dataclasses.replace(
                p, non_const_buffer_sizes=(*p.non_const_buffer_sizes, *(64 * [1 << 32]))
            ),
        ),
        "input tensor of 4 GiB in a 4 GiB arena": _big(kws, (1, 1, 65536, 65536), 1 << 32),
        "input of 2^31 - 1 elements, arena not grown": _big(kws, ((1 << 31) - 1,)),
        "fp32 input of 1 GiB, arena grown": _big(relu, (1 << 28,), (1 << 30) + 2048),
        "fp32 input of 2^31 x 2^31": _big(relu, ((1 << 31) - 1, (1 << 31) - 1)),
        "fp32 relu over 256 MiB": _relu_of(relu, 1 << 26),
    }
    for k in range(0, len(small) - 8, 8):  # every 8-byte word of a small file: huge values
        for value in (0x7FFFFFFF, 0xFFFFFFFF, 1 << 32, (1 << 63) - 1, (1 << 64) - 1):
            cases[f"fp32/linear u64@{k}={value:#x}"] = mutate_bytes(small, "u64", 2 * k, value)
    return cases


def test_huge_sizes_under_a_memory_limit(tmp_path):
    """Huge declared sizes in a subprocess capped at its size + HEADROOM_MB of address space:
    loading stays lazy (arenas are zero-page maps), anything that would need more is a
    RefsimError naming the allocation, never a MemoryError."""
    cases = _huge_cases()
    paths = []
    for k, data in enumerate(cases.values()):
        path = tmp_path / f"case{k}.pte"
        path.write_bytes(data)
        paths.append(str(path))
    cmd = [sys.executable, str(FUZZ_SCRIPT), "--headroom-mb", str(HEADROOM_MB), "--quiet"]
    cmd += ["--json", str(tmp_path / "r.json"), "--files-from", *paths]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode in (0, 1), done.stderr[-3000:]
    result = json.loads((tmp_path / "r.json").read_text())
    names = list(cases)
    labels = {names[int(Path(r["case"]).stem[4:])]: r["label"] for r in result["cases"]}
    print(f"huge sizes: {result['files']} files tried; {result['by_stage']}")
    assert result["files"] == len(cases)
    assert not result["failures"], json.dumps(result["failures"][:3], indent=1)
    assert labels["arena 0 declared 4 GiB"] == "ok"  # lazily mapped: nothing touched
    assert labels["64 arenas of 4 GiB"].startswith(
        "method: ExecutionError: method 'forward': cannot allocate"
    )
    assert labels["input of 2^31 - 1 elements, arena not grown"].startswith("load: ProgramError")


def test_a_declared_arena_costs_only_what_its_tensors_touch():
    """A corrupt arena size (up to the 4 GiB the reader allows) neither slows the load nor
    grows the process: arenas are zero-page maps."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    data = replace_plan(
        load_program(ORIGINALS["kws"]), lambda p: dataclasses.replace(p, non_const_buffer_sizes=(0, 1 << 32))
    )
    outcome = run_case(data)
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert outcome.stage == "ok", outcome.label
    assert outcome.seconds < 1.0 and grown_mb < 256, (outcome.seconds, grown_mb)


# -- named corruptions, each with the error it must give ----------------------------------------

#: kws values: 2 and 6 constant depthwise weights, 38 the input (int8 [1, 1, 49, 10]), 39 the
#: pad's output, 40 an Int 0, 44 the pad's IntList, 50 its pad value, 52 the depthwise output;
#: instruction 0 the pad, 1 the depthwise conv (args: input, weight, bias, ..., out, out).
KWS_PLAN = load_program(ORIGINALS["kws"]).program.plan("forward")
_DW = KWS_PLAN.chains[0].instructions[1].args


def kws_variant(values=None, instructions=None, insert=None, **fields) -> bytes:
    """kws.pte with ``values`` replaced ({index: EValue, or {field: value} for a tensor}),
    ``instructions`` replaced ({position: Instruction}), ``insert`` = (position, Instruction)
    and plan ``fields`` replaced."""

    def change(plan: m.ExecutionPlan) -> m.ExecutionPlan:
        new_values = list(plan.values)
        for i, v in (values or {}).items():
            new_values[i] = dataclasses.replace(new_values[i], **v) if isinstance(v, dict) else v
        chain = plan.chains[0]
        new_instructions = list(chain.instructions)
        for i, ins in (instructions or {}).items():
            new_instructions[i] = ins
        if insert:
            new_instructions.insert(*insert)
        chain = dataclasses.replace(chain, instructions=tuple(new_instructions))
        return dataclasses.replace(plan, values=tuple(new_values), chains=(chain,), **fields)

    return replace_plan(load_program(ORIGINALS["kws"]), change)


def kws_call(position: int, args: dict[int, int], op_index: int | None = None) -> dict:
    """``instructions=`` for `kws_variant`: KernelCall ``position`` with ``args`` ({slot: value})."""
    call = KWS_PLAN.chains[0].instructions[position]
    new_args = tuple(args.get(k, a) for k, a in enumerate(call.args))
    return {position: m.KernelCall(call.op_index if op_index is None else op_index, new_args)}


def fp32_with_move(name: str, move: m.MoveCall, constant_like: int | None = None) -> bytes:
    """fp32 fixture ``name`` with ``move`` first; ``constant_like``: a zero constant shaped like
    that value is appended to the values first (so it is values[len])."""
    pf = load_program((FIXTURES / "fp32" / f"{name}.pte").read_bytes())
    plan = pf.program.plan("forward")
    values, blobs = plan.values, [b""]
    if constant_like is not None:
        like = plan.values[constant_like]
        values = (*values, dataclasses.replace(like, allocation=None, data_buffer_idx=1))
        blobs.append(bytes(like.nbytes))
    chain = dataclasses.replace(plan.chains[0], instructions=(move, *plan.chains[0].instructions))
    plan = dataclasses.replace(plan, values=values, chains=(chain,))
    return write_program(dataclasses.replace(pf.program, execution_plan=(plan,)), blobs)


def _jump_loop(position: int, destination_is_self: bool) -> bytes:
    return mutate_program(load_program(ORIGINALS["kws"]), "jump_loop", position, int(destination_is_self), 0)


#: name: (build, stage where it ends, error class, words of the message)
NAMED = {
    "tensor sizes changed": (
        lambda: kws_variant({39: {"sizes": (1, 1, 58, 13)}}),
        *("method", "OpError", "out must be sizes"),
    ),
    "dim_order not a permutation": (
        lambda: kws_variant({38: {"dim_order": (0, 2, 2, 3)}}),
        *("load", "ProgramError", "is not a permutation"),
    ),
    "dim_order changed": (
        lambda: kws_variant({52: {"dim_order": (0, 1, 2, 3)}}),
        *("method", "OpError", "channels-last"),
    ),
    "op arguments swapped": (
        lambda: kws_variant(instructions=kws_call(1, {1: _DW[2], 2: _DW[1]})),
        *("method", "OpError", "weight must be int8, got int32"),
    ),
    "Int where a Tensor goes": (
        lambda: kws_variant(instructions=kws_call(1, {1: 40})),
        *("method", "OpError", "must be TENSOR, got INT"),
    ),
    "Double where an int goes": (
        lambda: kws_variant({50: m.Double(0.5)}),
        *("method", "OpError", "must be INT, got DOUBLE"),
    ),
    "IntList item not an Int": (
        lambda: kws_variant({44: m.IntList((40, 38))}),
        *("load", "ProgramError", "expected Int"),
    ),
    "op index out of range": (
        lambda: kws_variant(instructions=kws_call(3, {}, op_index=99)),
        *("load", "ProgramError", "operator index 99 out of range"),
    ),
    "jump loops forever": (lambda: _jump_loop(13, False), *("execute", "ExecutionError", "jump loop")),
    "jump to itself": (lambda: _jump_loop(0, True), *("execute", "ExecutionError", "jump loop")),
    "jump past the end": (
        lambda: kws_variant(instructions={0: m.JumpFalseCall(38, 99)}),
        *("load", "ProgramError", "destination_instruction"),
    ),
    "arena shrunk": (
        lambda: kws_variant(non_const_buffer_sizes=(0, 1000)),
        *("load", "ProgramError", "outside arena 1 of 1000 bytes"),
    ),
    # offsets bound a constant by the segment's end, not by the next blob (as in ExecuTorch):
    # another index reads other bytes, which is wrong numerics but not an error
    "constant index changed": (lambda: kws_variant({2: {"data_buffer_idx": 1}}), "ok", None, ""),
    "constant index out of range": (
        lambda: kws_variant({2: {"data_buffer_idx": 999}}),
        *("load", "ProgramError", "entry index 999 out of range"),
    ),
    "huge numel": (
        lambda: kws_variant({38: {"sizes": (1 << 20, 1 << 20, 1, 1)}}),
        *("load", "ProgramError", "exceeds refsim's limit"),
    ),
    "overlapping live tensors": (
        lambda: kws_variant({52: {"allocation": m.Allocation(1, 8)}}),
        *("load", "PlanError", "overlaps"),
    ),
    "unknown operator": (
        lambda: kws_variant(
            operators=(m.Operator("refsim_fuzz::no_such_op", "out"), *KWS_PLAN.operators[1:])
        ),
        *("method", "UnsupportedError", "refsim_fuzz::no_such_op.out is not supported"),
    ),
    "constant tensor as the input": (
        lambda: kws_variant(inputs=(2,)),
        *("method", "ProgramError", "input0 (values[2]) is a constant tensor"),
    ),
    "constant tensor as an out": (
        lambda: kws_variant(instructions=kws_call(1, {14: 6, 15: 6})),
        *("method", "OpError", "argument out must be a writable tensor"),
    ),
    "move an Int into a tensor": (
        lambda: kws_variant(insert=(1, m.MoveCall(40, 52))),
        *("method", "ProgramError", "of kind INT into one of kind TENSOR"),
    ),
    "move a tensor of another shape": (
        lambda: kws_variant(insert=(1, m.MoveCall(39, 52))),
        *("method", "ProgramError", "[1, 1, 58, 12]"),
    ),
    # add_sub_alpha: values 3 and 5 are the Doubles alpha of add and sub
    "move another Double into alpha": (
        lambda: fp32_with_move("add_sub_alpha", m.MoveCall(5, 3)),
        *("method", "ProgramError", "changes a DOUBLE value"),
    ),
    # relu: values 0 the input, 1 the out, 2 the appended constant
    "move a constant into an out": (
        lambda: fp32_with_move("relu", m.MoveCall(2, 1), constant_like=1),
        *("method", "ProgramError", "moves a constant into a tensor an operator writes"),
    ),
}


@pytest.mark.parametrize("case", sorted(NAMED))
def test_named_corruption(case):
    build, stage, error, fragment = NAMED[case]
    data = build()
    assert data, "the writer could not encode the case"
    outcome = run_case(data)
    TRIED[outcome.stage] += 1
    assert outcome.unexpected is None, outcome.unexpected
    assert (outcome.stage, outcome.error) == (stage, error), outcome.label + " " + outcome.message
    assert fragment in outcome.message
    assert outcome.seconds < SECONDS_PER_CASE
