"""Layers with no int8 cortex_m form stay fp32 on refsim's portable kernels: every such call
computes what torch computes on the same inputs, the summary names each with its reason,
and ExecuTorch's loader accepts the file."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchao")

from compiler.api import compile  # noqa: E402
from compiler.errors import UnsupportedLayerError  # noqa: E402
from compiler.evaluate import agreement, run_float_inputs  # noqa: E402
from compiler.ir import TensorArg  # noqa: E402
from kernels_py.quantize import quantize_per_tensor  # noqa: E402
from refsim.runtime import Program  # noqa: E402

FP32_LAYERS = {
    "sigmoid", "tanh", "gelu", "hardswish", "exp", "neg", "conv_transpose2d", "mean", "bmm",
    "sub", "div", "silu", "softmax", "max_pool2d", "permute", "cat",
}  # fmt: skip


class _Mixed(torch.nn.Module):
    """int8 conv → fp32 island (sigmoid, tanh, gelu, hardswish, exp, transposed conv) → int8
    conv → fp32 mean, bmm, softmax over a non-last dim, max pool with ceil_mode, cat, permute."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(7)
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.up = torch.nn.ConvTranspose2d(8, 4, 2, stride=2)
        self.conv2 = torch.nn.Conv2d(4, 6, 3)
        self.fc = torch.nn.Linear(6, 5)

    def forward(self, x):
        y = self.conv(x)
        a = torch.sigmoid(y) * torch.tanh(y) - torch.nn.functional.gelu(y) / 4.0
        a = a + torch.nn.functional.hardswish(y) + torch.nn.functional.silu(y)
        u = self.up(torch.exp(-a))
        z = self.conv2(u)  # [1, 6, 14, 14]
        p = torch.nn.functional.max_pool2d(z, 3, 2, ceil_mode=True)  # fp32: ceil_mode
        s = torch.softmax(p, dim=1)
        m = torch.cat([z.mean(dim=(2, 3)), s.permute(0, 2, 3, 1).mean(dim=(1, 2))], dim=1)  # [1, 12]
        f = self.fc(m[:, :6] + m[:, 6:])
        return torch.bmm(f.view(1, 5, 1), f.view(1, 1, 5))


def _samples(shape, n, seed):
    g = torch.Generator().manual_seed(seed)
    return [torch.rand(shape, generator=g) * 2 - 1 for _ in range(n)]


@pytest.fixture(scope="module")
def mixed():
    model = _Mixed().eval()
    calibration = _samples((1, 3, 8, 8), 16, 1)
    return model, compile(model, (calibration[0],), target="cortex-m55", calibration=calibration)


def _torch_call(graph, call, values: dict[str, np.ndarray]):
    """The call through torch's own ``.out`` overload of the same schema, on the same inputs."""
    ns, name = call.op.split("::")
    overload = getattr(getattr(getattr(torch.ops, ns), name), call.overload)
    schema = overload._schema
    inputs = [a for a in schema.arguments if not a.is_out]
    outs = [a for a in schema.arguments if a.is_out]

    def value(a):
        if isinstance(a, TensorArg):
            return torch.from_numpy(values[a.name].copy())
        if isinstance(a, tuple) and a and isinstance(a[0], TensorArg):
            return [value(x) for x in a]
        return list(a) if isinstance(a, tuple) else a

    args, kwargs = [], {}
    for spec, a in zip(inputs, call.args, strict=True):
        (kwargs.__setitem__(spec.name, value(a)) if spec.kwarg_only else args.append(value(a)))
    for o, name in zip(outs, (call.out, *call.extra_outs), strict=True):
        # out tensors of the sizes the program declares: torch resizes (and warns) if it disagrees
        dtype = torch.int64 if o.name == "indices" else torch.float32
        kwargs[o.name] = torch.empty(graph.tensors[name].sizes, dtype=dtype)
    overload(*args, **kwargs)
    return [kwargs[o.name].numpy() for o in outs]


def _pairs(arg, value):
    """(tensor name, TensorRef) for a TensorArg or a tensor list argument."""
    if isinstance(arg, TensorArg):
        return [(arg.name, value)]
    if isinstance(arg, tuple) and arg and isinstance(arg[0], TensorArg):
        return [(t.name, v) for t, v in zip(arg, value, strict=True)]
    return []


