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

The ExecuTorch sources are never in refsim: ``EXECUTORCH_DIR`` is a tree extracted from a
checkout (``git archive <rev> runtime schema extension/data_loader kernels/portable``; write its
revision to ``EXECUTORCH_DIR/EXECUTORCH_REVISION`` for the provenance), ``FLATBUFFERS_DIR`` a
flatbuffers tree at ExecuTorch's submodule pin (third-party/flatbuffers: v24.3.25) for the runtime headers;
Debian's ``flatc`` (2.0.8) generates ``program_generated.h`` with ExecuTorch's flags, minus the
exact-version static_assert it stamps in (ExecuTorch needs v23+ headers: ``Vector<T, SizeT>``).

The programs, the windows' fit and the data file: refsim/qemu/dispatch_measure.py.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from refsim.errors import RefsimError

PROBE_DIR = Path(__file__).with_name("dispatch_probe")
KERNELS_C = Path(__file__).resolve().parents[2] / "kernels_c"

#: ExecuTorch's Release build of executorch_core (its CMakeLists.txt: -O2, sections, no logging,
#: no flatbuffer verification; examples/arm's toolchain file: no exceptions, RTTI, unwind tables).
ET_FLAGS: tuple[str, ...] = (
    "-mthumb",
    "-std=c++17",
    "-O2",
    "-DNDEBUG",
    "-ffunction-sections",
    "-fdata-sections",
    "-fno-exceptions",
    "-fno-rtti",
    "-fno-unwind-tables",
    "-DET_LOG_ENABLED=0",
    "-DET_ENABLE_PROGRAM_VERIFICATION=0",
    "-DC10_USING_CUSTOM_GENERATED_MACROS",
    "-Wno-psabi",
)

#: ExecuTorch sources compiled (relative to EXECUTORCH_DIR): executorch_core + the executor.
ET_SOURCES: tuple[str, ...] = (
    "runtime/backend/interface.cpp",
    "runtime/core/evalue.cpp",
    "runtime/core/exec_aten/util/tensor_shape_to_c_string.cpp",
    "runtime/core/exec_aten/util/tensor_util_portable.cpp",
    "runtime/core/portable_type/tensor_impl.cpp",
    "runtime/core/tag.cpp",
    "runtime/core/tensor_layout.cpp",
    "runtime/executor/method.cpp",
    "runtime/executor/method_meta.cpp",
    "runtime/executor/program.cpp",
    "runtime/executor/program_validation.cpp",
    "runtime/executor/pte_data_map.cpp",
    "runtime/executor/tensor_parser_exec_aten.cpp",
    "runtime/executor/tensor_parser_portable.cpp",
    "runtime/kernel/operator_registry.cpp",
    "runtime/platform/abort.cpp",
    "runtime/platform/default/minimal.cpp",
    "runtime/platform/log.cpp",
    "runtime/platform/platform.cpp",
    "runtime/platform/profiler.cpp",
    "runtime/platform/runtime.cpp",
    "schema/extended_header.cpp",
)
#: Optional in older trees (compiled when present).
ET_OPTIONAL_SOURCES: tuple[str, ...] = (
    "runtime/core/device_allocator.cpp",
    "runtime/core/device_memory_buffer.cpp",
)


class DispatchProbeError(RefsimError):
    """The dispatch probe cannot be built or run (names the missing tree, tool or step)."""


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
    are stubs that move the window: :func:`stubs_source`). An op in ``external`` (qualified name
    -> (a C++ declaration, the function it declares)) calls that function with the context and
    the unboxed arguments (refsim/qemu/et_code.py: any ExecuTorch kernel, declared from its
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
        "// Generated by refsim/qemu/dispatch_probe.py: do not edit.\n"
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


# --- the build -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sources:
    """Where the external sources are: an ExecuTorch tree and flatbuffers' headers."""

    executorch: Path
    flatbuffers_include: Path

    @classmethod
    def from_environment(cls) -> Sources:
        et = os.environ.get("EXECUTORCH_DIR")
        if not et:
            raise DispatchProbeError(
                "dispatch probe: set EXECUTORCH_DIR to an ExecuTorch source tree (git archive <rev> "
                "runtime schema extension/data_loader kernels/portable | tar -x -C DIR)"
            )
        fb = os.environ.get("FLATBUFFERS_DIR")
        if not fb:
            raise DispatchProbeError(
                "dispatch probe: set FLATBUFFERS_DIR to a flatbuffers tree at ExecuTorch's submodule "
                "pin (git archive v24.3.25 include)"
            )
        sources = cls(Path(et).resolve(), Path(fb).resolve() / "include")
        for path in (
            sources.executorch / "runtime/executor/method.cpp",
            sources.executorch / "schema/program.fbs",
        ):
            if not path.is_file():
                raise DispatchProbeError(
                    f"dispatch probe: EXECUTORCH_DIR has no {path.relative_to(sources.executorch)}"
                )
        if not (sources.flatbuffers_include / "flatbuffers/flatbuffers.h").is_file():
            raise DispatchProbeError(
                f"dispatch probe: {sources.flatbuffers_include} has no flatbuffers/flatbuffers.h"
            )
        return sources


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise DispatchProbeError(f"dispatch probe: {name} not found on PATH")
    return found


def _run(command: list[str], what: str, cwd: Path | None = None) -> str:
    done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=cwd)
    if done.returncode != 0:
        raise DispatchProbeError(
            f"dispatch probe: {what} failed (exit {done.returncode}):\n{done.stderr.strip()[:3000]}"
        )
    return done.stdout


