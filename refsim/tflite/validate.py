"""The model-level checks of a decoded .tflite: everything an interpreter would index or size
is in range, so code that runs a `Model` after `load_model` trusts it.

- subgraphs: at least one; inputs and outputs index its tensors;
- operators: ``opcode_index`` within operator_codes; inputs and outputs index the subgraph's
  tensors or are -1 (an optional tensor left out), intermediates index them; a decoded builtin
  (options.OPTIONS_OF) carries its own options table or none, its enums are known and its
  strides, dilations and filter sizes are at least 1;
- tensors: shape entries non-negative (shape_signature >= -1); at most 2^31 - 1 bytes (a
  32-bit device's size_t); ``buffer`` within buffers (buffer 0 of a model without buffers
  tolerated: it is the empty sentinel by convention); a constant's bytes equal its shape times
  its type's size (sub-byte types packed), as TFLite's ``SetTensorParametersReadOnly`` requires,
  except for strings, resources, variants and sparse tensors;
- quantization: scale and zero_point both empty, or scale of length 1 or of the size of
  ``quantized_dimension`` (which must be a dimension of the tensor) and zero_point of the same
  length or of length 1 (TFLM repeats a single zero point: micro_allocator.cc);
- metadata and signature_defs: buffer, subgraph and tensor indices in range.
"""

from __future__ import annotations

from refsim.tflite import model as m
from refsim.tflite.errors import ModelError
from refsim.tflite.options import OPTIONS_OF, POSITIVE

#: Largest tensor a 32-bit TFLM build can size (bytes are a size_t and an int in places).
MAX_TENSOR_BYTES = (1 << 31) - 1


def validate_model(model: m.Model) -> None:
    if not model.subgraphs:
        raise ModelError("the model has no subgraph", "subgraphs")
    n_buffers = len(model.buffers)
    for i, g in enumerate(model.subgraphs):
        _subgraph(model, g, f"subgraphs[{i}]")
    for i, e in enumerate(model.metadata):
        if e.buffer >= n_buffers:
            raise ModelError(
                f"buffer index {e.buffer} out of range [0, {n_buffers})", f"metadata[{i}].buffer"
            )
    for i, d in enumerate(model.signature_defs):
        path = f"signature_defs[{i}]"
        if d.subgraph_index >= len(model.subgraphs):
            raise ModelError(
                f"subgraph index {d.subgraph_index} out of range [0, {len(model.subgraphs)})",
                f"{path}.subgraph_index",
            )
        n = len(model.subgraphs[d.subgraph_index].tensors)
        for kind, pairs in (("inputs", d.inputs), ("outputs", d.outputs)):
            for k, (_, index) in enumerate(pairs):
                if index >= n:
                    raise ModelError(
                        f"tensor index {index} out of range [0, {n})", f"{path}.{kind}[{k}].tensor_index"
                    )


def _indices(values: tuple[int, ...], n: int, path: str, optional: bool) -> None:
    low = m.OPTIONAL_TENSOR if optional else 0
    for k, index in enumerate(values):
        if not low <= index < n:
            what = "-1 (absent) or " if optional else ""
            raise ModelError(f"tensor index {index} out of range: expected {what}[0, {n})", f"{path}[{k}]")


def _subgraph(model: m.Model, g: m.SubGraph, path: str) -> None:
    n = len(g.tensors)
    _indices(g.inputs, n, f"{path}.inputs", optional=False)
    _indices(g.outputs, n, f"{path}.outputs", optional=False)
    for i, t in enumerate(g.tensors):
        _tensor(model, t, f"{path}.tensors[{i}]")
    n_codes = len(model.operator_codes)
    for i, op in enumerate(g.operators):
        p = f"{path}.operators[{i}]"
        if op.opcode_index >= n_codes:
            raise ModelError(
                f"opcode index {op.opcode_index} out of range [0, {n_codes})", f"{p}.opcode_index"
            )
        _indices(op.inputs, n, f"{p}.inputs", optional=True)
        _indices(op.outputs, n, f"{p}.outputs", optional=True)
        _indices(op.intermediates, n, f"{p}.intermediates", optional=False)
        _options(model.operator_codes[op.opcode_index], op, p)


def _options(code: m.OperatorCode, op: m.Operator, path: str) -> None:
    if code.builtin_code not in OPTIONS_OF:
        return
    expected = OPTIONS_OF[code.builtin_code]
    if op.builtin_options_type and op.builtin_options_name != expected:
        raise ModelError(
            f"{code.builtin_code.name} takes {expected or 'no options'}, found {op.builtin_options_name}",
            f"{path}.builtin_options_type",
        )
    for name, value in (op.builtin_options or {}).items():
        if name in POSITIVE and value < 1:
            raise ModelError(f"{value} (must be at least 1)", f"{path}.builtin_options.{expected}.{name}")


def _tensor(model: m.Model, t: m.Tensor, path: str) -> None:
    for k, d in enumerate(t.shape):
        if d < 0:
            raise ModelError(f"negative dimension {d}", f"{path}.shape[{k}]")
    for k, d in enumerate(t.shape_signature or ()):
        if d < -1:
            raise ModelError(
                f"dimension {d} (expected -1 for unknown, or a size)", f"{path}.shape_signature[{k}]"
            )
    nbytes = t.nbytes
    if nbytes is not None and nbytes > MAX_TENSOR_BYTES:
        raise ModelError(
            f"shape {list(t.shape)} of {t.type.name} needs {nbytes:,} bytes (at most 2^31 - 1)", path
        )
    n_buffers = len(model.buffers)
    if t.buffer >= n_buffers and not (t.buffer == 0 and n_buffers == 0):
        raise ModelError(f"buffer index {t.buffer} out of range [0, {n_buffers})", f"{path}.buffer")
    if t.buffer < n_buffers:
        size = len(model.buffers[t.buffer].data)
        if size and nbytes is not None and not t.sparse and size != nbytes:
            raise ModelError(
                f"buffer {t.buffer} holds {size} bytes, shape {list(t.shape)} of {t.type.name} needs {nbytes}",
                f"{path}.buffer",
            )
    if t.quantization is not None:
        _quantization(t, t.quantization, f"{path}.quantization")


def _quantization(t: m.Tensor, q: m.Quantization, path: str) -> None:
    ns, nz = len(q.scale), len(q.zero_point)
    if ns == 0 and nz == 0:
        return
    if ns == 0 or nz not in (1, ns):
        raise ModelError(f"{ns} scales and {nz} zero points (expected equal counts, or 1 zero point)", path)
    if ns > 1:
        dim = q.quantized_dimension
        if not 0 <= dim < len(t.shape):
            raise ModelError(
                f"{dim} is not a dimension of shape {list(t.shape)}", f"{path}.quantized_dimension"
            )
        if t.shape[dim] != ns:
            raise ModelError(
                f"{ns} scales for dimension {dim} of shape {list(t.shape)} (size {t.shape[dim]})",
                f"{path}.scale",
            )


__all__ = ["MAX_TENSOR_BYTES", "validate_model"]