def _fp32_calls_match_torch(result, samples) -> set[str]:
    """Run the program in refsim on ``samples``, recording every tensor each call reads and
    writes; each portable call's outputs must equal torch's ``.out`` overload on the inputs
    refsim gave it, and each dim-order copy must keep the logical values. The ops checked."""
    method = Program.load(result.pte).method("forward")
    graph, calls = result.graph, result.graph.calls
    first = graph.tensors[graph.inputs[0]]
    checked = set()
    for x in samples:
        values: dict[str, np.ndarray] = {}

        def trace(pc, bound, phase, values=values):
            call = calls[pc]
            slots = [*call.args, *(TensorArg(n) for n in (call.out, *call.extra_outs))]
            for arg, value in zip(slots, bound.args._values, strict=False):
                for t, v in _pairs(arg, value):
                    if graph.tensors[t].data is None:
                        values[t] = v.logical.copy()

        x = x.numpy()
        if first.scale is not None:
            x = quantize_per_tensor(x, first.scale, first.zero_point, -128, 127, np.int8)
        method.execute([x], trace=trace)
        for call in calls:
            if call.op == "dim_order_ops::_to_dim_order_copy":
                np.testing.assert_array_equal(values[call.out], values[call.args[0].name])
                checked.add(call.op)
            if not call.op.startswith("aten::"):
                continue
            inputs = {}
            for a in call.args:
                for t in a if isinstance(a, tuple) else (a,):
                    if isinstance(t, TensorArg):
                        data = graph.tensors[t.name].data
                        inputs[t.name] = values[t.name] if data is None else data
            want = _torch_call(graph, call, inputs)
            got = [values[n] for n in (call.out, *call.extra_outs)]
            for w, g in zip(want, got, strict=True):
                assert w.shape == g.shape, (
                    call,
                    {k: v.shape for k, v in inputs.items()},
                    graph.tensors[call.out].sizes,
                )
                if w.dtype == np.int64:
                    np.testing.assert_array_equal(g, w, err_msg=f"{call.op} {call.layer}")
                else:
                    np.testing.assert_allclose(
                        g,
                        w,
                        rtol=1e-5,
                        atol=1e-6 * max(1.0, float(np.abs(w).max(initial=0))),
                        err_msg=f"{call.op} {call.layer}",
                    )
            checked.add(call.op)
    return checked


def test_layers_without_int8_form_run_fp32_and_match_torch(mixed):
    model, result = mixed
    fp32 = {x.name.rstrip("_0123456789") for x in result.layers if x.status == "fp32"}
    assert fp32 >= FP32_LAYERS, FP32_LAYERS - fp32
    assert all(x.detail.startswith(("no int8", "not quantized")) for x in result.layers if x.status == "fp32")
    ops = {(c.op, c.overload) for c in result.graph.calls}
    assert ops >= {
        ("aten::sigmoid", "out"), ("aten::tanh", "out"), ("aten::gelu", "out"), ("aten::hardswish", "out"),
        ("aten::exp", "out"), ("aten::convolution", "out"), ("aten::mean", "out"), ("aten::bmm", "out"),
        ("aten::_softmax", "out"), ("aten::max_pool2d_with_indices", "out"), ("aten::cat", "out"),
        ("aten::permute_copy", "out"), ("aten::div", "out"), ("dim_order_ops::_to_dim_order_copy", "out"),
    }  # fmt: skip
    transposed = [c for c in result.graph.calls if c.op == "aten::convolution"]
    assert [c.args[6] for c in transposed] == [True]

    checked = _fp32_calls_match_torch(result, _samples((1, 3, 8, 8), 3, 2))
    print("checked against torch:", sorted(checked))
    assert len(checked) >= 12

    xs = torch.cat(_samples((1, 3, 8, 8), 32, 3))
    with torch.no_grad():
        reference = np.concatenate([model(x[None]).numpy() for x in xs])
    got = agreement(reference, run_float_inputs(result.pte, xs.numpy()))
    print(f"mixed fp32/int8 model: {got}")
    assert got.snr_db >= 15


