"""Every zoo model compiles for M55 and M4, runs in refsim, tracks its float model, matches an
independent integer evaluation bit for bit, and plans memory at the live-bytes bound."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("torchao")

from compiler import zoo
from compiler.evaluate import agreement, run_float_inputs
from kernels_py.quantize import quantize_per_tensor
from refsim.runtime import Program
from tests.compiler.oracle import Oracle
from tests.compiler.zoo_cache import TARGETS, compiled, float_outputs

MODELS = sorted(zoo.MODELS)
BUNDLED = json.loads(
    (Path(__file__).resolve().parents[2] / "examples" / "models" / "models.json").read_text()
)
#: ExecuTorch 1.5.1's own arena for the same architecture (examples/models, its greedy planner).
EXECUTORCH_ARENA = {(k, "cortex-m55"): v["arena_bytes"][0] for k, v in BUNDLED.items() if k in zoo.MODELS}
EXECUTORCH_ARENA[("kws", "cortex-m4")] = BUNDLED["kws_m4"]["arena_bytes"][0]
MIN_SNR_DB = 20.0


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", MODELS)
def test_zoo_model_tracks_float(name, target):
    result = compiled(name, target)
    inputs, reference = float_outputs(name)
    got = agreement(reference, run_float_inputs(result.pte, inputs))
    print(f"{name} {target}: SNR {got.snr_db:.1f} dB, top-1 {got.top1:.3f} on {got.samples} inputs")
    assert got.samples == len(inputs) == 256
    assert got.snr_db >= MIN_SNR_DB, f"{name} on {target}: {got}"
    if reference.shape[1] > 2:  # classifiers with more than two classes
        assert got.top1 >= 0.9, f"{name} on {target}: {got}"


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", MODELS)
def test_refsim_equals_independent_integer_evaluation(name, target):
    result = compiled(name, target)
    method = Program.load(result.pte).method("forward")
    graph = result.graph
    first = graph.tensors[graph.inputs[0]]
    inputs, _ = float_outputs(name)
    for x in inputs[:4]:
        q = quantize_per_tensor(x[None], first.scale, first.zero_point, -128, 127, np.int8)
        (ours,) = method.execute([q])
        (oracle,) = Oracle(graph).run([q])
        np.testing.assert_array_equal(ours, oracle)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", MODELS)
def test_memory_plan_reaches_the_bound_and_beats_executorch(name, target):
    result = compiled(name, target)
    plan = result.planned.plan
    assert plan.arena_bytes == plan.lower_bound, {k: p.arena_bytes for k, p in result.planned.plans.items()}
    loaded = Program.load(result.pte).method("forward")  # the runtime's plan verifier passes
    assert loaded is not None
    executorch = EXECUTORCH_ARENA.get((name, target))
    if executorch is not None:
        assert plan.arena_bytes <= executorch
    # every layer of the zoo is int8 (or folded into one): nothing left in fp32
    assert {layer.status for layer in result.layers} <= {"int8", "fused", "folded", "view"}


def test_mve_and_dsp_programs_differ_as_the_tiers_need():
    """Same weights and quantization; MVE linear carries kernel sums, DSP the bias; scratch
    sizes follow each tier's get_buffer_size (KWS: MVE depthwise scratch, DSP none)."""
    mve, dsp = compiled("kws", "cortex-m55"), compiled("kws", "cortex-m4")
    linear = {
        r.target.isa: next(c for c in r.graph.calls if c.op.endswith("quantized_linear")) for r in (mve, dsp)
    }
    assert linear["mve"].args[2] is None and linear["mve"].args[3] is not None
    assert linear["dsp"].args[2] is not None and linear["dsp"].args[3] is None
    scratch = {
        r.target.isa: [r.graph.tensors[s].nbytes for c in r.graph.calls for s in c.scratch]
        for r in (mve, dsp)
    }
    assert max(scratch["mve"]) == 4464 and max(scratch["dsp"]) == 256
    assert mve.arena_bytes == 20464 and dsp.arena_bytes == 16000
