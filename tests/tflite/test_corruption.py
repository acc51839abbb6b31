"""Corrupt .tflite files load or raise ModelError: never another exception, a hang or a big
allocation; and each named corruption gives one line naming the field.

The byte mutations are tests/pte/test_corruption.py's (4-byte words: offsets, vector lengths,
vtable entries; 8-byte words: buffer offsets and sizes; 2-byte vtable entries; single bits;
truncation), on a model built here (weights inline and after the flatbuffer) and on the
MLPerf Tiny reference models.
"""

from __future__ import annotations

import contextlib
import random
import struct
import time
import tracemalloc
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from refsim.errors import RefsimError, UnsupportedError
from refsim.tflite import ModelError, ModelFile, TensorType, load_model
from refsim.tflite import model as m
from refsim.tflite.describe import describe
from refsim.tflite.lower import lower_model
from refsim.tflite.writer import write_model
from tests.pte.test_corruption import INTERESTING, KINDS, _mutate, mutations
from tests.tflite.test_roundtrip import conv_model

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tflite"
MODEL = conv_model()
FILES = {
    "conv": write_model(MODEL),
    "conv-external": write_model(MODEL, external_buffers=True),
    **{p.stem: p.read_bytes() for p in sorted(FIXTURES.glob("*.tflite"))},
}
SECONDS_PER_LOAD = 2.0
PEAK_BYTES = 32 << 20


def exercise(mf: ModelFile) -> None:
    """What code after `load_model` may do with a model it trusts: describe it, read every
    constant, lower it for execution, write it again and read that back. Only a RefsimError may
    come out (a constant of a type numpy cannot hold, an operator refsim does not run)."""
    describe(mf, "case")
    with contextlib.suppress(RefsimError):  # what refsim does not run is a RefsimError, never a crash
        lower_model(mf)
    for g in mf.model.subgraphs:
        for t in g.tensors:
            with contextlib.suppress(UnsupportedError):
                mf.constant_data(t)
    load_model(write_model(mf.model))


def warm_up() -> None:
    """Exercise every seed model once: the operator modules and kernels load lazily (numba on a
    kernel's first call), which must not count against a corrupted file's time limit."""
    for data in FILES.values():
        exercise(load_model(data))


warm_up()


def load_survives(data: bytes) -> None:
    start = time.perf_counter()
    try:
        mf = load_model(data)
    except ModelError:
        mf = None
    if mf is not None:
        exercise(mf)  # a ModelError here is a failure: the file loaded
    assert time.perf_counter() - start < SECONDS_PER_LOAD


@given(st.sampled_from(sorted(FILES)), mutations)
def test_corrupt_files_raise_only_model_errors(name, changes):
    data = bytearray(FILES[name])
    for kind, where, value in changes:
        data = _mutate(data, kind, where, value)
    tracemalloc.start()
    try:
        load_survives(bytes(data))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < PEAK_BYTES


@pytest.mark.parametrize("name", sorted(FILES))
def test_many_seeded_corruptions(name):
    """A bulk campaign, cheaper per case than hypothesis: the seed is fixed, so failures replay."""
    rng = random.Random(f"refsim-tflite-{name}")
    for _ in range(300):
        data = bytearray(FILES[name])
        for _ in range(rng.randint(1, 4)):
            value = rng.choice(INTERESTING) if rng.random() < 0.6 else rng.getrandbits(64)
            data = _mutate(data, rng.choice(KINDS), rng.getrandbits(20), value)
        load_survives(bytes(data))


