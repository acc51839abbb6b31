"""ExecuTorch built from source for a Cortex-M core: the sources it takes, ExecuTorch's Release
flags, the flatbuffers schema headers, the objects (compiled and cached by refsim/lab/build.py).

The ExecuTorch sources are never in refsim: ``EXECUTORCH_DIR`` is a tree extracted from a
checkout (``git archive <rev> runtime schema extension/data_loader kernels/portable``; write its
revision to ``EXECUTORCH_DIR/EXECUTORCH_REVISION`` for the provenance), ``FLATBUFFERS_DIR`` a
flatbuffers tree at ExecuTorch's submodule pin (third-party/flatbuffers: v24.3.25) for the runtime headers;
Debian's ``flatc`` (2.0.8) generates ``program_generated.h`` with ExecuTorch's flags, minus the
exact-version static_assert it stamps in (ExecuTorch needs v23+ headers: ``Vector<T, SizeT>``).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from refsim.lab.build import KERNELS_C, LabError, Objects, compile_units, run, tool

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


class DispatchProbeError(LabError):
    """The dispatch probe cannot be built or run (names the missing tree, tool or step)."""


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


def flatc_version() -> str:
    return run([tool("flatc"), "--version"], "flatc --version").strip()


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
    run(
        [tool("flatc"), "--cpp", "--cpp-std", "c++11", "--gen-mutable", "--scoped-enums", "-o", str(target),
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
    gxx = tool("arm-none-eabi-g++")
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
    objects = compile_units([gxx, *flags, *includes], sources.executorch, wanted, objdir, model.name)
    return Objects(qcore, tuple(flags), tuple(includes), tuple(objects))
