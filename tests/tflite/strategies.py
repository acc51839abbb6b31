"""Hypothesis strategies for valid `.tflite` models: shapes, types, per-tensor and per-channel
quantization, constant buffers and operators with the decoded builtins' options."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from refsim.tflite import model as m
from refsim.tflite.options import OPTIONS_OF, POSITIVE, TABLES
from refsim.tflite.schema import BUILTIN_OPTIONS, SCHEMA_VERSION, BuiltinOperator, TensorType

TYPES = [
    TensorType.INT8,
    TensorType.INT32,
    TensorType.FLOAT32,
    TensorType.INT16,
    TensorType.UINT8,
    TensorType.INT4,
]
float32s = st.floats(2.0**-20, 1024.0, width=32)
names = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=10)


@st.composite
def quantizations(draw, shape: tuple[int, ...]) -> m.Quantization | None:
    kind = draw(st.sampled_from(["none", "tensor", "channel"] if shape and shape[0] else ["none", "tensor"]))
    if kind == "none":
        return None
    if kind == "tensor":
        return m.Quantization((draw(float32s),), (draw(st.integers(-128, 127)),))
    dim = draw(st.integers(0, len(shape) - 1))
    n = shape[dim]
    if n == 0:
        return m.Quantization((draw(float32s),), (0,), dim)
    scales = tuple(draw(st.lists(float32s, min_size=n, max_size=n)))
    zps = draw(st.sampled_from([(0,) * n, (0,)]))
    return m.Quantization(scales, zps, dim)


@st.composite
def tensors(draw, buffers: list[m.Buffer]) -> m.Tensor:
    dtype = draw(st.sampled_from(TYPES))
    shape = tuple(draw(st.lists(st.integers(0, 5), max_size=4)))
    t = m.Tensor(shape, dtype, name=draw(names), quantization=draw(quantizations(shape)))
    if draw(st.booleans()):
        nbytes = t.nbytes or 0
        data = draw(st.binary(min_size=nbytes, max_size=nbytes))
        if data:
            buffers.append(m.Buffer(data=memoryview(data)))
            t = m.Tensor(t.shape, t.type, len(buffers) - 1, t.name, t.quantization)
    signature = draw(st.none() | st.just(tuple(-1 if k == 0 else d for k, d in enumerate(shape))))
    return m.Tensor(t.shape, t.type, t.buffer, t.name, t.quantization, draw(st.booleans()), signature)


@st.composite
def options(draw, code: BuiltinOperator) -> tuple[int, dict | None]:
    table = OPTIONS_OF[code]
    if table is None or draw(st.integers(0, 9)) == 0:  # sometimes no options table at all
        return 0, None
    values: dict = {}
    for f in TABLES[table]:
        if f.enum is not None:
            values[f.name] = draw(st.sampled_from(list(f.enum)))
        elif f.kind == "bool":
            values[f.name] = draw(st.booleans())
        elif f.kind == "f32":
            values[f.name] = draw(float32s)
        elif f.kind == "[i32]":
            values[f.name] = draw(st.none() | st.lists(st.integers(-3, 8), max_size=4).map(tuple))
        else:
            values[f.name] = draw(st.integers(1 if f.name in POSITIVE else -4, 8))
    return BUILTIN_OPTIONS.index(table), values


@st.composite
def models(draw) -> m.Model:
    buffers = [m.Buffer()]
    ts = tuple(draw(st.lists(tensors(buffers), min_size=1, max_size=8)))
    n = len(ts)
    codes = draw(st.lists(st.sampled_from(sorted(OPTIONS_OF)), min_size=1, max_size=4, unique=True))
    operator_codes = tuple(m.OperatorCode(c, version=draw(st.integers(1, 4))) for c in codes)
    index = st.integers(0, n - 1)
    ops = []
    for _ in range(draw(st.integers(0, 6))):
        k = draw(st.integers(0, len(codes) - 1))
        options_type, values = draw(options(codes[k]))
        ops.append(
            m.Operator(
                opcode_index=k,
                inputs=tuple(draw(st.lists(index | st.just(-1), max_size=4))),
                outputs=tuple(draw(st.lists(index, min_size=1, max_size=2))),
                intermediates=tuple(draw(st.lists(index, max_size=1))),
                builtin_options_type=options_type,
                builtin_options=values,
                custom_options=draw(st.binary(max_size=9)),
                builtin_options_2_type=draw(st.sampled_from([0, 0, 0, 1, 17])),
            )
        )
    graph = m.SubGraph(
        ts,
        tuple(draw(st.lists(index, max_size=2))),
        tuple(draw(st.lists(index, max_size=2))),
        tuple(ops),
        draw(names),
    )
    metadata = ()
    if draw(st.booleans()):
        plan = np.array([1, 0, n, *([-1] * n)], dtype="<i4").tobytes()  # version, subgraph, count, offsets
        buffers.append(m.Buffer(data=memoryview(plan)))
        metadata = (m.Metadata(m.OFFLINE_MEMORY_ALLOCATION, len(buffers) - 1),)
    signatures = ()
    if draw(st.booleans()):
        signatures = (m.SignatureDef("serving_default", 0, (("x", draw(index)),), (("y", draw(index)),)),)
    return m.Model(
        SCHEMA_VERSION, operator_codes, (graph,), tuple(buffers), draw(names), metadata, signatures
    )
