"""Flash of one program on a Cortex-M build: program file, kernel code, runtime.

- **program**: the .pte bytes (the runtime reads it in place, e.g. with a BufferDataLoader over
  flash), with its constant segment as a detail line.
- **kernel code**: the code of the CMSIS-NN functions the program's operators call, closed over
  everything they call. By default the real CMSIS-NN, built as ExecuTorch's CMake builds it
  (cmsis_nn_code.json, refsim/memory/cmsis_nn_code.py: the same library data the TFLM side's
  flash is held against); ``library="kernels_c"`` (``--library kernels_c``) measures kernels_c's
  harness instead, as described next. Entry functions per operator are the ones ExecuTorch's cortex_m kernels
  call (``backends/cortex_m/ops/op_*.cpp``, pytorch/executorch main @ cff6f4dd32; size queries
  only under CORTEX_M_ENABLE_RUNTIME_CHECKS are left out). Measured on kernels_c's harness ELF for
  the core (refsim.qemu.build, ``-O2 -ffunction-sections --gc-sections``): per-function sizes
  from ``arm-none-eabi-nm -S``, the call graph from ``arm-none-eabi-objdump -d`` (branches and
  literal-pool words that point at a function). With ``--kernels-dir`` the same closure runs over
  a user's library (``*.a``/``*.o``), by archive member as the linker pulls them in.
- **operator code**: ExecuTorch's own code of each operator the program calls (the cortex_m op's
  C++ around its CMSIS-NN call, a portable or quantized op's kernel) and its generated unboxing
  wrapper, measured per core on ExecuTorch built from source (refsim/lab/executorch/code_size.py, data in
  executorch_code.json): the program's line is the union of its ops' functions (shared code
  counted once); an op not in the data is a "not measured" line naming it.
- **runtime**: ExecuTorch's runtime core a program needs (Program, Method, tensor parser, memory
  manager, kernel registry, minimal PAL, BufferDataLoader, the newlib/libgcc code they reach),
  measured from the same build's linker map; ExecuTorch's published size test (RUNTIME) beside it.
"""

from __future__ import annotations

import functools
import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from refsim.errors import RefsimError
from refsim.memory.lines import Line

#: CMSIS-NN functions each cortex_m operator calls at run time (op_*.cpp @ cff6f4dd32).
CMSIS_ENTRIES: dict[str, tuple[str, ...]] = {
    "cortex_m::quantized_conv2d": ("arm_convolve_wrapper_s8",),
    "cortex_m::quantized_conv2d_nhwc": ("arm_convolve_wrapper_s8",),
    "cortex_m::quantized_depthwise_conv2d": ("arm_depthwise_conv_wrapper_s8",),
    "cortex_m::quantized_depthwise_conv2d_nhwc": ("arm_depthwise_conv_wrapper_s8",),
    "cortex_m::quantized_transpose_conv2d": ("arm_transpose_conv_wrapper_s8",),
    "cortex_m::quantized_transpose_conv2d_nhwc": ("arm_transpose_conv_wrapper_s8",),
    "cortex_m::quantized_linear": ("arm_fully_connected_s8",),
    "cortex_m::quantized_batch_matmul": ("arm_batch_matmul_s8",),
    "cortex_m::quantized_avg_pool2d": ("arm_avgpool_s8",),
    "cortex_m::quantized_avg_pool2d_nhwc": ("arm_avgpool_s8",),
    "cortex_m::quantized_max_pool2d": ("arm_max_pool_s8",),
    "cortex_m::quantized_max_pool2d_nhwc": ("arm_max_pool_s8",),
    "cortex_m::quantized_add": ("arm_elementwise_add_s8",),
    "cortex_m::quantized_mul": ("arm_elementwise_mul_s8",),
    "cortex_m::softmax": ("arm_softmax_s8",),
    "cortex_m::pad": ("arm_pad_s8",),
    "cortex_m::transpose": ("arm_transpose_s8",),
    "cortex_m::maximum": ("arm_maximum_s8",),
    "cortex_m::minimum": ("arm_minimum_s8",),
}


