"""RAM/flash accounting of refsim.memory: the Method::load replay, arena bytes, kernel code, the CLI faces.

The replay is checked against allocations written out by hand from method.cpp's order with the
committed 32-bit sizes; the live-bytes line against compiler.planner's independent bound.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from compiler.planner.model import lower_bound
from compiler.planner.program import buffers_from_program
from refsim.cli import main
from refsim.memory import flash as flash_mod
from refsim.memory.flash import _library_code, kernel_code_lines
from refsim.memory.lines import Line, total
from refsim.memory.plot import live_bytes
from refsim.memory.ram import BumpAllocator, method_pools, planned_bytes, ram_lines
from refsim.memory.sizes import runtime_sizes
from refsim.pte import model as m
from refsim.runtime import Program
from refsim.runtime.describe import scratch_values

MODELS_DIR = Path(__file__).resolve().parents[2] / "examples" / "models"
MODELS = ("kws", "vww", "ic", "ad")
S = runtime_sizes()
HAVE_ARM = all(shutil.which(f"arm-none-eabi-{t}") for t in ("gcc", "nm", "objdump", "ar"))


def _tensor(sizes, offset=None, dynamism=m.ShapeDynamism.STATIC) -> m.Tensor:
    alloc = None if offset is None else m.Allocation(memory_id=1, offset=offset)
    return m.Tensor(
        scalar_type=m.ScalarType.INT8,
        sizes=tuple(sizes),
        dim_order=tuple(range(len(sizes))),
        allocation=alloc,
        shape_dynamism=dynamism,
    )


def _plan(values, instructions, inputs=(0,), outputs=(1,), sizes=(0, 64)) -> m.ExecutionPlan:
    return m.ExecutionPlan(
        name="forward",
        values=tuple(values),
        inputs=inputs,
        outputs=outputs,
        chains=(m.Chain(inputs=inputs, outputs=outputs, instructions=tuple(instructions)),),
        operators=(m.Operator("aten::add", "out"),),
        non_const_buffer_sizes=sizes,
    )


def _align(n: int, a: int) -> int:
    return n + (-n % a)


def test_sizes_are_the_32bit_abi():
    # Pointers are 4 bytes on the target; EValue holds an 8-byte payload union and a tag.
    assert S.EValue_ptr.size == 4 and S.OpFunction.size == 4
    assert S.EValue.align == 8 and S.int64_t.size == 8
    assert S.InstructionArgs.size == 2 * S.EValue_ptr.size  # Span = pointer + size_t
    assert S.provenance["cores"] == ["cortex-m55", "cortex-m4"]


def test_bump_allocator_pads_to_each_alignment():
    bump = BumpAllocator()
    bump.take(S.bool, 3, "a")
    bump.take(S.int64_t, 1, "b")
    assert bump.cursor == 8 + 8 and bump.by_category["alignment padding"] == 5


def test_method_pool_follows_method_cpp_order():
    values = [
        _tensor([1, 4, 4, 2], 0),  # input
        _tensor([1, 32], 32),  # output
        m.IntList((3, 4, 5)),
        m.Int(1),
        m.Int(2),
        m.Int(3),
        m.Null(),
        _tensor([2, 2], None, m.ShapeDynamism.DYNAMIC_BOUND),
    ]
    call = m.KernelCall(op_index=0, args=(0, 2, 6, 1, 1))
    plan = _plan(values, [call])
    # Written out in method.cpp's order: values table, input_set, per value, delegates, chains.
    steps = [
        (S.EValue, len(values)),
        (S.bool, 1),
        (S.StridesType, 4),
        (S.TensorImpl, 1),
        (S.StridesType, 2),
        (S.TensorImpl, 1),
        (S.EValue_ptr, 3),
        (S.int64_t, 3),
        (S.BoxedEvalueList_int64, 1),
        (S.SizesType, 2),  # dynamic: sizes copied
        (S.DimOrderType, 2),  # and dim_order
        (S.StridesType, 2),
        (S.TensorImpl, 1),
        (S.BackendDelegate, 0),  # zero delegates still align
        (S.Chain, 1),
        (S.OpFunction, 1),
        (S.InstructionArgs, 1),
        (S.EValue_ptr, 5),
    ]

    def fold(seq) -> int:
        c = 0
        for layout, count in seq:
            c = _align(c, layout.align) + layout.size * count
        return c

    c = fold(steps)
    # Without a temp pool: a PlatformMemoryAllocator first, the call's metadata last.
    meta = [(S.TensorMeta, 5), (S.DimOrderType, 4), (S.DimOrderType, 2), (S.DimOrderType, 2)]
    c_no_temp = fold([(S.PlatformMemoryAllocator, 1), *steps, *meta])
    pools = method_pools(plan)
    assert pools.method_pool == c
    assert sum(pools.by_category.values()) == c
    assert pools.fallback_extra == c_no_temp - c
    # Temp pool: 5 args, three of them tensors (4-D, 2-D twice).
    assert pools.temp_pool_threshold == 5 * (
        S.TensorMeta.size + S.tensor_dimension_limit * S.DimOrderType.size
    )
    assert pools.temp_pool_used == 5 * S.TensorMeta.size + 4 + 2 + 2


def test_planned_bytes_counts_reused_offsets_once():
    values = [_tensor([16], 0), _tensor([16], 0), _tensor([8], 8), _tensor([4], 40), _tensor([4])]
    plan = _plan(values, [])
    assert planned_bytes(plan, {0, 1}) == 16
    assert planned_bytes(plan, {0, 2}) == 16
    assert planned_bytes(plan, {0, 3}) == 20
    assert planned_bytes(plan, {4}) == 0  # not memory-planned


def test_unplanned_io_is_an_application_buffer():
    plan = _plan([_tensor([10]), _tensor([6], 0)], [])
    lines = {ln.name: ln for ln in ram_lines(plan, set())}
    assert lines["input/output buffers outside the arenas"].bytes == 10
    assert lines["planned inputs/outputs"].bytes == 6


@pytest.mark.parametrize("name", MODELS)
def test_bundled_programs_ram(name):
    program = Program.load(MODELS_DIR / f"{name}.pte")
    method = program.method("forward")
    plan = method.plan
    lines = ram_lines(plan, scratch_values(method))
    by = {ln.name: ln for ln in lines}
    tensors = sum(isinstance(v, m.Tensor) for v in plan.values)
    assert by["values table (EValues)"].bytes == len(plan.values) * S.EValue.size
    assert by["TensorImpls"].bytes == tensors * S.TensorImpl.size
    arena = plan.non_const_buffer_sizes[1]
    assert by["planned arena 1"].bytes == arena
    assert 0 <= by["CMSIS-NN scratch (memory-planned)"].bytes <= arena
    assert 0 < by["planned inputs/outputs"].bytes <= arena
    parts = sum(ln.bytes for ln in lines if ln.part_of == "ExecuTorch method allocator")
    assert parts == by["ExecuTorch method allocator"].bytes
    assert total(lines, "ram") == sum(ln.bytes for ln in lines if ln.part_of is None)


@pytest.mark.parametrize("name", MODELS)
def test_live_bytes_equal_the_planner_bound(name):
    method = Program.load(MODELS_DIR / f"{name}.pte").method("forward")
    steps = sum(len(c.instructions) for c in method.plan.chains)
    _, buffers = buffers_from_program(MODELS_DIR / f"{name}.pte")
    assert max(live_bytes(method.placements, 1, steps)) == lower_bound(buffers, alignment=1)


def test_kernel_code_without_tools_says_so(monkeypatch):
    monkeypatch.setattr(flash_mod.shutil, "which", lambda name: None)
    (line,) = kernel_code_lines(
        ["cortex_m::quantized_linear.out", "aten::view_copy.out"], "cortex-m55", library="kernels_c"
    )
    assert line.bytes is None and "arm-none-eabi tools missing" in line.source


@pytest.mark.skipif(not HAVE_ARM, reason="arm-none-eabi toolchain not installed")
@pytest.mark.parametrize("core", ["cortex-m55", "cortex-m4", "cortex-m0plus", "cortex-m85"])
def test_kernel_code_from_the_harness(core):
    lines = kernel_code_lines(
        ["cortex_m::quantized_conv2d.out", "cortex_m::softmax.out"], core, library="kernels_c"
    )
    whole, lower, *entries = lines
    assert whole.name == "CMSIS-NN kernel code" and whole.bytes > 0
    built_for = {"cortex-m0plus": "for cortex-m0plus (-O2", "cortex-m85": "-mcpu=cortex-m55"}
    assert built_for.get(core, f"for {core} (-O2") in whole.source
    if core == "cortex-m0plus":  # the ARMv6-M build has only the scalar tier
        assert lower.bytes == 0
    assert {e.name for e in entries} == {"arm_convolve_wrapper_s8", "arm_softmax_s8"}
    assert all(0 < e.bytes <= whole.bytes for e in entries)
    assert max(e.bytes for e in entries) < whole.bytes <= sum(e.bytes for e in entries)
    assert 0 <= lower.bytes < whole.bytes


@pytest.mark.skipif(not HAVE_ARM, reason="arm-none-eabi toolchain not installed")
def test_kernels_dir_pulls_members_like_a_linker(tmp_path):
    sources = {
        "pad.c": "int helper(int); int arm_pad_s8(int x) { return helper(x) + 1; }",
        "helper.c": "int helper(int x) { return x * 3 + 7; }",
        "unused.c": "int arm_softmax_s8(int x) { return x - 1; }",
    }
    objects = []
    for fname, text in sources.items():
        (tmp_path / fname).write_text(text)
        obj = tmp_path / fname.replace(".c", ".o")
        subprocess.run(
            [
                "arm-none-eabi-gcc",
                "-mthumb",
                "-mcpu=cortex-m4",
                "-O2",
                "-c",
                str(tmp_path / fname),
                "-o",
                str(obj),
            ],
            check=True,
        )
        objects.append(obj)
    lib = tmp_path / "lib"
    lib.mkdir()
    subprocess.run(["arm-none-eabi-ar", "rcs", str(lib / "libk.a"), *map(str, objects)], check=True)

    def text_size(obj: Path) -> int:
        out = subprocess.run(["arm-none-eabi-size", "-A", str(obj)], capture_output=True, text=True).stdout
        return sum(int(line.split()[1]) for line in out.splitlines() if line.startswith(".text"))

    nbytes, what = _library_code(lib, ["arm_pad_s8"])
    assert nbytes == text_size(objects[0]) + text_size(objects[1])
    assert what.startswith("2 members")


def _cli(capsys, *argv):
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_inspect_memory_json_has_every_line(tmp_path, capsys):
    out = tmp_path / "kws.json"
    code, _, _ = _cli(capsys, "inspect", MODELS_DIR / "kws.pte", "--memory", "--json", out)
    assert code == 0
    budget = json.loads(out.read_text())["methods"][0]["memory_budget"]
    lines = [Line(**ln) for ln in budget["lines"]]
    assert budget["ram_total"] == total(lines, "ram")
    assert budget["flash_total"] == total(lines, "flash")
    assert all(ln.source or ln.part_of for ln in lines)
    flash = {ln.name: ln.bytes for ln in lines if ln.section == "flash"}
    assert flash["program (.pte)"] == (MODELS_DIR / "kws.pte").stat().st_size
    assert budget["kernel_library"] == "cmsis-nn"  # the real library by default, named in the report


def test_inspect_plot_memory_writes_a_png(tmp_path, capsys):
    out = tmp_path / "ad.png"
    code, _, _ = _cli(capsys, "inspect", MODELS_DIR / "ad.pte", "--plot-memory", out)
    assert code == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["--memory", "--cpu", "cortex-m99"], "unknown --cpu"),
        (["--plot-memory", "x.svg"], ".png"),
        (["--plot-memory", "/nonexistent/dir/x.png"], "does not exist"),
        (["--memory", "--kernels-dir", "/nonexistent"], "not a directory"),
        (["--memory", "--library", "cmsis"], "--library must be one of cmsis-nn, kernels_c"),
        (["--memory", "--json", "/nonexistent/dir/x.json"], "--json /nonexistent/dir/x.json"),
    ],
)
def test_inspect_memory_bad_arguments_are_one_line(capsys, argv, fragment):
    code, _, err = _cli(capsys, "inspect", MODELS_DIR / "ad.pte", *argv)
    assert code == 2
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and fragment in lines[0]


def test_kernel_code_when_the_harness_cannot_build(monkeypatch):
    import refsim.qemu.timing as timing
    from refsim.qemu.errors import ToolchainMissingError

    def fail(model):
        raise ToolchainMissingError(
            "kernels_c: arm-none-eabi-gcc has no newlib", package="libnewlib-arm-none-eabi"
        )

    monkeypatch.setattr(flash_mod, "_binutil", lambda name: f"/usr/bin/arm-none-eabi-{name}")
    monkeypatch.setattr(flash_mod.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(timing, "harness_for", fail)
    (line,) = kernel_code_lines(["cortex_m::softmax.out"], "cortex-m4", library="kernels_c")
    assert line.bytes is None and "no newlib" in line.source


@pytest.mark.parametrize("core", ["cortex-m55", "cortex-m4", "cortex-m0plus", "cortex-m85"])
def test_kernel_code_defaults_to_the_real_cmsis_nn(core, monkeypatch):
    """The default needs no toolchain: the real CMSIS-NN's sizes as ExecuTorch builds it, shipped
    as data (cmsis_nn_code.json), the same library data the TFLM side's flash uses."""
    from refsim.memory.cmsis_nn_code import library_code

    monkeypatch.setattr(flash_mod.shutil, "which", lambda name: None)
    whole, *entries = kernel_code_lines(["cortex_m::quantized_conv2d.out", "cortex_m::softmax.out"], core)
    assert whole.name == "CMSIS-NN kernel code" and whole.bytes > 0
    assert "built as executorch builds it (-Ofast)" in whole.source
    assert {e.name for e in entries} == {"arm_convolve_wrapper_s8", "arm_softmax_s8"}
    assert max(e.bytes for e in entries) < whole.bytes <= sum(e.bytes for e in entries)
    lib = library_code("executorch", core)
    assert whole.bytes == lib.bytes_of(lib.closure(["arm_convolve_wrapper_s8", "arm_softmax_s8"]))
    assert "arm_convolve_s8" in lib.closure(["arm_convolve_wrapper_s8"])
    with pytest.raises(flash_mod.KernelCodeError, match="--library must be one of"):
        kernel_code_lines(["cortex_m::softmax.out"], core, library="cmsis")


def test_external_constants_are_refused_by_name():
    from refsim.errors import UnsupportedError

    external = dataclasses.replace(
        _tensor([4]), data_buffer_idx=0, extra=m.ExtraTensorInfo(location=m.TensorDataLocation.EXTERNAL)
    )
    plan = _plan([_tensor([4], 0), _tensor([4], 16), external], [])
    with pytest.raises(UnsupportedError, match=r"values\[2\] is an external"):
        method_pools(plan)


def test_delegates_are_named_as_not_counted():
    plan = dataclasses.replace(
        _plan([_tensor([4], 0), _tensor([4], 16)], [m.DelegateCall(delegate_index=0, args=(0, 1))]),
        delegates=(m.BackendDelegate(id="EthosUBackend", location=m.DataLocation.SEGMENT, index=0),),
    )
    pools = method_pools(plan)
    assert pools.by_category["backend delegates"] == S.BackendDelegate.size
    assert pools.by_category["kernel-call argument lists"] == 2 * S.EValue_ptr.size
    lines = {ln.name: ln for ln in ram_lines(plan, set())}
    assert lines["delegate init allocations"].bytes is None
