"""Measure ExecuTorch's per-KernelCall dispatch on a Cortex-M core: its runtime, built from source,
executing .pte programs whose kernels do nothing, instruction-timed under QEMU.

    EXECUTORCH_DIR=/tmp/et FLATBUFFERS_DIR=/tmp/fb python benchmarks/dispatch.py --write

What runs (``dispatch_probe/main.cpp``): ExecuTorch's ``runtime/`` (Program, Method, the tensor
parser, memory manager, kernel registry, minimal PAL) compiled with arm-none-eabi-g++ for the core
with ExecuTorch's Release flags, a driver that loads each embedded program from memory
(BufferDataLoader, static pools) and executes it once, and one generated unboxing wrapper per
operator (:func:`kernels_source`, the shape of ExecuTorch's codegen
``RegisterCodegenUnboxedKernels.cpp``: the argument-count check, ``EValue::to<T>()`` /
``toOptional`` / ``toIntList`` per argument, the profiling scopes, the call) whose kernel body only
closes one counting window and opens the next. QEMU's counting plugin then gives, per program of n
calls, n + 1 windows (main.cpp's docstring); refsim.qemu.timing times each with llvm-mca and the
TRM rules of the core model, exactly as the kernels are timed.

How ExecuTorch is built for the core (EXECUTORCH_DIR, FLATBUFFERS_DIR): refsim/lab/executorch/build.py.

The programs, the windows' fit and the data file: refsim/lab/executorch/dispatch_measure.py.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from refsim.lab.build import link_probe, mkdir
from refsim.lab.executorch.build import DispatchProbeError, Sources, et_objects

PROBE_DIR = Path(__file__).with_name("dispatch_probe")


# --- the generated unboxing wrappers ---------------------------------------------------------------

_T = "executorch::aten::"
#: schema base type -> (C++ type of the kernel's parameter, the EValue accessor's template type)
_SCALARS: dict[str, str] = {
    "int": "int64_t",
    "SymInt": "int64_t",
    "float": "double",
    "bool": "bool",
    "ScalarType": _T + "ScalarType",
    "MemoryFormat": _T + "MemoryFormat",
    "Layout": _T + "Layout",
    "Device": _T + "Device",
    "str": _T + "string_view",
    "Scalar": _T + "Scalar",
    "Tensor": _T + "Tensor",
}
_LISTS: dict[str, tuple[str, str]] = {  # element -> (accessor, element C++ type)
    "int": ("toIntList", "int64_t"),
    "SymInt": ("toIntList", "int64_t"),
    "float": ("toDoubleList", "double"),
    "bool": ("toBoolList", "bool"),
    "Tensor": ("toTensorList", _T + "Tensor"),
}
_TYPE = re.compile(r"^(?P<base>[A-Za-z]+)(?P<alias>\([a-z]!\))?(?P<list>\[\d*\])?(?P<opt>\?)?$")


def arg_kind(type_text: str) -> str:
    """The unboxing class of a schema type, as the fit groups arguments: ``tensor``,
    ``optional_tensor``, ``scalar`` (int, float, bool, enums), ``optional_scalar``, ``list``,
    ``optional_list``, ``scalar_object`` (Scalar, str)."""
    m = _TYPE.match(type_text)
    if m is None:
        raise DispatchProbeError(f"dispatch probe: schema type {type_text!r} is not supported")
    base, is_list, opt = m["base"], bool(m["list"]), bool(m["opt"])
    if is_list:
        return "optional_list" if opt else "list"
    if base == "Tensor":
        return "optional_tensor" if opt else "tensor"
    if base in ("Scalar", "str"):
        return "optional_scalar" if opt else "scalar_object"
    return "optional_scalar" if opt else "scalar"


def _unbox(name: str, type_text: str) -> tuple[str, str, str]:
    """(the wrapper's unboxing line, the C++ parameter type, the variable passed) of one argument."""
    m = _TYPE.match(type_text)
    if m is None or m["base"] not in _SCALARS:
        raise DispatchProbeError(f"dispatch probe: schema type {type_text!r} is not supported")
    base, mutable, is_list, opt = m["base"], bool(m["alias"]), bool(m["list"]), bool(m["opt"])
    if is_list:
        if base not in _LISTS:
            raise DispatchProbeError(f"dispatch probe: list type {type_text!r} is not supported")
        accessor, element = _LISTS[base]
        array = f"{_T}ArrayRef<{element}>"
        if opt:
            line = f"auto {name}_opt_out = {name}.toOptional<{array}>();"
            return line, f"const {_T}optional<{array}>&", f"{name}_opt_out"
        return f"auto {name}_list_out = {name}.{accessor}();", array, f"{name}_list_out"
    cpp = _SCALARS[base]
    if opt:
        line = f"auto {name}_opt_out = {name}.toOptional<{cpp}>();"
        return line, f"const {_T}optional<{cpp}>&", f"{name}_opt_out"
    if base in ("Tensor", "Scalar"):
        ref = f"{cpp}&" if mutable else f"const {cpp}&"
        return f"{ref} {name}_base = {name}.to<{cpp}>();", ref, f"{name}_base"
    return f"{cpp} {name}_base = {name}.to<{cpp}>();", cpp, f"{name}_base"


def real_kernel(qualified_name: str) -> str:
    """The C++ function of an ExecuTorch cortex_m op (operators.yaml's kernel_name in namespace
    cortex_m::native): ``cortex_m::quantized_conv2d.out`` -> ``quantized_conv2d_out``."""
    return qualified_name.split("::", 1)[1].replace(".", "_")


def kernels_source(
    schemas: Sequence[str], real: Sequence[str] = (), external: Mapping[str, tuple[str, str]] | None = None
) -> str:
    """kernels.cpp: per schema (PyTorch text) a kernel body that only moves the counting window
    and an unboxing wrapper registered under the op's name, then ``rs_probe_register_kernels``.
    An op named in ``real`` calls ExecuTorch's own cortex_m kernel instead (its CMSIS-NN calls
    are stubs that move the window: :func:`refsim.lab.build.stubs_source`). An op in ``external`` (qualified name
    -> (a C++ declaration, the function it declares)) calls that function with the context and
    the unboxed arguments (refsim/lab/executorch/code_size.py: any ExecuTorch kernel, declared from its
    object's symbol)."""
    external = external or {}
    from refsim.ops.schema import parse_schema

    bodies, kernels, decls = [], [], []
    for k, text in enumerate(schemas):
        schema = parse_schema(text)
        names = [f"a_{a.name}" for a in schema.args]
        unboxed = [_unbox(n, a.type) for n, a in zip(names, schema.args, strict=True)]
        outs = [i for i, a in enumerate(schema.args) if a.is_out]
        params = ", ".join(f"{cpp} {n}" for (_, cpp, _), n in zip(unboxed, names, strict=True))
        result = f"{_T}Tensor&" if outs else "void"
        ret = f"    return {names[outs[0]]};\n" if outs else ""
        if schema.qualified_name in external:
            decl, callee = external[schema.qualified_name]
            decls.append(decl + "\n")
            bodies.append(
                f"// {text}: ExecuTorch's kernel\n"
                f"__attribute__((noipa)) {result} kernel_{k}(KernelRuntimeContext& context, {params}) {{\n"
                f"    return {callee}(context, {', '.join(names)});\n}}\n"
            )
        elif schema.qualified_name in real:
            fn = real_kernel(schema.qualified_name)
            decls.append(
                f"namespace cortex_m {{ namespace native {{\n"
                f"{result} {fn}(KernelRuntimeContext& context, {params});\n}} }}\n"
            )
            bodies.append(
                f"// {text}: ExecuTorch's kernel\n"
                f"__attribute__((noipa)) {result} kernel_{k}(KernelRuntimeContext& context, {params}) {{\n"
                f"    return ::cortex_m::native::{fn}(context, {', '.join(names)});\n}}\n"
            )
        else:
            bodies.append(
                f"// {text}\n"
                f"__attribute__((noipa)) {result} kernel_{k}(KernelRuntimeContext& context, {params}) {{\n"
                f"    (void)context;\n"
                + "".join(f"    (void){n};\n" for n in names)
                + "    rs_kernel_end();\n    rs_kernel_begin();\n"
                + ret
                + "}\n"
            )
        boxed = len(schema.args) + 1  # + the return value, as ExecuTorch's codegen counts
        lines = [f"EValue& {n} = *stack[{i}];" for i, n in enumerate(names)]
        lines += [line for line, _, _ in unboxed]
        call = ", ".join(var for _, _, var in unboxed)
        logs = "".join(
            f"        internal::event_tracer_log_evalue(context.internal_event_tracer(), *stack[{i}]);\n"
            for i in outs
        )
        kernels.append(
            f'    Kernel("{schema.qualified_name}",\n'
            f"        [](KernelRuntimeContext& context, Span<EValue*> stack) {{\n"
            f"        ET_KERNEL_CHECK_MSG(context, stack.size() == {boxed}, InvalidProgram, /*void*/,\n"
            f'            "Expected %" ET_PRIsize_t "args received %" ET_PRIsize_t, (size_t){boxed}, stack.size());\n'
            + "".join(f"        {line}\n" for line in lines)
            + "        internal::EventTracerProfileOpScope event_tracer_op_scope(\n"
            f'            context.internal_event_tracer(), "native_call_{schema.name}.{schema.overload}");\n'
            f'        EXECUTORCH_SCOPE_PROF("native_call_{schema.name}.{schema.overload}");\n'
            f"        kernel_{k}(context, {call});\n" + logs + "    }),\n"
        )
    return (
        "// Generated by refsim/lab/executorch/dispatch_probe.py: do not edit.\n"
        "#include <executorch/runtime/core/evalue.h>\n"
        "#include <executorch/runtime/core/event_tracer_hooks.h>\n"
        "#include <executorch/runtime/core/exec_aten/exec_aten.h>\n"
        "#include <executorch/runtime/core/span.h>\n"
        "#include <executorch/runtime/kernel/kernel_includes.h>\n"
        "#include <executorch/runtime/kernel/operator_registry.h>\n"
        "#include <executorch/runtime/platform/profiler.h>\n\n"
        'extern "C" void rs_kernel_begin(void);\nextern "C" void rs_kernel_end(void);\n\n'
        "using namespace executorch::runtime;\nusing executorch::ET_RUNTIME_NAMESPACE::Kernel;\n"
        "using executorch::ET_RUNTIME_NAMESPACE::KernelRuntimeContext;\n"
        + "".join(decls)
        + "\nnamespace {\n" + "\n".join(bodies) + "\nKernel kernels_to_register[] = {\n" + "".join(kernels)
        + "};\n} // namespace\n\n"
        "void rs_probe_register_kernels() {\n"
        "    Span<const Kernel> span(kernels_to_register,\n"
        "        kernels_to_register + sizeof(kernels_to_register) / sizeof(Kernel));\n"
        "    if (register_kernels(span) != Error::Ok) { for (;;) {} }\n}\n"
    )  # fmt: skip


def blobs_source(paths: Sequence[Path]) -> str:
    """blobs.S: every program embedded (section .rs_programs, placed in the bulk region) and the
    table ``rs_programs`` / ``rs_program_count`` main.cpp reads."""
    out = ['    .section .rs_programs, "a"\n']
    for k, path in enumerate(paths):
        out.append(f'    .p2align 4\nrs_program_{k}:\n    .incbin "{path}"\nrs_program_{k}_end:\n')
    out.append('    .section .rodata.rs_programs_table, "a"\n    .p2align 2\n')
    out.append("    .global rs_programs\nrs_programs:\n")
    for k in range(len(paths)):
        out.append(f"    .word rs_program_{k}\n    .word rs_program_{k}_end - rs_program_{k}\n")
    out.append(f"    .global rs_program_count\nrs_program_count:\n    .word {len(paths)}\n")
    return "".join(out)


# --- the probe --------------------------------------------------------------------------------------


def build_probe(model_name: str, sources: Sources, programs: Sequence[Path], build: Path) -> Path:
    """The dispatch probe ELF for the core model ``model_name`` (cortex-m0plus .. cortex-m85),
    built in ``build`` (ExecuTorch objects reused from an earlier call with the same flags)."""
    objects = et_objects(model_name, sources, build)
    work = mkdir(build / f"probe-{model_name}")
    (work / "kernels.cpp").write_text(kernels_source(program_schemas(programs)))
    (work / "blobs.S").write_text(blobs_source([p.resolve() for p in programs]))
    # The programs go to the bulk region (the M55 board's code region is too small for them).
    inputs = [PROBE_DIR / "main.cpp", work / "kernels.cpp", work / "blobs.S"]
    return link_probe(objects, work, inputs, bulk_section=".rs_programs")


def program_schemas(programs: Sequence[Path]) -> list[str]:
    """The schema text of every operator the programs call (refsim's op registry), sorted."""
    from refsim.ops.registry import lookup
    from refsim.pte.reader import load_program

    names: set[str] = set()
    for path in programs:
        for plan in load_program(path).program.execution_plan:
            names.update(op.qualified_name for op in plan.operators)
    return [lookup(name).schema.text for name in sorted(names)]
