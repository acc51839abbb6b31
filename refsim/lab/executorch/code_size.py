"""Flash of ExecuTorch's own code on a Cortex-M core, measured on linked ELFs built from source:
the runtime core a program needs, and per operator its kernel and its generated unboxing wrapper.

    EXECUTORCH_DIR=/tmp/et FLATBUFFERS_DIR=/tmp/fb CMSIS_NN_DIR=/work/ext/cmsis-nn-main \\
        python benchmarks/executorch_code.py --write

Both ELFs are built as the dispatch probe is (refsim/lab/executorch/build.py: ExecuTorch's Release
flags, ``-ffunction-sections -fdata-sections``; linked by refsim/lab/build.py: ``--gc-sections``,
newlib via nosys.specs):

- **runtime ELF** = the dispatch probe over the bundled programs (its driver loads each program
  with a BufferDataLoader and static pools, Method::load, execute; kernels are empty). From its
  linker map every kept input section that goes to flash (``.text*``, ``.rodata*``, ``.data*``,
  ``.ARM.*``, ``.init_array*``) is classified by where it comes from: an ExecuTorch object
  (runtime/, schema/), ExecuTorch code instantiated from headers inside the driver's objects
  (sections named for an ``executorch::``/``torch::``/``c10::`` symbol: BufferDataLoader, the
  allocators' vtables, ...), the C/C++ libraries (newlib, libgcc, libstdc++), or the driver
  (main, the wrappers, startup, semihosting; left out)::

      runtime core = ExecuTorch objects + ExecuTorch header code + libraries

- **operator ELF** = the same driver whose wrappers call ExecuTorch's real kernels (every op of
  :data:`OPS`, from backends/cortex_m/ops, kernels/portable/cpu, kernels/quantized/cpu), the
  CMSIS-NN functions stubbed (they are counted in the CMSIS-NN kernel line). With the call graph
  of :func:`refsim.memory.flash.elf_graph` (nm -S sizes, objdump branches and literal words), per
  op, functions that are in the runtime ELF's runtime core being already counted::

      kernel  = closure(the op's kernel function) - runtime core - CMSIS-NN stubs
      wrapper = closure(the op's unboxing wrapper) - closure(kernel) - runtime core
      rodata  = kept .rodata*/.data* sections of the op's own source object

The data keeps per op the functions of each set (indices into one table of mangled names) and
per core every such function's size, so a program's operator code is the union over its ops
(code shared by two ops counted once).
Portable ops are compiled for every dtype (no dtype-selective build).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from refsim.lab.build import (
    Section,
    link_probe,
    map_sections,
    mkdir,
    run,
    stubs_source,
    tool,
    undefined_arm_symbols,
)
from refsim.lab.executorch.build import ET_FLAGS, DispatchProbeError, Sources, et_objects
from refsim.lab.executorch.dispatch_measure import BUNDLED, provenance
from refsim.lab.executorch.dispatch_probe import (
    PROBE_DIR,
    blobs_source,
    build_probe,
    kernels_source,
    program_schemas,
)

#: Operators measured: qualified name -> its ExecuTorch source (relative to EXECUTORCH_DIR).
OPS: dict[str, str] = {
    **{
        f"cortex_m::{name}.out": f"backends/cortex_m/ops/op_{name}.cpp"
        for name in (
            "quantize_per_tensor", "dequantize_per_tensor", "quantized_add", "quantized_mul",
            "quantized_linear", "quantized_conv2d", "quantized_depthwise_conv2d",
            "quantized_transpose_conv2d", "quantized_batch_matmul", "quantized_avg_pool2d",
            "quantized_max_pool2d", "quantized_activation", "quantized_div", "softmax", "pad",
            "transpose", "maximum", "minimum",
        )
    },
    "quantized_decomposed::quantize_per_tensor.out": "kernels/quantized/cpu/op_quantize.cpp",
    "quantized_decomposed::dequantize_per_tensor.out": "kernels/quantized/cpu/op_dequantize.cpp",
    **{
        f"aten::{op}": f"kernels/portable/cpu/op_{src}.cpp"
        for op, src in (
            ("view_copy.out", "view_copy"), ("permute_copy.out", "permute_copy"),
            ("clone.out", "clone"), ("cat.out", "cat"), ("add.out", "add"), ("mul.out", "mul"),
            ("squeeze_copy.dim_out", "squeeze_copy"), ("squeeze_copy.dims_out", "squeeze_copy"),
            ("unsqueeze_copy.out", "unsqueeze_copy"), ("slice_copy.Tensor_out", "slice_copy"),
            ("mean.out", "mean"), ("hardtanh.out", "hardtanh"), ("relu.out", "relu"),
            ("_softmax.out", "softmax"),
        )
    },
    "dim_order_ops::_clone_dim_order.out": "kernels/portable/cpu/op__clone_dim_order.cpp",
    "dim_order_ops::_to_dim_order_copy.out": "kernels/portable/cpu/op__to_dim_order_copy.cpp",
}  # fmt: skip

#: The yaml files that name each op's kernel function (kernel_name).
YAMLS: tuple[str, ...] = (
    "backends/cortex_m/ops/operators.yaml",
    "kernels/quantized/quantized.yaml",
    "kernels/portable/functions.yaml",
)
#: Every portable utility (the linker keeps what the ops reach).
UTIL_DIRS: tuple[str, ...] = ("kernels/portable/cpu/util", "kernels/portable/cpu/pattern")

#: A section named for a symbol of ExecuTorch's namespaces (function, vtable, typeinfo, local static).
_ET_SYMBOL = re.compile(r"\.(?:text|rodata|data)\._Z(?:T[VSI])?Z?N[KVR]*(?:10executorch|5torch|3c10)")


def kernel_names(sources: Sources) -> dict[str, str]:
    """op qualified name -> its kernel function as the yaml files name it (``torch::executor::add_out``)."""
    out: dict[str, str] = {}
    for rel in YAMLS:
        text = (sources.executorch / rel).read_text()
        for block in re.split(r"\n(?=- )", text):
            head = re.match(r"- (?:op|func):\s*([\w:]+\.\w+)", block)
            kernel = re.search(r"kernel_name:\s*([\w:]+)", block)
            if head and kernel:
                name = head.group(1) if "::" in head.group(1) else f"aten::{head.group(1)}"
                out.setdefault(name, kernel.group(1))
    return out


def classify(section: Section, et_objdir: str) -> str:
    """``executorch`` (an ExecuTorch object), ``executorch_headers`` (ExecuTorch code compiled
    into another object), ``libraries`` (an archive: newlib, libgcc, libstdc++) or ``driver``."""
    if et_objdir in section.origin:
        return "executorch"
    if ".a(" in section.origin:
        return "libraries"
    if _ET_SYMBOL.match(section.name):
        return "executorch_headers"
    return "driver"


def _objdir(objects: Sequence[str]) -> str:
    return str(Path(objects[0]).parent)


def _symbols(elf: Path) -> dict[str, tuple[int, int]]:
    """Defined sized symbols (functions and data) of ``elf``: name -> (address, size)."""
    out = {}
    for line in run([tool("arm-none-eabi-nm"), "-S", "--defined-only", str(elf)], "nm").splitlines():
        parts = line.split()
        if len(parts) == 4:
            out[parts[3]] = (int(parts[0], 16) & ~1, int(parts[1], 16))
    return out


def _unsized(elf: Path) -> dict[str, int]:
    """Defined code symbols of ``elf`` that nm gives no size: name -> address."""
    out = {}
    for line in run([tool("arm-none-eabi-nm"), "--defined-only", str(elf)], "nm").splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "tT":
            out[parts[2]] = int(parts[0], 16) & ~1
    return out


def _homes(elf: Path, sections: list[Section]) -> dict[str, Section]:
    """Every defined symbol of ``elf`` -> the kept input section it lies in."""
    home: dict[str, Section] = {}
    for name, (address, _) in {**{n: (a, 0) for n, a in _unsized(elf).items()}, **_symbols(elf)}.items():
        where = _where(sections, address)
        if where is not None:
            home[name] = where
    return home


def _where(sections: list[Section], address: int) -> Section | None:
    for s in sections:
        if s.address <= address < s.address + s.size:
            return s
    return None


def runtime_core(elf: Path, objects: Sequence[str]) -> tuple[dict, set[str]]:
    """The runtime ELF's flash by class (bytes) and per ExecuTorch source, and the names of the
    functions in the runtime core (what the operator measurement leaves out). A library member
    counts when ExecuTorch's code reaches one of its functions (call graph); members only the
    driver reaches are left out with it."""
    from refsim.memory.flash import elf_graph

    objdir = _objdir(objects)
    sections = map_sections(elf.with_name("probe.map"))
    graph = elf_graph(elf)
    home = _homes(elf, sections)
    et = [n for n, sec in home.items() if classify(sec, objdir) in ("executorch", "executorch_headers")]
    reached = graph.closure(et)
    used = {home[n].origin for n in reached if n in home and classify(home[n], objdir) == "libraries"}
    by_class: dict[str, int] = {}
    by_source: dict[str, int] = {}
    for sec in sections:
        cls = classify(sec, objdir)
        if cls == "libraries" and sec.origin not in used:
            cls = "driver"
        by_class[cls] = by_class.get(cls, 0) + sec.size
        if cls == "executorch":
            src = Path(sec.origin).name.removesuffix(".o")
            by_source[src] = by_source.get(src, 0) + sec.size
    names = {n for n, sec in home.items() if classify(sec, objdir) != "driver" and (
        classify(sec, objdir) != "libraries" or sec.origin in used)}  # fmt: skip
    summary = {
        "bytes": sum(by_class.get(c, 0) for c in ("executorch", "executorch_headers", "libraries")),
        **{c: by_class.get(c, 0) for c in ("executorch", "executorch_headers", "libraries")},
        "driver_left_out": by_class.get("driver", 0),
        "library_members": len(used),
        "by_source": dict(sorted(by_source.items())),
    }
    return summary, names


def declarations(
    objects: Sequence[str], kernels: dict[str, str], ops: Sequence[str]
) -> dict[str, tuple[str, str]]:
    """Per op its kernel's C++ declaration, read from the defining object's symbol (demangled
    parameter list, bound to the mangled name with an asm label), for dispatch_probe's
    ``kernels_source(external=...)``."""
    nm = tool("arm-none-eabi-nm")
    raw = run([nm, "-p", "--defined-only", *objects], "nm of the operators").splitlines()
    pretty = run([nm, "-p", "-C", "--defined-only", *objects], "nm -C of the operators").splitlines()
    demangled = {}
    for a, b in zip(raw, pretty, strict=True):
        if " T " in a:
            demangled[b.split(" T ", 1)[1]] = a.split(" T ", 1)[1]
    out = {}
    for k, op in enumerate(ops):
        space, fn = kernels[op].rsplit("::", 1)
        head = f"{space}::native::{fn}(executorch::runtime::KernelRuntimeContext&"
        found = [d for d in demangled if d.startswith(head)]
        if len(found) != 1:
            raise DispatchProbeError(
                f"et code: kernel {kernels[op]} of {op}: {len(found)} definitions {found}"
            )
        params = found[0].split("(", 1)[1].rsplit(")", 1)[0]
        callee = f"rs_et_kernel_{k}"
        decl = f'executorch::runtime::etensor::Tensor& {callee}({params}) asm("{demangled[found[0]]}");'
        out[op] = (decl, callee)
    return out


def op_sources(sources: Sources) -> list[str]:
    """Every source the operator ELF compiles besides the runtime: the ops' files (each once)
    and every portable utility."""
    units = sorted(set(OPS.values()))
    for rel in UTIL_DIRS:
        units += sorted(
            str(p.relative_to(sources.executorch)) for p in (sources.executorch / rel).glob("*.cpp")
        )
    return units


def build_operator_elf(
    model_name: str, sources: Sources, cmsis_include: Path, build: Path
) -> tuple[Path, object]:
    """The operator ELF for ``model_name``: every op of :data:`OPS` behind its generated wrapper,
    CMSIS-NN stubbed, no program embedded (it is linked to be measured, not run)."""
    from refsim.ops.registry import lookup

    objects = et_objects(model_name, sources, build, op_sources(sources), [f"-I{cmsis_include}"])
    ops = sorted(OPS)
    wanted = {rel.replace("/", "__") + ".o" for rel in OPS.values()}
    op_objects = [o for o in objects.objects if Path(o).name in wanted]
    external = declarations(op_objects, kernel_names(sources), ops)
    work = mkdir(build / f"etcode-{model_name}")
    (work / "kernels.cpp").write_text(
        kernels_source([lookup(op).schema.text for op in ops], external=external)
    )
    (work / "stubs.cpp").write_text(stubs_source(undefined_arm_symbols(list(objects.objects))))
    (work / "blobs.S").write_text(blobs_source([]))
    inputs = [PROBE_DIR / "main.cpp", work / "kernels.cpp", work / "stubs.cpp", work / "blobs.S"]
    return link_probe(objects, work, inputs), objects


_MARKERS = frozenset({"rs_kernel_begin", "rs_kernel_end"})


def measure(model_name: str, sources: Sources, cmsis_include: Path, models: Path, build: Path) -> dict:
    """One core's entry of the data file: the runtime core (:func:`runtime_core`) and per op
    its kernel and wrapper functions (the module docstring's sets), their sizes and its rodata."""
    from refsim.memory.flash import elf_graph

    runtime_elf = build_probe(model_name, sources, [models / f"{n}.pte" for n in BUNDLED], build)
    runtime, core_names = runtime_core(runtime_elf, et_objects(model_name, sources, build).objects)
    elf, objects = build_operator_elf(model_name, sources, cmsis_include, build)
    graph = elf_graph(elf)
    objdir = _objdir(objects.objects)
    sections = map_sections(elf.with_name("probe.map"))
    sizes = dict(graph.sizes)
    for name, address in _unsized(elf).items():
        # Assembly functions (libgcc's __aeabi_*) have no size: their input section's, when it starts there.
        where = _where(sections, address)
        if where is not None and where.address == address:
            sizes.setdefault(name, where.size)
    # The board's startup and semihosting (objects in the link's work directory): a literal 0
    # in a kernel reads as a reference to the vector table at address 0.
    board = {n for n, sec in _homes(elf, sections).items() if sec.origin.startswith(str(elf.parent))}
    left_out = core_names | board | _MARKERS | {f for f in sizes if f.startswith("arm_")}
    functions: dict[str, int] = {}
    ops = {}
    for k, op in enumerate(sorted(OPS)):
        shim = [f for f in graph.sizes if re.match(rf"_ZN12_GLOBAL__N_1\d+kernel_{k}E", f)]
        if len(shim) != 1:
            raise DispatchProbeError(f"et code on {model_name}: kernel_{k} ({op}) found {len(shim)} times")
        reached = graph.closure(shim) & sizes.keys()
        kernel = sorted(reached - left_out - set(shim))
        callers = [f for f, calls in graph.calls.items() if shim[0] in calls and f != shim[0]]
        if not callers:
            raise DispatchProbeError(f"et code on {model_name}: no wrapper calls kernel_{k} ({op})")
        wrapper = sorted((graph.closure(callers) & sizes.keys()) - reached - left_out)
        obj = str(Path(objdir) / (OPS[op].replace("/", "__") + ".o"))
        rodata = sum(s.size for s in sections if s.origin == obj and not s.name.startswith(".text"))
        for f in (*kernel, *wrapper):
            functions[f] = sizes[f]
        ops[op] = {
            "kernel_bytes": sum(sizes[f] for f in kernel),
            "wrapper_bytes": sum(sizes[f] for f in wrapper),
            "rodata_bytes": rodata,
            "kernel": kernel,
            "wrapper": wrapper,
        }
    return {
        "gcc_flags": list(objects.flags[: len(objects.flags) - len(ET_FLAGS)]),
        "runtime": runtime,
        "functions": dict(sorted(functions.items())),
        "ops": ops,
    }


#: ExecuTorch CI's Cortex-M size test, what its published figure is (pull.yml, test/CMakeLists.txt,
#: examples/arm/ethos-u-setup/arm-none-eabi-gcc.cmake @ cff6f4dd32).
PUBLISHED = {
    "bytes": 115_868,
    "what": "file size (ls -la) of the stripped size_test ELF, GCC 15.2 baseline 2026-05-13, threshold 118,000 B",
    "config": "TARGET_CPU cortex-m55 (hard float), EXECUTORCH_OPTIMIZE_SIZE=ON (-Os), Release, logging and "
    "program verification off, no operators; test/size_test.cpp reads the program with FileDataLoader "
    "(newlib stdio: fopen/fread), method pool 1 KiB, planned pool 512 B; newlib via nosys.specs",
}


def published_config(sources: Sources, models: Path, build: Path) -> dict:
    """The runtime core measured as above on the size test's core and optimisation level
    (cortex-m55, ``-Os``), to tell how much of the gap to :data:`PUBLISHED` the flags make."""
    programs = [models / f"{n}.pte" for n in BUNDLED]
    objects = et_objects("cortex-m55", sources, build, extra_flags=("-Os",))
    work = mkdir(build / "probe-cortex-m55-Os")
    (work / "kernels.cpp").write_text(kernels_source(program_schemas(programs)))
    (work / "blobs.S").write_text(blobs_source([p.resolve() for p in programs]))
    elf = link_probe(objects, work, [PROBE_DIR / "main.cpp", work / "kernels.cpp", work / "blobs.S"],
                     bulk_section=".rs_programs")  # fmt: skip
    summary, _ = runtime_core(elf, objects.objects)
    summary.pop("by_source")
    return {"core": "cortex-m55", "extra_flags": ["-Os"], "runtime": summary}


def measure_all(
    sources: Sources, cmsis_include: Path, models: Path, build: Path, cores: Sequence[str], command: str = ""
) -> dict:
    """The data file's content (refsim/memory/executorch_code.json). A core whose gcc flags equal
    an earlier one's (cortex-m85: gcc 12.2 builds it as cortex-m55) names that core instead."""
    from isa_models.cortex_m.cores import get_core_model
    from refsim.qemu.timing import qemu_core_for

    per_core: dict = {}
    seen: dict[tuple[str, ...], str] = {}
    for core in cores:
        flags = tuple(qemu_core_for(get_core_model(core)).gcc_flags)
        if flags in seen:
            per_core[core] = {"same_build_as": seen[flags], "gcc_flags": list(flags)}
            continue
        seen[flags] = core
        per_core[core] = measure(core, sources, cmsis_include, models, build)
    published = {**PUBLISHED, "measured_here": published_config(sources, models, build)}
    prov = provenance(sources, command)
    for key in ("qemu", "llvm_mca", "windows_include"):
        prov.pop(key, None)
    prov["cmsis_nn_headers"] = str(cmsis_include)
    prov["link"] = "--specs=nosys.specs -nostartfiles -Wl,--gc-sections, kernels_c's board linker script"
    prov["method"] = (
        "refsim/lab/executorch/code_size.py: runtime core from the dispatch probe's linker map; per op the call-graph "
        "closure of ExecuTorch's kernel and of the generated wrapper in a link of every op, minus the "
        "runtime core and the CMSIS-NN stubs"
    )
    # One table of function names for every core; a core lists each one's bytes (None: not in
    # its link) and an op its functions by index into the table.
    names = sorted({f for e in per_core.values() for f in e.get("functions", {})})
    index = {f: i for i, f in enumerate(names)}
    for entry in per_core.values():
        if "functions" not in entry:
            continue
        entry["functions"] = [entry["functions"].get(f) for f in names]
        for o in entry["ops"].values():
            o["kernel"] = [index[f] for f in o["kernel"]]
            o["wrapper"] = [index[f] for f in o["wrapper"]]
    return {
        "provenance": prov,
        "published": published,
        "sources": dict(sorted(OPS.items())),
        "function_names": names,
        "cores": per_core,
    }