@dataclass(frozen=True)
class RuntimeBasis:
    """A published flash size of ExecuTorch's runtime core (no operators) for bare-metal Arm."""

    bytes: int
    source: str


#: ExecuTorch CI's Cortex-M size test: test/build_size_test.sh with arm-none-eabi-gcc,
#: EXECUTORCH_BUILD_ARM_BAREMETAL; the stripped size_test ELF (runtime core, no operators).
RUNTIME = RuntimeBasis(
    115_868,
    "published: ExecuTorch CI size test, bare-metal arm-none-eabi GCC 15.2 baseline 115,868 B "
    "(stripped size_test ELF, runtime without operators; .github/workflows/pull.yml @ cff6f4dd32, "
    "threshold 118,000 B)",
)


class KernelCodeError(RefsimError):
    """The kernel library could not be read (names the file or tool)."""


def _binutil(name: str) -> str | None:
    return shutil.which(f"arm-none-eabi-{name}")


def _run(tool: str, *args: str) -> str:
    done = subprocess.run([tool, *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise KernelCodeError(
            f"kernel code: {Path(tool).name} {' '.join(args)} failed: {done.stderr.strip()}"
        )
    return done.stdout


_FUNC = re.compile(r"^([0-9a-f]+) <([^>]+)>:$")
_BRANCH = re.compile(
    r"\s(?:b|bl|b\.w|bl\.w|blx|b\.n|cbz|cbnz|b[a-z]{2}(?:\.[nw])?)\s+(?:r\d+,\s*)?[0-9a-f]+ <([^+>]+)"
)
_WORD = re.compile(r"\s\.word\s+0x([0-9a-f]+)")


@dataclass(frozen=True)
class CodeGraph:
    """Function sizes and direct references of one linked ELF."""

    sizes: dict[str, int]
    calls: dict[str, frozenset[str]]

    def closure(self, entries: list[str]) -> set[str]:
        seen: set[str] = set()
        todo = [e for e in entries if e in self.sizes]
        while todo:
            f = todo.pop()
            if f in seen:
                continue
            seen.add(f)
            todo.extend(self.calls.get(f, ()))
        return seen


@functools.cache
def elf_graph(elf: Path) -> CodeGraph:
    nm, objdump = _binutil("nm"), _binutil("objdump")
    if nm is None or objdump is None:
        raise KernelCodeError(
            "kernel code: arm-none-eabi-nm/objdump not found (install binutils-arm-none-eabi)"
        )
    sizes: dict[str, int] = {}
    starts: dict[int, str] = {}
    for line in _run(nm, "-S", "--defined-only", str(elf)).splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tTwW":
            sizes[parts[3]] = int(parts[1], 16)
            starts[int(parts[0], 16) & ~1] = parts[3]
    calls: dict[str, set[str]] = {}
    current: str | None = None
    for line in _run(objdump, "-d", str(elf)).splitlines():
        head = _FUNC.match(line)
        if head:
            current = head.group(2)
            calls.setdefault(current, set())
            continue
        if current is None:
            continue
        branch = _BRANCH.search(line)
        if branch and branch.group(1) != current:
            calls[current].add(branch.group(1))
        word = _WORD.search(line)
        if word and (target := starts.get(int(word.group(1), 16) & ~1)) and target != current:
            calls[current].add(target)
    return CodeGraph(sizes, {k: frozenset(v) for k, v in calls.items()})


def _library_code(directory: Path, entries: list[str]) -> tuple[int, str]:
    """Text bytes of the archive members / objects a linker pulls in for ``entries``."""
    nm = _binutil("nm")
    if nm is None:
        raise KernelCodeError("kernel code: arm-none-eabi-nm not found (install binutils-arm-none-eabi)")
    files = sorted([*directory.glob("*.a"), *directory.glob("*.o")])
    if not files:
        raise KernelCodeError(f"kernel code: --kernels-dir {directory} holds no *.a or *.o")
    size = _binutil("size")
    if size is None:
        raise KernelCodeError("kernel code: arm-none-eabi-size not found (install binutils-arm-none-eabi)")
    defines: dict[str, str] = {}
    needs: dict[str, set[str]] = {}
    text: dict[str, int] = {}
    for f in files:
        for line in _run(nm, "-A", "-S", str(f)).splitlines():
            where, _, rest = line.rpartition(":")
            parts = rest.split()
            if len(parts) == 2 and parts[0] == "U":
                needs.setdefault(where, set()).add(parts[1])
            elif len(parts) == 4 and parts[2].isupper() and parts[2] not in "UNW":
                defines.setdefault(parts[3], where)
        # Code = every .text* section of the member (function sections and their padding).
        member = None
        for line in _run(size, "-A", str(f)).splitlines():
            if line.endswith(":") and not line.startswith("."):
                name = line.split()[0]
                member = f"{f}:{name}" if f.suffix == ".a" else str(f)
            elif member and line.startswith(".text"):
                text[member] = text.get(member, 0) + int(line.split()[1])
    pulled: set[str] = set()
    todo = [defines[e] for e in entries if e in defines]
    missing = [e for e in entries if e not in defines]
    while todo:
        member = todo.pop()
        if member in pulled:
            continue
        pulled.add(member)
        todo.extend(defines[s] for s in needs.get(member, ()) if s in defines)
    note = f"; not defined there: {', '.join(missing)}" if missing else ""
    return sum(text.get(mbr, 0) for mbr in pulled), f"{len(pulled)} members of {directory}{note}"


#: ``--library``: whose CMSIS-NN code sizes count (default: the real library, as ExecuTorch builds it).
LIBRARIES: tuple[str, ...] = ("cmsis-nn", "kernels_c")


def _real_library_lines(entries: list[str], core: str) -> list[Line]:
    """The real CMSIS-NN as ExecuTorch's CMake builds it (cmsis_nn_code.json, profile executorch)."""
    from refsim.memory.cmsis_nn_code import library_code

    name = "CMSIS-NN kernel code"
    lib = library_code("executorch", core)
    reached = lib.closure(entries)
    lines = [
        Line(
            "flash",
            name,
            lib.bytes_of(reached),
            f"{lib.source}: {len(reached)} functions and tables reached from {', '.join(entries)} "
            "(relocations; what --gc-sections keeps)",
        )
    ]
    for entry in entries:
        lines.append(
            Line(
                "flash",
                entry,
                lib.bytes_of(lib.closure([entry])),
                "with everything it references (shared code counted in each)",
                part_of=name,
            )
        )
    return lines


def kernel_code_lines(
    op_names: list[str], core: str, kernels_dir: Path | None = None, library: str = "cmsis-nn"
) -> list[Line]:
    """Kernel-code lines for the operators ``op_names`` (qualified, with overload) on ``core``:
    the real CMSIS-NN's code sizes (``library="cmsis-nn"``, the default), kernels_c's harness
    (``"kernels_c"``), or a user's library (``kernels_dir``)."""
    if library not in LIBRARIES:
        raise KernelCodeError(
            f"kernel code: --library must be one of {', '.join(LIBRARIES)}, got {library!r}"
        )
    base = sorted({n.rsplit(".", 1)[0] for n in op_names})
    entries = sorted({e for n in base for e in CMSIS_ENTRIES.get(n, ())})
    lines: list[Line] = []
    name = "CMSIS-NN kernel code"
    if not entries:
        lines.append(Line("flash", name, 0, "no operator of this program calls CMSIS-NN"))
    elif kernels_dir is None and library == "cmsis-nn":
        lines += _real_library_lines(entries, core)
    elif _binutil("nm") is None or _binutil("objdump") is None or shutil.which("arm-none-eabi-gcc") is None:
        lines.append(
            Line(
                "flash",
                name,
                None,
                "not measured: arm-none-eabi tools missing (apt-get install gcc-arm-none-eabi)",
            )
        )
    elif kernels_dir is not None and not (kernels_dir / "Source").is_dir():
        nbytes, what = _library_code(kernels_dir, entries)
        lines.append(Line("flash", name, nbytes, f"--kernels-dir: text of {what} for {', '.join(entries)}"))
    else:
        from isa_models.cortex_m.cores import get_core_model
        from refsim.qemu.errors import QemuError
        from refsim.qemu.timing import harness_for, qemu_core_for  # builds on first use

        # The core's own code path: an ARMv6-M build for the M0+, the M55's MVE build for the M85
        # (gcc 12.2 has no -mcpu=cortex-m85; the same MVE source is what it would compile).
        model = get_core_model(core)
        target = core if model.gcc_mcpu == core else f"{core} (code built with -mcpu={model.gcc_mcpu})"
        try:
            if kernels_dir is None:
                harness, built = harness_for(model), f"kernels_c for {target}"
            else:
                from refsim.qemu.conformance import build_library_harness

                harness, _ = build_library_harness(qemu_core_for(model), kernels_dir)
                built = f"--kernels-dir {kernels_dir} built for {target}"
        except QemuError as error:
            first = str(error).splitlines()[0]
            what = "kernels_c" if kernels_dir is None else f"--kernels-dir {kernels_dir}"
            lines.append(Line("flash", name, None, f"not measured: {what} for {core} did not build: {first}"))
            return lines
        graph = elf_graph(harness.elf)
        missing = [e for e in entries if e not in graph.sizes]
        if missing:
            raise KernelCodeError(f"kernel code: {', '.join(missing)} not defined by {built}")
        reached = graph.closure(entries)
        lines.append(
            Line(
                "flash",
                name,
                sum(graph.sizes[f] for f in reached),
                f"{built} (-O2, nm -S + objdump call graph): {len(reached)} functions "
                f"reached from {', '.join(entries)}",
            )
        )
        poorer = harness.core.tiers[:-1]
        lower = [f for f in reached if kernels_dir is None and any(f.endswith(f"_{t}") for t in poorer)]
        lines.append(
            Line(
                "flash",
                "lower-tier variants among them",
                sum(graph.sizes[f] for f in lower),
                "functions named for a poorer tier, reachable through kernels_c's tier switch "
                "(a single-tier CMSIS-NN build would not link them)",
                part_of=name,
            )
        )
        for entry in entries:
            lines.append(
                Line(
                    "flash",
                    entry,
                    sum(graph.sizes[f] for f in graph.closure([entry])),
                    "with everything it calls (shared code counted in each)",
                    part_of=name,
                )
            )
    return lines


ET_CODE = Path(__file__).with_name("executorch_code.json")


@functools.cache
def _et_code() -> dict:
    return json.loads(ET_CODE.read_text())


def _et_core(core: str) -> tuple[dict, str] | None:
    """The data file's entry for ``core`` (following ``same_build_as``) and how it was built."""
    cores = _et_code()["cores"]
    if core not in cores:
        return None
    entry, built = cores[core], core
    if "same_build_as" in entry:
        built = f"{core}, built as {entry['same_build_as']} ({' '.join(entry['gcc_flags'])})"
        entry = cores[entry["same_build_as"]]
    return entry, built


def _et_basis() -> str:
    prov = _et_code()["provenance"]
    return f"ExecuTorch {prov['executorch']}, {prov['compiler']}, -O2 sections + --gc-sections"


def operator_code_lines(op_names: list[str], core: str) -> list[Line]:
    """ExecuTorch's own operator code for ``op_names`` on ``core``: one line for the union of the
    measured ops' functions, a detail line per op, a "not measured" line per op not in the data."""
    ops = sorted(set(op_names))
    name = "ExecuTorch operator code"
    found = _et_core(core)
    if found is None:
        return [Line("flash", name, None, f"not measured: {ET_CODE.name} has no {core}")]
    entry, built = found
    measured = [op for op in ops if op in entry["ops"]]
    lines: list[Line] = []
    if measured:
        # Indices into the data's function_names; entry["functions"][i] is function i's bytes.
        functions = {
            f for op in measured for f in (*entry["ops"][op]["kernel"], *entry["ops"][op]["wrapper"])
        }
        sources = _et_code()["sources"]
        rodata = {sources[op]: entry["ops"][op]["rodata_bytes"] for op in measured}
        lines.append(
            Line(
                "flash",
                name,
                sum(entry["functions"][f] for f in functions) + sum(rodata.values()),
                f"measured ({_et_basis()}, for {built}; {ET_CODE.name}): {len(functions)} functions of "
                f"{len(measured)} ops' kernels (CMSIS-NN calls left out) and generated unboxing wrappers, "
                "shared code counted once, + their sources' rodata",
            )
        )
        for op in measured:
            o = entry["ops"][op]
            lines.append(
                Line(
                    "flash",
                    op,
                    o["kernel_bytes"] + o["wrapper_bytes"] + o["rodata_bytes"],
                    f"kernel {o['kernel_bytes']:,} + unboxing wrapper {o['wrapper_bytes']:,} + rodata "
                    f"{o['rodata_bytes']:,} (shared code counted in each)",
                    part_of=name,
                )
            )
    for op in ops:
        if op not in entry["ops"]:
            lines.append(
                Line(
                    "flash",
                    f"ExecuTorch operator code: {op}",
                    None,
                    f"not measured: {op} is not in {ET_CODE.name}",
                )
            )
    return lines


def runtime_lines(core: str) -> list[Line]:
    """ExecuTorch's runtime core on ``core``, measured, with the published size as a comparison."""
    name = "ExecuTorch runtime core"
    found = _et_core(core)
    if found is None:
        return [Line("flash", name, RUNTIME.bytes, f"{RUNTIME.source}; not measured for {core}")]
    entry, built = found
    r = entry["runtime"]
    return [
        Line(
            "flash",
            name,
            r["bytes"],
            f"measured ({_et_basis()}, for {built}; {ET_CODE.name}): kept .text/.rodata/.data of the "
            "dispatch probe's link (refsim/lab/executorch/code_size.py) without kernels and without the driver",
        ),
        Line("flash", "ExecuTorch objects", r["executorch"], "runtime/, schema/ objects", part_of=name),
        Line(
            "flash",
            "ExecuTorch header code",
            r["executorch_headers"],
            "ExecuTorch templates/inline code compiled into the application (BufferDataLoader, vtables)",
            part_of=name,
        ),
        Line(
            "flash",
            "C/C++ library code it reaches",
            r["libraries"],
            f"{r['library_members']} newlib/libgcc members reached from ExecuTorch's code (call graph): "
            "newlib's printf behind Method::resolve_operator's snprintf (dtoa, malloc), abort's raise/signal, "
            "memcpy/strcmp, libgcc's double routines",
            part_of=name,
        ),
        Line(
            "flash",
            "published figure (comparison)",
            RUNTIME.bytes,
            f"{RUNTIME.source}; {_et_code()['published']['config']}; file size of a stripped ELF "
            f"(this measurement at its -Os on the M55: {_et_code()['published']['measured_here']['runtime']['bytes']:,} B)",
            part_of=name,
        ),
    ]


def flash_lines(
    pte_bytes: int,
    constant_bytes: int,
    op_names: list[str],
    core: str,
    kernels_dir: Path | None = None,
    library: str = "cmsis-nn",
) -> list[Line]:
    lines = [
        Line("flash", "program (.pte)", pte_bytes, "file size; read in place by the runtime"),
        Line(
            "flash",
            "constant segment",
            constant_bytes,
            "weights, biases, multipliers",
            part_of="program (.pte)",
        ),
    ]
    lines += kernel_code_lines(op_names, core, kernels_dir, library)
    lines += operator_code_lines(op_names, core)
    lines += runtime_lines(core)
    return lines