def flatc_version() -> str:
    return _run([_tool("flatc"), "--version"], "flatc --version").strip()


def flatbuffers_version(sources: Sources) -> str:
    """The runtime headers' version (FLATBUFFERS_VERSION_* in flatbuffers/base.h)."""
    text = (sources.flatbuffers_include / "flatbuffers" / "base.h").read_text()
    parts = [
        re.search(rf"#define FLATBUFFERS_VERSION_{p} (\d+)", text) for p in ("MAJOR", "MINOR", "REVISION")
    ]
    return ".".join(m.group(1) if m else "?" for m in parts)


def _generate_schema(sources: Sources, out: Path) -> None:
    """program_generated.h / scalar_type_generated.h with ExecuTorch's flatc flags (schema/CMakeLists.txt)."""
    target = out / "executorch" / "schema"
    target.mkdir(parents=True, exist_ok=True)
    schema = sources.executorch / "schema"
    _run(
        [_tool("flatc"), "--cpp", "--cpp-std", "c++11", "--gen-mutable", "--scoped-enums", "-o", str(target),
         str(schema / "program.fbs"), str(schema / "scalar_type.fbs")],
        "flatc on schema/program.fbs",
    )  # fmt: skip
    for header in target.glob("*_generated.h"):
        # flatc pins the exact runtime version it came from; ExecuTorch needs the newer runtime
        # headers (Vector<T, SizeT>), whose API the generated accessors use unchanged.
        text = header.read_text()
        header.write_text(
            re.sub(r"static_assert\(FLATBUFFERS_VERSION_MAJOR[^;]*;", "", text, count=1, flags=re.S)
        )


def _includes(sources: Sources, build: Path) -> list[str]:
    root = build / "include"
    link = root / "executorch"
    if not link.exists():
        root.mkdir(parents=True, exist_ok=True)
        link.symlink_to(sources.executorch, target_is_directory=True)
    return [
        f"-I{build / 'generated'}",
        f"-I{root}",
        f"-I{sources.executorch / 'runtime/core/portable_type/c10'}",
        f"-I{sources.flatbuffers_include}",
        f"-I{KERNELS_C / 'boards'}",
    ]


def et_flags(gcc_flags: Sequence[str]) -> list[str]:
    """The C++ flags of one core: its -mcpu/-mfpu/-mfloat-abi then :data:`ET_FLAGS`."""
    return [*gcc_flags, *ET_FLAGS]


@dataclass(frozen=True)
class Objects:
    """ExecuTorch compiled for one core: the QEMU core, the C++ flags and includes, the objects."""

    qcore: object  # refsim.qemu.cores.Core
    flags: tuple[str, ...]
    includes: tuple[str, ...]
    objects: tuple[str, ...]


