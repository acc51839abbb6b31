"""refsim.testing.golden: each call takes arm_nnfunctions.h's arguments (names, order, struct
types, read from kernels_c's header) and gives, bit for bit, the golden output of the
conformance case it flattens to — for cases drawn by every function's strategy."""

from __future__ import annotations

import dataclasses
import inspect
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings

from refsim.conformance import registry
from refsim.errors import VectorError
from refsim.testing import golden as g
from refsim.testing import strategies as rst

HEADER = Path(__file__).resolve().parents[2] / "kernels_c" / "include" / "arm_nnfunctions.h"


def prototypes() -> dict[str, list[tuple[str, str]]]:
    """Every function of kernels_c's arm_nnfunctions.h: [(C type, argument name)]."""
    text = re.sub(r"/\*.*?\*/", "", HEADER.read_text(), flags=re.S)
    found = {}
    for m in re.finditer(r"\b(\w+)\s*\(([^;{}()]*)\)\s*;", text):
        args = []
        for arg in m.group(2).split(","):
            words = arg.replace("*", " ").split()
            if len(words) >= 2:
                args.append((next(w for w in words if w != "const"), words[-1]))
        found[m.group(1)] = args
    return found


PROTOTYPES = prototypes()


@pytest.mark.parametrize("function", sorted(g.SIGNATURES))
def test_signature_is_the_c_prototype(function):
    names = [name for name, _, _ in g.SIGNATURES[function]]
    assert names == [name for _, name in PROTOTYPES[function]]
    assert list(inspect.signature(getattr(g, function)).parameters) == names


def test_every_cmsis_nn_function_the_harness_runs_has_a_golden_call():
    from refsim.qemu import batch

    runnable = {name for name in registry.functions() if name in batch.FUNCTIONS}
    assert runnable <= set(g.SIGNATURES)


def _struct(ctype: str, params: dict, prefix: str = ""):
    """The dataclass named ``ctype`` from flattened params (nested structs by field name)."""
    cls = getattr(g, ctype)
    values = {}
    for f in dataclasses.fields(cls):
        key = f"{prefix}{f.name}"
        nested = {"stride": "cmsis_nn_tile", "padding": "cmsis_nn_tile", "dilation": "cmsis_nn_tile",
                  "padding_offsets": "cmsis_nn_tile", "activation": "cmsis_nn_activation",
                  "fc_params": "cmsis_nn_fc_params"}  # fmt: skip
        values[f.name] = _struct(nested[f.name], params, f"{key}.") if f.name in nested else params[key]
    return cls(**values)


def c_arguments(function: str, arrays: dict, params: dict) -> list:
    """A conformance case as C's argument list: structs as the dataclasses of their C types,
    arrays flat (as pointers are), NULL bias as None, outputs omitted (None)."""
    types = dict((name, ctype) for ctype, name in PROTOTYPES[function])
    args = []
    for name, kind, vector in g.SIGNATURES[function]:
        if kind in ("ctx", "out", "unused"):
            args.append(None)
        elif kind == "struct":
            args.append(_struct(types[name], params))
        elif kind == "quant":
            args.append(g.cmsis_nn_per_channel_quant_params(arrays["multiplier"], arrays["shift"]))
        elif kind == "dims":
            args.append(g.cmsis_nn_dims(*(params[f"{name}.{k}"] for k in "nhwc")))
        elif kind == "scalar":
            args.append(params[name] if name in params else arrays["input"].size)  # refsim_lut_s8's size
        elif params.get("bias_is_null") and vector in ("bias", "bias_data"):
            args.append(None)
        else:
            args.append(arrays[vector].reshape(-1).copy())
    return args


@settings(max_examples=4)
@pytest.mark.parametrize("function", sorted(g.SIGNATURES))
@given(data=rst.st.data())
def test_golden_call_equals_the_conformance_case(function, data):
    arrays, params = data.draw(rst.arguments(function))
    expected = np.asarray(registry.get(function).run(arrays, params))
    args = c_arguments(function, arrays, params)
    got = getattr(g, function)(*args)
    np.testing.assert_array_equal(got.reshape(-1), expected.reshape(-1))
    # The output pointer, when given, receives the result.
    outs = [i for i, (_, kind, _) in enumerate(g.SIGNATURES[function]) if kind == "out"]
    if outs:
        buffer = np.zeros(expected.size, expected.dtype)
        args[outs[0]] = buffer
        getattr(g, function)(*args)
        np.testing.assert_array_equal(buffer, expected.reshape(-1))


def test_structs_as_dicts_and_tuples():
    x = np.arange(-8, 8, dtype=np.int8)
    kwargs = dict(input_1_offset=3, input_2_offset=-2, out_offset=1, out_mult=1 << 30, out_shift=-3,
                  out_activation_min=-128, out_activation_max=127, block_size=16)  # fmt: skip
    got = g.arm_elementwise_mul_s8(x, x[::-1].copy(), **kwargs)
    case = g.to_case("arm_elementwise_mul_s8", x, x[::-1].copy(), **kwargs)
    np.testing.assert_array_equal(got, case.output)
    a = g.arm_max_pool_s8(None, {"stride": {"w": 1, "h": 1}, "padding": {"w": 0, "h": 0},
                                 "activation": {"min": -128, "max": 127}},
                          (1, 2, 2, 4), np.arange(16, dtype=np.int8), (1, 2, 2, 1), (1, 1, 1, 4))  # fmt: skip
    np.testing.assert_array_equal(a.reshape(-1), [12, 13, 14, 15])


def test_bad_arguments_are_one_line_errors():
    with pytest.raises(TypeError, match="lacks argument"):
        g.arm_relu6_s8(np.zeros(3, np.int8))
    with pytest.raises(VectorError, match="input_dims as a tuple must be"):
        g.arm_max_pool_s8(
            None, g.cmsis_nn_pool_params(), (1, 2, 2), np.zeros(4, np.int8), (1, 1, 1, 1), (1, 2, 2, 1)
        )