@pytest.mark.parametrize("name", sorted(FILES))
def test_every_truncation(name):
    original = FILES[name]
    step = max(1, len(original) // 400)
    for n in range(0, len(original), step):
        with pytest.raises(ModelError):
            load_model(original[:n])


# -- named corruptions ---------------------------------------------------------------------------


def _graph(**changes) -> bytes:
    """MODEL with subgraph 0 changed, written without validation."""
    graph = replace(MODEL.subgraphs[0], **changes)
    return write_model(replace(MODEL, subgraphs=(graph,)), validate=False)


def _tensor(k: int, **changes) -> bytes:
    tensors = list(MODEL.subgraphs[0].tensors)
    tensors[k] = replace(tensors[k], **changes)
    return _graph(tensors=tuple(tensors))


def _operator(k: int, **changes) -> bytes:
    ops = list(MODEL.subgraphs[0].operators)
    ops[k] = replace(ops[k], **changes)
    return _graph(operators=tuple(ops))


def _patch(data: bytes, old: bytes, new: bytes) -> bytes:
    assert data.count(old) == 1, f"{old.hex()} occurs {data.count(old)} times"
    return data.replace(old, new)


def _external_offset_beyond_the_file() -> bytes:
    data = FILES["conv-external"]
    offset = next(b.offset for b in load_model(data).model.buffers if b.external)
    return _patch(data, struct.pack("<Q", offset), struct.pack("<Q", len(data) + 16))


def _large_custom_options_beyond_the_file() -> bytes:
    graph = MODEL.subgraphs[0]
    relu6 = replace(graph.operators[1], custom_options=b"relu6 options")
    model = replace(
        MODEL, subgraphs=(replace(graph, operators=(graph.operators[0], relu6, graph.operators[2])),)
    )
    data = write_model(model, external_buffers=True)
    assert load_model(data).model.subgraphs[0].operators[1].custom_options == b"relu6 options"
    offset = data.index(b"relu6 options")
    return _patch(data, struct.pack("<Q", offset), struct.pack("<Q", offset + (1 << 40)))


def _shape_vector_length(count: int) -> bytes:
    """The length word of tensor 0's shape (1, 5, 5, 3) set to ``count``."""
    return _patch(FILES["conv"], struct.pack("<5i", 4, 1, 5, 5, 3), struct.pack("<5I", count, 1, 5, 5, 3))


def _root_offset(delta: int) -> bytes:
    data = bytearray(FILES["conv"])
    data[0:4] = struct.pack("<I", struct.unpack_from("<I", data)[0] + delta)
    return bytes(data)


NAMED = {
    "empty file": (b"", r"^0 bytes is too short for a \.tflite file"),
    "truncated to half": (FILES["conv"][: len(FILES["conv"]) // 2], r"lies outside the flatbuffer"),
    "bad identifier": (
        FILES["conv"][:4] + b"TFL2" + FILES["conv"][8:],
        r"^file_identifier: expected b'TFL3', found b'TFL2'",
    ),
    "a .pte": (b"\x18\x00\x00\x00ET12" + bytes(56), r"^file_identifier: expected b'TFL3', found b'ET12'"),
    "schema version 2": (
        write_model(replace(MODEL, version=2), validate=False),
        r"^version: schema version 2, expected 3",
    ),
    "no subgraph": (
        write_model(replace(MODEL, subgraphs=()), validate=False),
        r"^subgraphs: the model has no subgraph",
    ),
    "operator input out of range": (
        _operator(0, inputs=(0, 99, 2)),
        r"^subgraphs\[0\]\.operators\[0\]\.inputs\[1\]: tensor index 99 out of range: expected -1 \(absent\) or \[0, 6\)",
    ),
    "operator output -2": (
        _operator(1, outputs=(-2,)),
        r"^subgraphs\[0\]\.operators\[1\]\.outputs\[0\]: tensor index -2",
    ),
    "subgraph output out of range": (
        _graph(outputs=(6,)),
        r"^subgraphs\[0\]\.outputs\[0\]: tensor index 6 out of range: expected \[0, 6\)",
    ),
    "subgraph input -1": (_graph(inputs=(-1,)), r"^subgraphs\[0\]\.inputs\[0\]: tensor index -1"),
    "opcode index": (
        _operator(2, opcode_index=3),
        r"^subgraphs\[0\]\.operators\[2\]\.opcode_index: opcode index 3 out of range \[0, 3\)",
    ),
    "buffer index": (
        _tensor(4, buffer=40),
        r"^subgraphs\[0\]\.tensors\[4\]\.buffer: buffer index 40 out of range \[0, 3\)",
    ),
    "buffer smaller than the shape": (
        _tensor(1, shape=(2, 3, 3, 4)),
        r"^subgraphs\[0\]\.tensors\[1\]\.buffer: buffer 1 holds 54 bytes, shape \[2, 3, 3, 4\] of INT8 needs 72",
    ),
    "offset buffer beyond the file": (
        _external_offset_beyond_the_file(),
        r"^buffers\[1\]\.offset: bytes \[\d+, \d+\) lie beyond the \d+-byte file",
    ),
    "large custom options beyond the file": (
        _large_custom_options_beyond_the_file(),
        r"^subgraphs\[0\]\.operators\[1\]\.large_custom_options_offset: bytes \[\d+, \d+\) lie beyond",
    ),
    "vector length past the end": (
        _shape_vector_length(1000),
        r"^subgraphs\[0\]\.tensors\[0\]\.shape: vector of 1000 elements at byte \d+ \(\+4000\) lies outside",
    ),
    "vector length of 2^32 - 1": (
        _shape_vector_length(0xFFFFFFFF),
        r"^subgraphs\[0\]\.tensors\[0\]\.shape: vector of 4294967295 elements exceeds the 2 GiB",
    ),
    "misaligned root offset": (_root_offset(2), r"^table at byte \d+ is not 4-byte aligned"),
    "root offset past the end": (
        _root_offset(1 << 20),
        r"^target of the root offset at byte 0 .* lies outside the flatbuffer",
    ),
    "quantization length mismatch": (
        _tensor(1, quantization=m.Quantization((0.25, 0.125), (0, 0, 0), 0)),
        r"^subgraphs\[0\]\.tensors\[1\]\.quantization: 2 scales and 3 zero points",
    ),
    "scales for the wrong dimension": (
        _tensor(1, quantization=m.Quantization((0.25, 0.125), (0, 0), 3)),
        r"^subgraphs\[0\]\.tensors\[1\]\.quantization\.scale: 2 scales for dimension 3 of shape \[2, 3, 3, 3\] \(size 3\)",
    ),
    "quantized_dimension beyond the rank": (
        _tensor(1, quantization=m.Quantization((0.25, 0.125), (0, 0), 4)),
        r"^subgraphs\[0\]\.tensors\[1\]\.quantization\.quantized_dimension: 4 is not a dimension",
    ),
    "negative shape": (
        _tensor(0, shape=(1, -5, 5, 3)),
        r"^subgraphs\[0\]\.tensors\[0\]\.shape\[1\]: negative dimension -5",
    ),
    "huge tensor": (
        _tensor(3, shape=(65536, 65536, 65536)),
        r"^subgraphs\[0\]\.tensors\[3\]: shape \[65536, 65536, 65536\] of INT8 needs 281,474,976,710,656 bytes",
    ),
    "huge int32 tensor": (
        _tensor(3, shape=(1 << 29,), type=TensorType.INT32),
        r"needs 2,147,483,648 bytes \(at most 2\^31 - 1\)",
    ),
    "options of another op": (
        _operator(0, builtin_options_type=5, builtin_options=None),
        r"^subgraphs\[0\]\.operators\[0\]\.builtin_options_type: CONV_2D takes Conv2DOptions, found Pool2DOptions",
    ),
    "stride 0": (
        _operator(0, builtin_options={**MODEL.subgraphs[0].operators[0].builtin_options, "stride_w": 0}),
        r"^subgraphs\[0\]\.operators\[0\]\.builtin_options\.Conv2DOptions\.stride_w: 0 \(must be at least 1\)",
    ),
    "unknown padding": (
        _operator(0, builtin_options={**MODEL.subgraphs[0].operators[0].builtin_options, "padding": 7}),
        r"^subgraphs\[0\]\.operators\[0\]\.builtin_options\.Conv2DOptions\.padding: unknown Padding 7",
    ),
    "metadata buffer": (
        write_model(replace(MODEL, metadata=(m.Metadata("OfflineMemoryAllocation", 9),)), validate=False),
        r"^metadata\[0\]\.buffer: buffer index 9 out of range \[0, 3\)",
    ),
}


@pytest.mark.parametrize("case", sorted(NAMED))
def test_named_corruption(case):
    data, pattern = NAMED[case]
    with pytest.raises(ModelError, match=pattern) as info:
        load_model(data)
    assert "\n" not in str(info.value)


def _set_field(data: bytes, table_path: tuple, slot: int, fmt: str, value: int) -> bytes:
    """``data`` with field ``slot`` of the table at ``table_path`` (from the root: (vector
    slot, index) pairs) set to ``value``; the field must be present in the file."""
    from refsim.pte._flatbuf import FlatReader

    table = FlatReader(memoryview(data), len(data), error=ModelError).root()
    for vector_slot, index in table_path:
        table = table.tables(vector_slot, "x")[index]
    pos = table._field(slot, struct.calcsize(fmt), "field")
    assert pos, "the field is absent"
    out = bytearray(data)
    out[pos : pos + struct.calcsize(fmt)] = struct.pack(fmt, value)
    return bytes(out)


def test_unknown_builtin_code_and_tensor_type():
    data = FILES["conv"]
    assert load_model(data).model.operator_codes[0].builtin_code == 3  # CONV_2D
    code_250 = _set_field(data, ((1, 0),), 3, "<i", 250)  # operator_codes[0].builtin_code
    with pytest.raises(ModelError, match=r"^operator_codes\[0\]\.builtin_code: unknown BuiltinOperator 250$"):
        load_model(code_250)
    type_99 = _set_field(data, ((2, 0), (0, 0)), 1, "<b", 99)  # subgraphs[0].tensors[0].type
    with pytest.raises(ModelError, match=r"^subgraphs\[0\]\.tensors\[0\]\.type: unknown TensorType 99$"):
        load_model(type_99)


def test_a_file_that_cannot_be_read():
    with pytest.raises(ModelError, match=r"^cannot read /nonexistent\.tflite: No such file"):
        load_model("/nonexistent.tflite")


# -- semantic corruptions: one field of the model set to a boundary value ----------------------

SEMANTIC_VALUES = [-(1 << 31), -2, -1, 0, 1, 2, 3, 4, 5, 6, 7, 64, 1 << 16, (1 << 31) - 1]
SEMANTIC_FIELDS = [
    "tensor.buffer",
    "tensor.shape",
    "tensor.quantized_dimension",
    "tensor.scales",
    "tensor.zero_points",
    "tensor.type",
    "op.input",
    "op.output",
    "op.opcode_index",
    "op.options_type",
    "graph.input",
    "graph.output",
    "metadata.buffer",
]
SEMANTIC_SEEDS = {"conv": MODEL, "kws": load_model(FIXTURES / "kws_ref_model.tflite").model}


def _u32(value: int) -> int:
    return value & 0xFFFFFFFF


def _semantic(model: m.Model, where: str, k: int, value: int) -> m.Model:
    g = model.subgraphs[0]
    tensors, ops = list(g.tensors), list(g.operators)
    kind, name = where.split(".")
    if kind == "tensor":
        i = k % len(tensors)
        t = tensors[i]
        q = t.quantization or m.Quantization((1.0,), (0,))
        if name == "buffer":
            t = replace(t, buffer=_u32(value))
        elif name == "shape":
            shape = list(t.shape) or [1]
            shape[k % len(shape)] = value
            t = replace(t, shape=tuple(shape))
        elif name == "quantized_dimension":
            t = replace(t, quantization=replace(q, quantized_dimension=value))
        elif name == "scales":
            t = replace(t, quantization=replace(q, scale=(0.5,) * (value % 70)))
        elif name == "zero_points":
            t = replace(t, quantization=replace(q, zero_point=(0,) * (value % 70)))
        else:
            t = replace(t, type=TensorType(value % len(TensorType)))
        tensors[i] = t
    elif kind == "op" and ops:
        i = k % len(ops)
        op = ops[i]
        if name == "input":
            op = replace(op, inputs=(value, *op.inputs[1:]))
        elif name == "output":
            op = replace(op, outputs=(value,))
        elif name == "opcode_index":
            op = replace(op, opcode_index=_u32(value))
        else:
            op = replace(op, builtin_options_type=value & 0x7F, builtin_options=None)
        ops[i] = op
    elif kind == "graph":
        g = replace(g, **{f"{name}s": (value,)})
    else:
        model = replace(model, metadata=(m.Metadata("OfflineMemoryAllocation", _u32(value)),))
    graph = replace(g, tensors=tuple(tensors), operators=tuple(ops))
    return replace(model, subgraphs=(graph,))


@given(
    st.sampled_from(sorted(SEMANTIC_SEEDS)),
    st.lists(
        st.tuples(st.sampled_from(SEMANTIC_FIELDS), st.integers(0, 100), st.sampled_from(SEMANTIC_VALUES)),
        min_size=1,
        max_size=3,
    ),
)
def test_semantic_corruption_loads_or_is_one_model_error(name, changes):
    model = SEMANTIC_SEEDS[name]
    for where, k, value in changes:
        model = _semantic(model, where, k, value)
    data = write_model(model, validate=False)  # every value above fits its field's type
    try:
        mf = load_model(data)
    except ModelError as exc:
        assert "\n" not in str(exc)
        return
    exercise(mf)