def et_objects(
    model_name: str,
    sources: Sources,
    build: Path,
    units: Sequence[str] = (),
    extra_includes: Sequence[str] = (),
    extra_flags: Sequence[str] = (),
) -> Objects:
    """ExecuTorch's runtime (:data:`ET_SOURCES`) and ``units`` (more paths under EXECUTORCH_DIR)
    compiled for the core model ``model_name`` into ``build`` (reused when already there);
    ``extra_includes``: -I flags the units need (CMSIS-NN's Include for the cortex_m ops);
    ``extra_flags``: appended to the core's flags (``-Os``: ExecuTorch's size-optimised build)."""
    from isa_models.cortex_m.cores import get_core_model
    from refsim.qemu.timing import qemu_core_for

    model = get_core_model(model_name)
    qcore = qemu_core_for(model)
    gxx = _tool("arm-none-eabi-g++")
    flags = [*et_flags(qcore.gcc_flags), *extra_flags]
    digest = hashlib.sha256(
        "\0".join([*flags, str(sources.executorch), flatc_version()]).encode()
    ).hexdigest()[:12]
    objdir = build / f"et-{model.name}-{digest}"
    objdir.mkdir(parents=True, exist_ok=True)
    if not (build / "generated/executorch/schema/program_generated.h").is_file():
        _generate_schema(sources, build / "generated")
    includes = [*_includes(sources, build), *extra_includes]
    wanted = [*ET_SOURCES, *(s for s in ET_OPTIONAL_SOURCES if (sources.executorch / s).is_file()), *units]
    objects, pending = [], []
    for k, rel in enumerate(wanted):
        obj = objdir / (rel.replace("/", "__") + ".o")
        objects.append(str(obj))
        if not obj.is_file():  # compiled beside, renamed when done: a killed build leaves no .o
            part = obj.with_suffix(f".{os.getpid()}.part")
            cmd = [gxx, *flags, *includes, "-c", str(sources.executorch / rel), "-o", str(part)]
            pending.append((subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True), rel, part, obj))
        if len(pending) >= 2 or (k == len(wanted) - 1 and pending):
            for proc, what, part, final in pending:
                _, err = proc.communicate()
                if proc.returncode != 0:
                    raise DispatchProbeError(
                        f"dispatch probe: compiling {what} for {model.name} failed:\n{err[:3000]}"
                    )
                part.replace(final)
            pending = []
    return Objects(qcore, tuple(flags), tuple(includes), tuple(objects))


def link_probe(objects: Objects, work: Path, inputs: Sequence[Path], *, bulk_section: str = "") -> Path:
    """``work/probe.elf``: ``inputs`` (C++ and assembly) with the ExecuTorch objects, the boards'
    startup and semihosting, on the board's linker script (``bulk_section``: an input section
    placed in the bulk region)."""
    from refsim.qemu import build as qbuild

    qcore = objects.qcore
    gxx = _tool("arm-none-eabi-g++")
    work.mkdir(parents=True, exist_ok=True)
    template = qbuild.KERNELS_C / qbuild.LINKER_TEMPLATE
    script = work / "link.ld"
    _run(
        [gxx, "-E", "-P", "-x", "c", *qbuild._memory_defines(qcore), str(template), "-o", str(script)],
        "linker script",
    )
    if bulk_section:
        text = script.read_text()
        section = f"{bulk_section} : {{ KEEP(*({bulk_section})) }} > BULK\n    /DISCARD/"
        script.write_text(text.replace("/DISCARD/", section, 1))
    board = qbuild.get_core(qcore.name)
    cflags = [*qcore.gcc_flags, "-mthumb", "-O2", "-std=c11", f"-I{KERNELS_C / 'boards'}"]
    c_objects = []
    for name, flags_for in (("startup.c", qbuild._cflags(board)), ("semihost.c", cflags)):
        obj = work / (name + ".o")
        _run(
            [gxx.replace("g++", "gcc"), *flags_for, "-c", str(KERNELS_C / "boards" / name), "-o", str(obj)],
            name,
        )
        c_objects.append(str(obj))
    elf = work / "probe.elf"
    # nosys: newlib's abort/sbrk pulled in by the PAL are never called; ``end`` for its sbrk.
    _run(
        [gxx, *objects.flags, *objects.includes, *map(str, inputs), *objects.objects, *c_objects,
         "--specs=nosys.specs", "-Wl,--defsym=end=__bss_end", "-nostartfiles", "-T", str(script),
         "-Wl,--gc-sections", f"-Wl,-Map={work / 'probe.map'}", "-o", str(elf)],
        f"linking {work.name}",
    )  # fmt: skip
    return elf


def build_probe(model_name: str, sources: Sources, programs: Sequence[Path], build: Path) -> Path:
    """The dispatch probe ELF for the core model ``model_name`` (cortex-m0plus .. cortex-m85),
    built in ``build`` (ExecuTorch objects reused from an earlier call with the same flags)."""
    objects = et_objects(model_name, sources, build)
    work = _mkdir(build / f"probe-{model_name}")
    (work / "kernels.cpp").write_text(kernels_source(program_schemas(programs)))
    (work / "blobs.S").write_text(blobs_source([p.resolve() for p in programs]))
    # The programs go to the bulk region (the M55 board's code region is too small for them).
    inputs = [PROBE_DIR / "main.cpp", work / "kernels.cpp", work / "blobs.S"]
    return link_probe(objects, work, inputs, bulk_section=".rs_programs")


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def program_schemas(programs: Sequence[Path]) -> list[str]:
    """The schema text of every operator the programs call (refsim's op registry), sorted."""
    from refsim.ops.registry import lookup
    from refsim.pte.reader import load_program

    names: set[str] = set()
    for path in programs:
        for plan in load_program(path).program.execution_plan:
            names.update(op.qualified_name for op in plan.operators)
    return [lookup(name).schema.text for name in sorted(names)]