class _FloatEdges(torch.nn.Module):
    """A float graph input read by an fp32 sigmoid, a BatchNorm that follows no conv (not
    folded: fp32, contiguous), avg pool with ceil_mode, an fp32 output (hardsigmoid)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(5)
        self.conv, self.bn, self.fc = torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8), torch.nn.Linear(8, 4)
        with torch.no_grad():
            self.bn.running_mean.uniform_(-0.5, 0.5)
            self.bn.running_var.uniform_(0.5, 2.0)

    def forward(self, x):
        y = self.bn(torch.tanh(self.conv(torch.sigmoid(x))))
        y = torch.flatten(torch.nn.functional.adaptive_avg_pool2d(y, 1), 1)
        return torch.nn.functional.hardsigmoid(self.fc(y))


def test_fp32_at_the_graph_edges_and_unfolded_batch_norm():
    model = _FloatEdges().eval()
    calibration = _samples((1, 3, 9, 9), 8, 6)
    result = compile(model, (calibration[0],), target="cortex-m4", calibration=calibration)
    graph = result.graph
    assert graph.tensors[graph.inputs[0]].scale is None  # the program takes the float input
    assert graph.tensors[graph.outputs[0]].dtype.name == "FLOAT32"
    layers = {x.name: x for x in result.layers}
    assert (
        layers["batch_norm"].status == "fp32"
        and "_native_batch_norm_legit_no_training" in layers["batch_norm"].detail
    )
    checked = _fp32_calls_match_torch(result, _samples((1, 3, 9, 9), 2, 7))
    assert checked >= {
        "aten::sigmoid", "aten::tanh", "aten::_native_batch_norm_legit_no_training", "aten::hardsigmoid",
        "dim_order_ops::_to_dim_order_copy",
    }  # fmt: skip
    xs = torch.cat(_samples((1, 3, 9, 9), 16, 8))
    with torch.no_grad():
        reference = model(xs).numpy()
    assert agreement(reference, run_float_inputs(result.pte, xs.numpy())).snr_db >= 20


class _Layouts(torch.nn.Module):
    """A flatten of channels-last int8 bytes in another element order (an int8 dim-order copy,
    then a view), conv1d, squeeze/unsqueeze, transpose, matmul, slice, a full sum."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(9)
        self.conv, self.fc, self.c1 = (
            torch.nn.Conv2d(3, 4, 3),
            torch.nn.Linear(100, 6),
            torch.nn.Conv1d(1, 2, 3),
        )

    def forward(self, x):
        f = self.fc(torch.flatten(torch.relu(self.conv(x)), 1))
        g = self.c1(f.unsqueeze(1)).squeeze(0)  # [2, 4]
        return torch.matmul(g, g.transpose(0, 1)) + f[:, :2].sum() * 2


def test_layout_ops_and_flatten_of_channels_last_bytes():
    model = _Layouts().eval()
    calibration = _samples((1, 3, 7, 7), 8, 10)
    result = compile(model, (calibration[0],), target="cortex-m55", calibration=calibration)
    layers = {x.name: x for x in result.layers}
    assert layers["flatten"].status == "view" and "dim-order copy" in layers["flatten"].detail
    assert {layers[n].status for n in ("conv1d", "transpose", "matmul", "sum_1", "unsqueeze")} == {"fp32"}
    checked = _fp32_calls_match_torch(result, _samples((1, 3, 7, 7), 2, 11))
    assert checked >= {
        "aten::convolution", "aten::unsqueeze_copy", "aten::squeeze_copy", "aten::permute_copy", "aten::mm",
        "aten::slice_copy", "aten::sum", "dim_order_ops::_to_dim_order_copy",
    }  # fmt: skip
    copies = [c for c in result.graph.calls if c.op == "dim_order_ops::_to_dim_order_copy"]
    assert [result.graph.tensors[c.out].dtype.name for c in copies] == ["INT8"]


