"""write -> load round trips, the writer's layout, and the four MLPerf Tiny reference models
(against flatc's own reading of them when flatc and TFLite's schema.fbs are at hand)."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from refsim.tflite import Buffer, Metadata, Model, ModelError, TensorType, load_model
from refsim.tflite import BuiltinOperator as B
from refsim.tflite.model import OFFLINE_MEMORY_ALLOCATION
from refsim.tflite.schema import FILE_IDENTIFIER
from refsim.tflite.writer import BUFFER_ALIGNMENT, ModelBuilder, write_model
from tests.tflite.schema_source import schema_text
from tests.tflite.strategies import models

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tflite"
MLPERF = sorted(p.name for p in FIXTURES.glob("*.tflite"))

#: (tensors, operators, buffers, constant bytes) and operator counts of subgraph 0, read with
#: `flatc --json` (flatc 2.0.8) from tflite-micro 90b983c's schema.fbs; test_flatc_reads_the_same
#: re-derives them when flatc is installed.
EXPECTED = {
    "ad01_int8.tflite": ((31, 10, 33, 270896), {"FULLY_CONNECTED": 10}),
    "kws_ref_model.tflite": (
        (35, 13, 37, 24392),
        {
            "CONV_2D": 5,
            "DEPTHWISE_CONV_2D": 4,
            "AVERAGE_POOL_2D": 1,
            "RESHAPE": 1,
            "FULLY_CONNECTED": 1,
            "SOFTMAX": 1,
        },
    ),
    "pretrainedResnet_quant.tflite": (
        (38, 16, 40, 78768),
        {"CONV_2D": 9, "ADD": 3, "AVERAGE_POOL_2D": 1, "RESHAPE": 1, "FULLY_CONNECTED": 1, "SOFTMAX": 1},
    ),
    "vww_96_int8.tflite": (
        (89, 31, 91, 219088),
        {
            "CONV_2D": 14,
            "DEPTHWISE_CONV_2D": 13,
            "AVERAGE_POOL_2D": 1,
            "RESHAPE": 1,
            "FULLY_CONNECTED": 1,
            "SOFTMAX": 1,
        },
    ),
}


def conv_model() -> Model:
    """A per-channel int8 conv, then a relu6 and an add: three ops, two kinds of options."""
    b = ModelBuilder()
    x = b.tensor((1, 5, 5, 3), TensorType.INT8, scale=0.5, zero_point=-1)
    w = b.tensor(
        (2, 3, 3, 3),
        TensorType.INT8,
        data=np.arange(54, dtype=np.int8).reshape(2, 3, 3, 3),
        scale=(0.25, 0.125),
        zero_point=(0, 0),
        quantized_dimension=0,
    )
    bias = b.tensor(
        (2,), TensorType.INT32, data=np.array([7, -7], dtype=np.int32), scale=(0.125, 0.0625), zero_point=0
    )
    y = b.tensor((1, 2, 2, 2), TensorType.INT8, scale=0.3, zero_point=3)
    z = b.tensor((1, 2, 2, 2), TensorType.INT8, scale=0.3, zero_point=3)
    out = b.tensor((1, 2, 2, 2), TensorType.INT8, scale=0.6, zero_point=0)
    b.op(B.CONV_2D, [x, w, bias], [y], stride_w=2, stride_h=2, padding=1, fused_activation_function=3)
    b.op(B.RELU6, [y], [z])
    b.op(B.ADD, [y, z], [out])
    return b.build(inputs=[x], outputs=[out])


def test_a_built_model_reads_back_equal():
    model = conv_model()
    for external in (False, True):
        mf = load_model(write_model(model, external_buffers=external))
        assert mf.model == model
        g = mf.model.subgraphs[0]
        assert [mf.model.opcode(o).name for o in g.operators] == ["CONV_2D", "RELU6", "ADD"]
        conv = g.operators[0]
        assert conv.builtin_options_name == "Conv2DOptions"
        assert conv.builtin_options["padding"].name == "VALID"
        assert conv.builtin_options["fused_activation_function"].name == "RELU6"
        assert conv.builtin_options["dilation_w_factor"] == 1  # the schema default, absent in the file
        np.testing.assert_array_equal(
            mf.constant_data(g.tensors[1]), np.arange(54, dtype=np.int8).reshape(2, 3, 3, 3)
        )
        np.testing.assert_array_equal(mf.constant_data(g.tensors[2]), [7, -7])
        assert mf.constant_data(g.tensors[0]) is None
        assert g.tensors[1].quantization.per_channel and g.tensors[1].quantization.scale == (0.25, 0.125)


def test_external_buffers_lie_after_the_flatbuffer_aligned():
    data = write_model(conv_model(), external_buffers=True)
    assert data[4:8] == FILE_IDENTIFIER
    mf = load_model(data)
    external = [buf for buf in mf.model.buffers if buf.external]
    assert len(external) == 2
    for buf in external:
        assert buf.offset % BUFFER_ALIGNMENT == 0 and buf.size == len(buf.data)
        assert bytes(data[buf.offset : buf.offset + buf.size]) == bytes(buf.data)
    # Inline buffers are 16-byte aligned too (the schema's force_align).
    inline = load_model(write_model(conv_model()))
    base = np.frombuffer(inline.data, np.uint8).ctypes.data
    for buf in inline.model.buffers[1:]:
        assert (np.frombuffer(buf.data, np.uint8).ctypes.data - base) % BUFFER_ALIGNMENT == 0


@given(models(), st.booleans())
def test_write_then_load_gives_the_same_model(model, external):
    data = write_model(model, external_buffers=external)
    mf = load_model(data)
    assert mf.model == model
    for t in mf.model.subgraphs[0].tensors:
        raw = mf.constant_bytes(t)
        assert (raw is None) == (t.buffer == 0)
        if raw is not None:
            assert bytes(raw) == bytes(model.buffers[t.buffer].data)
    if model.metadata:
        assert mf.model.offline_memory_allocation == bytes(model.buffers[model.metadata[0].buffer].data)
    # Writing what was read reproduces the file byte for byte.
    assert write_model(mf.model, external_buffers=external) == data


def test_the_writer_refuses_what_the_reader_would():
    model = conv_model()
    graph = model.subgraphs[0]
    bad = replace(graph.operators[0], opcode_index=5)
    model = replace(model, subgraphs=(replace(graph, operators=(bad, *graph.operators[1:])),))
    with pytest.raises(ModelError, match=r"operators\[0\].opcode_index: opcode index 5 out of range"):
        write_model(model)
    assert write_model(model, validate=False)[4:8] == FILE_IDENTIFIER  # for the corruption tests


@pytest.mark.parametrize("name", MLPERF)
def test_mlperf_tiny_reference_models(name):
    mf = load_model(FIXTURES / name)
    model = mf.model
    assert model.version == 3 and len(model.subgraphs) == 1
    g = model.subgraphs[0]
    counts, ops = EXPECTED[name]
    assert (
        len(g.tensors),
        len(g.operators),
        len(model.buffers),
        sum(len(b.data) for b in model.buffers),
    ) == counts
    assert dict(Counter(model.opcode(o).name for o in g.operators)) == ops
    for t in (g.tensors[g.inputs[0]], g.tensors[g.outputs[0]]):
        assert t.type == TensorType.INT8 and t.quantization is not None and len(t.quantization.scale) == 1
    assert [e.name for e in model.metadata] == ["min_runtime_version"]
    assert model.offline_memory_allocation is None
    # Every constant is as big as its shape says, and reads as an array of that shape.
    for t in g.tensors:
        array = mf.constant_data(t)
        if array is not None:
            assert array.shape == t.shape and not array.flags.writeable
    # Weights inline or after the flatbuffer: both read the same model.
    for external in (False, True):
        assert load_model(write_model(model, external_buffers=external)).model == model


def test_a_metadata_entry_names_the_offline_plan():
    model = conv_model()
    plan = np.array([1, 0, 6, 0, -1, -1, 64, 0, 128], dtype="<i4").tobytes()
    buffers = (*model.buffers, Buffer(data=memoryview(plan)))
    model = replace(model, buffers=buffers, metadata=(Metadata(OFFLINE_MEMORY_ALLOCATION, len(buffers) - 1),))
    assert load_model(write_model(model)).model.offline_memory_allocation == plan


# -- flatc's reading of the same files ---------------------------------------------------------


def _schema(tmp_path: Path) -> Path | None:
    """schema.fbs for flatc 2.0, which cannot parse '(deprecated)' on enum values: dropped."""
    text = schema_text()
    if text is None:
        return None
    path = tmp_path / "schema.fbs"
    path.write_text(text.replace(" (deprecated)", ""))
    return path


@pytest.mark.parametrize("name", MLPERF)
def test_flatc_reads_the_same(name, tmp_path):
    """Operator codes, options, tensor shapes, types, quantization and buffer sizes equal
    flatc's JSON of the file exactly (scales to the 6 decimals flatc prints)."""
    if shutil.which("flatc") is None:
        pytest.skip("flatc is not installed")
    schema = _schema(tmp_path)
    if schema is None:
        pytest.skip("no TFLite schema.fbs at hand (set REFSIM_TFLITE_SCHEMA or REFSIM_TFLM_REPO)")
    cmd = ["flatc", "--json", "--strict-json", "--defaults-json", "--raw-binary", "-o", str(tmp_path)]
    subprocess.run([*cmd, str(schema), "--", str(FIXTURES / name)], check=True, capture_output=True)
    ref = json.loads((tmp_path / name.replace(".tflite", ".json")).read_text())
    model = load_model(FIXTURES / name).model
    assert model.version == ref["version"]
    codes = [
        max(
            c.get("deprecated_builtin_code", 0),
            B[c["builtin_code"]] if isinstance(c["builtin_code"], str) else c["builtin_code"],
        )
        for c in ref["operator_codes"]
    ]
    assert [int(c.builtin_code) for c in model.operator_codes] == codes
    assert [c.version for c in model.operator_codes] == [c["version"] for c in ref["operator_codes"]]
    assert [len(b.data) for b in model.buffers] == [len(b.get("data", ())) for b in ref["buffers"]]
    assert [bytes(b.data) for b in model.buffers] == [bytes(b.get("data", ())) for b in ref["buffers"]]
    (g,) = model.subgraphs
    (rg,) = ref["subgraphs"]
    assert list(g.inputs) == rg["inputs"] and list(g.outputs) == rg["outputs"]
    assert len(g.tensors) == len(rg["tensors"])
    for t, rt in zip(g.tensors, rg["tensors"], strict=True):
        assert (list(t.shape), t.type.name, t.buffer, t.name) == (
            rt["shape"],
            rt["type"],
            rt["buffer"],
            rt["name"],
        )
        assert list(t.shape_signature or ()) == rt.get("shape_signature", [])
        rq = rt.get("quantization", {})
        q = t.quantization
        assert list(q.zero_point if q else ()) == rq.get("zero_point", [])
        assert (q.quantized_dimension if q else 0) == rq.get("quantized_dimension", 0)
        # flatc prints floats with 6 decimals: agreement to half a unit of the 6th
        np.testing.assert_allclose(q.scale if q else (), rq.get("scale", []), rtol=0, atol=5.0001e-7)
    assert len(g.operators) == len(rg["operators"])
    for op, ro in zip(g.operators, rg["operators"], strict=True):
        assert (op.opcode_index, list(op.inputs), list(op.outputs)) == (
            ro["opcode_index"],
            ro["inputs"],
            ro["outputs"],
        )
        assert op.builtin_options_name == ro["builtin_options_type"]
        for key, value in (ro.get("builtin_options") or {}).items():
            ours = op.builtin_options[key]
            assert (ours.name if hasattr(ours, "name") else ours) == value, key
