"""The 32-bit sizes of ExecuTorch's runtime structs, as compiled by arm-none-eabi-g++.

Loaded from ``runtime_sizes.json``, which :mod:`refsim.lab.executorch.sizeof_probe` derives by compiling
``sizeof_probe/sizeof_probe.cpp`` against the executorch wheel's headers and reading the array sizes back
with ``arm-none-eabi-nm -S``. Nothing here is typed in by hand: a field missing from the data file
is an error, and tests/interop/test_sizeof.py recompiles the probe and compares.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, fields
from pathlib import Path

from refsim.errors import RefsimError

DATA = Path(__file__).with_name("runtime_sizes.json")


@dataclass(frozen=True)
class Layout:
    """``sizeof`` and ``alignof`` of one type on the 32-bit target, in bytes."""

    size: int
    align: int


@dataclass(frozen=True)
class RuntimeSizes:
    """One `Layout` per type Method::load allocates (names as in the probe), plus provenance."""

    EValue: Layout
    EValue_ptr: Layout
    bool: Layout
    int64_t: Layout
    BoxedEvalueList_int64: Layout
    BoxedEvalueList_Tensor: Layout
    BoxedEvalueList_OptionalTensor: Layout
    OptionalTensor: Layout
    ArrayRef_bool: Layout
    ArrayRef_double: Layout
    ArrayRef_char: Layout
    Tensor: Layout
    TensorImpl: Layout
    SizesType: Layout
    DimOrderType: Layout
    StridesType: Layout
    Chain: Layout
    BackendDelegate: Layout
    OpFunction: Layout
    InstructionArgs: Layout
    TensorMeta: Layout
    PlatformMemoryAllocator: Layout
    Program: Layout
    Method: Layout
    MemoryManager: Layout
    MemoryAllocator: Layout
    HierarchicalAllocator: Layout
    Span_uint8: Layout
    #: executorch::runtime::kTensorDimensionLimit (resolve_operator sizes its temp check with it).
    tensor_dimension_limit: int
    provenance: dict

    @property
    def source(self) -> str:
        p = self.provenance
        executorch = str(p.get("executorch", "?")).split(" ")[0]
        compiler = str(p.get("compiler", "?")).split(" ")[-2:]
        return f"sizeof probe: executorch {executorch} headers, arm-none-eabi-g++ {compiler[0]}"


class SizesError(RefsimError):
    """runtime_sizes.json is missing or lacks a type refsim needs."""


@functools.cache
def runtime_sizes(path: Path = DATA) -> RuntimeSizes:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise SizesError(f"runtime sizes: cannot read {path}: {exc}") from exc
    layouts = {}
    for f in fields(RuntimeSizes):
        if f.name in ("tensor_dimension_limit", "provenance"):
            continue
        try:
            layouts[f.name] = Layout(int(data["sizeof"][f.name]), int(data["alignof"][f.name]))
        except KeyError as exc:
            raise SizesError(f"runtime sizes: {path.name} has no sizeof/alignof of {f.name}") from exc
    try:
        limit = int(data["value"]["kTensorDimensionLimit"])
    except KeyError as exc:
        raise SizesError(f"runtime sizes: {path.name} has no kTensorDimensionLimit") from exc
    return RuntimeSizes(**layouts, tensor_dimension_limit=limit, provenance=data.get("provenance", {}))