def test_executorch_loader_accepts_a_program_with_fp32_layers(mixed):
    runtime = pytest.importorskip("executorch.runtime")
    program = runtime.Runtime.get().load_program(mixed[1].pte)
    assert "forward" in program.method_names
    meta = program.metadata("forward")
    assert meta.num_inputs() == 1 and meta.num_outputs() == 1


class _Unflatten(torch.nn.Module):
    """A linear's [1, 8] viewed as [1, 2, 2, 2] for an int8 pool (row-major bytes, so an int8
    dim-order copy to channels-last), a mean over everything, a broadcasting add (fp32)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(13)
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x):
        y = torch.nn.functional.relu6(self.fc(x))
        return torch.nn.functional.avg_pool2d(y.view(1, 2, 2, 2), 2).flatten(1) + y.mean()


def test_int8_view_to_4d_and_mean_over_everything():
    model = _Unflatten().eval()
    calibration = _samples((1, 8), 8, 14)
    result = compile(model, (calibration[0],), target="cortex-m55", calibration=calibration)
    layers = {x.name: x for x in result.layers}
    assert "dim-order copy to channels-last" in layers["view"].detail
    assert layers["add"].status == "fp32" and "broadcasting" in layers["add"].detail
    checked = _fp32_calls_match_torch(result, _samples((1, 8), 2, 15))
    assert checked >= {"aten::mean", "aten::add", "dim_order_ops::_to_dim_order_copy"}
    xs = calibration  # inside the calibrated ranges: no clipping, only rounding
    with torch.no_grad():
        reference = np.concatenate([model(x).numpy() for x in xs])
    got = np.concatenate([run_float_inputs(result.pte, x.numpy()) for x in xs])
    assert agreement(reference, got).snr_db >= 30


def _signatures(data: bytes) -> list[tuple]:
    """Per kernel call: the operator and every argument's kind — tensors by dtype and sizes,
    scalars and int lists by value."""
    from refsim.pte import model as m
    from refsim.pte.reader import load_program

    plan = load_program(data).program.plan("forward")
    out = []
    for ins in plan.chains[0].instructions:
        op = plan.operators[ins.op_index]
        args = []
        for index in ins.args:
            v = plan.values[index]
            if isinstance(v, m.Tensor):
                args.append(("Tensor", v.scalar_type.name, tuple(v.sizes)))
            elif isinstance(v, m.IntList):
                args.append(("IntList", tuple(plan.values[i].value for i in v.items)))
            elif isinstance(v, m.TensorList):
                args.append(("TensorList", len(v.items)))
            else:
                args.append((type(v).__name__, getattr(v, "value", None)))
        out.append((f"{op.name}.{op.overload}", tuple(args)))
    return out


def test_fp32_calls_have_executorchs_own_arguments(mixed):
    """ExecuTorch 1.5.1 exporting the same module in fp32 emits each of our portable calls
    with the same operator, overload and argument kinds, values and tensor sizes."""
    pytest.importorskip("executorch.exir")
    from executorch.exir import to_edge_transform_and_lower

    layouts = _Layouts().eval()
    cases = [(*mixed, (1, 3, 8, 8))]
    calibration = _samples((1, 3, 7, 7), 4, 12)
    cases.append((layouts, compile(layouts, (calibration[0],), calibration=calibration), (1, 3, 7, 7)))
    for model, result, shape in cases:
        example = tuple(_samples(shape, 1, 1))
        program = to_edge_transform_and_lower(torch.export.export(model, example)).to_executorch()
        theirs = set(_signatures(program.buffer))
        # ExecuTorch's default edge config decomposes hardswish (kept as aten::hardswish.out
        # only with preserve_ops); the dim-order copies are ours (its float export is contiguous).
        ours = [c for c in _signatures(result.pte) if c[0].startswith("aten::") and "hardswish" not in c[0]]
        assert len(ours) >= 8
        missing = [c for c in ours if c not in theirs]
        assert not missing, missing


class _Sin(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x):
        return torch.sin(self.fc(x))


def test_layer_refsim_cannot_run_is_a_clear_error():
    x = torch.zeros(1, 8)
    with pytest.raises(UnsupportedLayerError, match=r"layer sin .*no fp32 kernel"):
        compile(_Sin().eval(), (x,), target="cortex-m55", calibration=[x])
