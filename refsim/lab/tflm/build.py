"""TensorFlow Lite Micro built from source for a Cortex-M core, the way its own Makefile builds it
for ``TARGET=cortex_m_generic OPTIMIZED_KERNEL_DIR=cmsis_nn BUILD_TYPE=release TOOLCHAIN=gcc``,
with the CMSIS-NN it pins (objects compiled and cached by refsim/lab/build.py).

TFLM's Makefile downloads its third-party code; this machine cannot, so the sources are compiled
here with the flags that Makefile passes (read from tensorflow/lite/micro/tools/make/ at TFLM
90b983c2; :data:`FLAG_SOURCES` names each file):

- Makefile: ``COMMON_FLAGS`` (-fno-unwind-tables -fno-asynchronous-unwind-tables
  -ffunction-sections -fdata-sections -fmessage-length=0 -DTF_LITE_STATIC_MEMORY
  -DTF_LITE_DISABLE_X86_NEON, the warnings, ``-DCMSIS_NN -DKERNELS_OPTIMIZED_FOR_SPEED``),
  ``CXXFLAGS`` (-fno-rtti -fno-exceptions -fno-threadsafe-statics, -std=c++17; C: -std=c17),
  ``BUILD_TYPE=release`` (-DNDEBUG -DTF_LITE_STRIP_ERROR_STRINGS: the smallest image, no log
  strings, the counterpart of ExecuTorch's Release build with logging off), and three
  optimisation levels: ``CORE_OPTIMIZATION_LEVEL`` -Os for the interpreter core (tensorflow/lite/micro/*.cc,
  arena_allocator/, memory_planner/, tflite_bridge/, and TFLite's shared sources),
  ``KERNEL_OPTIMIZATION_LEVEL`` -O2 for tensorflow/lite/micro/kernels/, and
  ``THIRD_PARTY_KERNEL_OPTIMIZATION_LEVEL`` -O2 for CMSIS-NN's sources.
- targets/cortex_m_generic_makefile.inc: -mthumb -mfloat-abi=$(FLOAT) -mlittle-endian
  -fomit-frame-pointer -funsigned-char -DTF_LITE_MCU_DEBUG_LOG -DCPU_$(CORE)=1 -D$(ARM_CPU), and
  per TARGET_ARCH the -mcpu, -mfpu and float ABI (:data:`TARGETS`); its debug_log.cc and
  micro_time.cc replace the generic ones. Left out: ``-DCMSIS_DEVICE_ARM_CORTEX_M_XX_HEADER_FILE``
  (the Cortex_DFP device header, used only by micro_time.cc's cycle counter, which the release
  build compiles out) and ``-MD`` (dependency files).
- ext_libs/cmsis_nn.inc: -DARM_NN_ENABLE_F16=0 -DARM_NN_ENABLE_F32=0, every ``Source/**/*.c``
  but ``*_f16.c``, ``*_f32.c`` and ``arm_nntables_flt.c``; includes CMSIS_PATH, CMSIS_NN_PATH,
  CMSIS/Core/Include, CMSIS-NN's Include.

Kernels: the TFLM kernel sources of the builtin ops the lab measures (:data:`OP_SOURCES`: the
MLPerf Tiny models' ops and the per-op flash probe's, refsim/lab/tflm/flash_probe.py;
cmsis_nn/ specialisations replace the generic file of the same name, as specialize_files.py
does) and the kernel helpers; a resolver without the other ops reaches none of the rest of TFLM's
library, which ``--gc-sections`` would drop anyway.

Sources (never in refsim): ``REFSIM_TFLM_REPO`` a tflite-micro tree, ``CMSIS_NN_DIR`` CMSIS-NN
at the commit TFLM pins (ext_libs/cmsis_nn_download.sh), ``TFLM_DOWNLOADS_DIR`` a directory laid
out as TFLM's ``tools/make/downloads`` (flatbuffers/ at v25.9.23 with TFLM's flatbuffers.patch,
gemmlowp/, ruy/, cmsis/ = CMSIS_6: third_party_downloads.inc and ext_libs/cmsis_download.sh name
the commits); it defaults to that directory inside REFSIM_TFLM_REPO. Each tree's revision (for
the provenance): :meth:`Sources.revisions`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from refsim.lab.build import KERNELS_C, LabError, Objects, compile_units, run, tool

#: Where each flag comes from (paths under tensorflow/lite/micro/tools/make/ at TFLM 90b983c2).
FLAG_SOURCES: dict[str, str] = {
    "Makefile": "COMMON_FLAGS, CXXFLAGS/CCFLAGS, BUILD_TYPE=release, CORE/KERNEL/THIRD_PARTY_KERNEL_OPTIMIZATION_LEVEL, "
    "ADDITIONAL_DEFINES (-DCMSIS_NN from OPTIMIZED_KERNEL_DIR, -DKERNELS_OPTIMIZED_FOR_SPEED), -std",
    "targets/cortex_m_generic_makefile.inc": "PLATFORM_FLAGS, FLAGS_GCC (-mcpu, -mfpu), FLOAT per TARGET_ARCH",
    "ext_libs/cmsis_nn.inc": "ARM_NN_ENABLE_F16/F32=0, CMSIS-NN sources and include paths",
}

#: Makefile COMMON_FLAGS (warnings included: they change no code) and the release build type.
COMMON_FLAGS: tuple[str, ...] = (
    "-fno-unwind-tables",
    "-fno-asynchronous-unwind-tables",
    "-ffunction-sections",
    "-fdata-sections",
    "-fmessage-length=0",
    "-DTF_LITE_STATIC_MEMORY",
    "-DTF_LITE_DISABLE_X86_NEON",
    "-Wsign-compare",
    "-Wdouble-promotion",
    "-Wunused-variable",
    "-Wunused-function",
    "-Wswitch",
    "-Wvla",
    "-Wall",
    "-Wextra",
    "-Wmissing-field-initializers",
    "-Wstrict-aliasing",
    "-Wno-unused-parameter",
    "-DCMSIS_NN",
    "-DKERNELS_OPTIMIZED_FOR_SPEED",
    "-DNDEBUG",
    "-DTF_LITE_STRIP_ERROR_STRINGS",
    "-DARM_NN_ENABLE_F16=0",
    "-DARM_NN_ENABLE_F32=0",
)
CXX_FLAGS: tuple[str, ...] = (
    "-fno-rtti",
    "-fno-exceptions",
    "-fno-threadsafe-statics",
    "-Wnon-virtual-dtor",
    "-std=c++17",
)
C_FLAGS: tuple[str, ...] = ("-Wimplicit-function-declaration", "-std=c17")
#: Makefile: CORE_OPTIMIZATION_LEVEL (gcc), KERNEL_OPTIMIZATION_LEVEL, THIRD_PARTY_KERNEL_OPTIMIZATION_LEVEL.
OPT_CORE, OPT_KERNEL, OPT_THIRD_PARTY = "-Os", "-O2", "-O2"


@dataclass(frozen=True)
class Target:
    """One TFLM cortex_m_generic TARGET_ARCH: its gcc flags and the CORE / ARM_CPU defines."""

    target_arch: str
    gcc_flags: tuple[str, ...]
    defines: tuple[str, ...]
    board: str = ""  # the refsim.qemu core whose board runs the build (default: the core's own)

    @property
    def platform_flags(self) -> tuple[str, ...]:
        """cortex_m_generic_makefile.inc PLATFORM_FLAGS (SIGNED_CHAR := false) after FLAGS_GCC."""
        return (
            *self.gcc_flags,
            "-DTF_LITE_MCU_DEBUG_LOG",
            "-mthumb",
            "-mlittle-endian",
            "-Wno-type-limits",
            "-Wno-unused-private-field",
            "-fomit-frame-pointer",
            "-funsigned-char",
            *self.defines,
        )


#: refsim core -> the TFLM TARGET_ARCH built for it. The M4 of refsim's boards has its FPU
#: (mps2-an386), so it is TFLM's ``cortex-m4+fp`` (FLOAT=hard); TFLM's plain ``cortex-m4`` is
#: ``cortex-m4+nofp`` with the soft float ABI.
TARGETS: dict[str, Target] = {
    "cortex-m3": Target(
        "cortex-m3", ("-mcpu=cortex-m3", "-mfpu=auto", "-mfloat-abi=soft"), ("-DCPU_M3=1", "-DARMCM3")
    ),
    "cortex-m4": Target(
        "cortex-m4+fp", ("-mcpu=cortex-m4", "-mfpu=auto", "-mfloat-abi=hard"), ("-DCPU_M4=1", "-DARMCM4")
    ),
    "cortex-m55": Target(
        "cortex-m55",
        ("-mcpu=cortex-m55", "-mfpu=auto", "-mfloat-abi=hard"),
        ("-DCPU_M55=1", "-DARMCM55", "-DARM_MODEL_USE_PMU_COUNTERS"),
    ),
    # Invoke counts only (measure.py --invoke): the cores the published MLPerf Tiny rows ran on.
    "cortex-m33": Target(
        "cortex-m33", ("-mcpu=cortex-m33", "-mfpu=auto", "-mfloat-abi=hard"), ("-DCPU_M33=1", "-DARMCM33")
    ),
    "cortex-m7": Target(
        "cortex-m7+fp", ("-mcpu=cortex-m7", "-mfpu=auto", "-mfloat-abi=hard"), ("-DCPU_M7=1", "-DARMCM7")
    ),
    # gcc 12.2 has no -mcpu=cortex-m85 and QEMU 7.2 no M85: the M85 runs TFLM's cortex-m55 build
    # on the M55 board and is timed with the M85 model (as refsim's calibration treats it).
    "cortex-m85": Target(
        "cortex-m55 (for cortex-m85)",
        ("-mcpu=cortex-m55", "-mfpu=auto", "-mfloat-abi=hard"),
        ("-DCPU_M55=1", "-DARMCM55", "-DARM_MODEL_USE_PMU_COUNTERS"),
        board="cortex-m55",
    ),
}

#: Kernel sources per builtin op (tensorflow/lite/micro/kernels/; a cmsis_nn/ file of the same
#: name is taken instead when there is one).
OP_SOURCES: dict[str, tuple[str, ...]] = {
    "ADD": ("add.cc", "add_common.cc"),
    "AVERAGE_POOL_2D": ("pooling.cc", "pooling_common.cc"),
    "BATCH_MATMUL": ("batch_matmul.cc", "batch_matmul_common.cc"),
    "CONCATENATION": ("concatenation.cc",),
    "CONV_2D": ("conv.cc", "conv_common.cc"),
    "DEPTHWISE_CONV_2D": ("depthwise_conv.cc", "depthwise_conv_common.cc"),
    "DEQUANTIZE": ("dequantize.cc", "dequantize_common.cc"),
    "EXPAND_DIMS": ("expand_dims.cc",),
    "FULLY_CONNECTED": ("fully_connected.cc", "fully_connected_common.cc"),
    "HARD_SWISH": ("hard_swish.cc", "hard_swish_common.cc"),
    "LEAKY_RELU": ("leaky_relu.cc", "leaky_relu_common.cc"),
    "LOGISTIC": ("logistic.cc", "logistic_common.cc"),
    "MAXIMUM": ("maximum_minimum.cc",),
    "MAX_POOL_2D": ("pooling.cc", "pooling_common.cc"),
    "MEAN": ("reduce.cc", "reduce_common.cc"),
    "MINIMUM": ("maximum_minimum.cc",),
    "MUL": ("mul.cc", "mul_common.cc"),
    "PACK": ("pack.cc",),
    "PAD": ("pad.cc", "pad_common.cc"),
    "PADV2": ("pad.cc", "pad_common.cc"),
    "PRELU": ("prelu.cc", "prelu_common.cc"),
    "QUANTIZE": ("quantize.cc", "quantize_common.cc"),
    "RELU": ("activations.cc", "activations_common.cc"),
    "RELU6": ("activations.cc", "activations_common.cc"),
    "RESHAPE": ("reshape.cc", "reshape_common.cc"),
    "RESIZE_NEAREST_NEIGHBOR": ("resize_nearest_neighbor.cc",),
    "SLICE": ("slice.cc",),
    "SOFTMAX": ("softmax.cc", "softmax_common.cc"),
    "SPLIT": ("split.cc",),
    "SQUEEZE": ("squeeze.cc",),
    "STRIDED_SLICE": ("strided_slice.cc", "strided_slice_common.cc"),
    "SUB": ("sub.cc", "sub_common.cc"),
    "SUM": ("reduce.cc", "reduce_common.cc"),
    "TANH": ("tanh.cc",),
    "TRANSPOSE": ("transpose.cc", "transpose_common.cc"),
    "TRANSPOSE_CONV": ("transpose_conv.cc",),
    "UNPACK": ("unpack.cc",),
}
#: Kernel helpers every op may call (tensorflow/lite/micro/kernels/).
KERNEL_SUPPORT: tuple[str, ...] = ("kernel_util.cc", "micro_tensor_utils.cc")
#: MicroMutableOpResolver's method per builtin op.
RESOLVER_METHODS: dict[str, str] = {
    "ADD": "AddAdd",
    "AVERAGE_POOL_2D": "AddAveragePool2D",
    "BATCH_MATMUL": "AddBatchMatMul",
    "CONCATENATION": "AddConcatenation",
    "CONV_2D": "AddConv2D",
    "DEPTHWISE_CONV_2D": "AddDepthwiseConv2D",
    "DEQUANTIZE": "AddDequantize",
    "EXPAND_DIMS": "AddExpandDims",
    "FULLY_CONNECTED": "AddFullyConnected",
    "HARD_SWISH": "AddHardSwish",
    "LEAKY_RELU": "AddLeakyRelu",
    "LOGISTIC": "AddLogistic",
    "MAXIMUM": "AddMaximum",
    "MAX_POOL_2D": "AddMaxPool2D",
    "MEAN": "AddMean",
    "MINIMUM": "AddMinimum",
    "MUL": "AddMul",
    "PACK": "AddPack",
    "PAD": "AddPad",
    "PADV2": "AddPadV2",
    "PRELU": "AddPrelu",
    "QUANTIZE": "AddQuantize",
    "RELU": "AddRelu",
    "RELU6": "AddRelu6",
    "RESHAPE": "AddReshape",
    "RESIZE_NEAREST_NEIGHBOR": "AddResizeNearestNeighbor",
    "SLICE": "AddSlice",
    "SOFTMAX": "AddSoftmax",
    "SPLIT": "AddSplit",
    "SQUEEZE": "AddSqueeze",
    "STRIDED_SLICE": "AddStridedSlice",
    "SUB": "AddSub",
    "SUM": "AddSum",
    "TANH": "AddTanh",
    "TRANSPOSE": "AddTranspose",
    "TRANSPOSE_CONV": "AddTransposeConv",
    "UNPACK": "AddUnpack",
}

_MICRO = "tensorflow/lite/micro"
_KERNELS = f"{_MICRO}/kernels"
#: TFLite sources outside micro/ that TFLM's sources.inc compiles (TFL_CC_SRCS, array.cc excluded).
_TFL_DIRS = ("tensorflow/lite", "tensorflow/compiler/mlir/lite")


class TflmBuildError(LabError):
    """TFLM cannot be built (names the missing tree or step)."""


@dataclass(frozen=True)
class Sources:
    """The external trees: TFLM, CMSIS-NN and TFLM's third-party downloads."""

    tflm: Path
    cmsis_nn: Path
    downloads: Path

    @classmethod
    def from_environment(cls) -> Sources:
        """From REFSIM_TFLM_REPO, CMSIS_NN_DIR and TFLM_DOWNLOADS_DIR; a missing one is a
        :class:`TflmBuildError` naming it (the test's skip reason)."""
        tflm = os.environ.get("REFSIM_TFLM_REPO")
        cmsis = os.environ.get("CMSIS_NN_DIR")
        if not tflm or not cmsis:
            raise TflmBuildError(
                "TFLM lab: set REFSIM_TFLM_REPO to a tflite-micro tree and CMSIS_NN_DIR to CMSIS-NN at the "
                "commit it pins (tensorflow/lite/micro/tools/make/ext_libs/cmsis_nn_download.sh)"
            )
        root = Path(tflm).resolve()
        downloads = os.environ.get("TFLM_DOWNLOADS_DIR") or root / f"{_MICRO}/tools/make/downloads"
        return cls(root, Path(cmsis).resolve(), Path(downloads).resolve()).checked()

    def checked(self) -> Sources:
        wanted = {
            "REFSIM_TFLM_REPO": self.tflm / f"{_MICRO}/micro_interpreter.cc",
            "CMSIS_NN_DIR": self.cmsis_nn / "Include/arm_nnfunctions.h",
            "TFLM_DOWNLOADS_DIR (flatbuffers)": self.downloads
            / "flatbuffers/include/flatbuffers/flatbuffers.h",
            "TFLM_DOWNLOADS_DIR (gemmlowp)": self.downloads / "gemmlowp/fixedpoint/fixedpoint.h",
            "TFLM_DOWNLOADS_DIR (ruy)": self.downloads / "ruy/ruy/profiler/instrumentation.h",
            "TFLM_DOWNLOADS_DIR (cmsis)": self.downloads / "cmsis/CMSIS/Core/Include/cmsis_compiler.h",
        }
        for name, path in wanted.items():
            if not path.is_file():
                raise TflmBuildError(f"TFLM lab: {name} has no {path}")
        return self

    def revisions(self) -> dict[str, str]:
        """Each tree's revision: for TFLM and CMSIS-NN the environment's REFSIM_TFLM_REVISION /
        CMSIS_NN_REVISION when set (for an extracted tree without git), else a REVISION file at
        the tree's root, else its git HEAD, else "unrecorded"."""
        out = {}
        for name, env in (("tflm", "REFSIM_TFLM_REVISION"), ("cmsis_nn", "CMSIS_NN_REVISION")):
            if os.environ.get(env):
                out[name] = os.environ[env]
        trees = {
            "tflm": self.tflm,
            "cmsis_nn": self.cmsis_nn,
            **{name: self.downloads / name for name in ("flatbuffers", "gemmlowp", "ruy", "cmsis")},
        }
        for name, path in trees.items():
            if name in out:
                continue
            stamp = path / "REVISION"
            if stamp.is_file():
                out[name] = stamp.read_text().strip()
                continue
            try:
                out[name] = run(["git", "-C", str(path), "rev-parse", "HEAD"], "git rev-parse").strip()
            except LabError:
                out[name] = f"unrecorded tree at {path}"
        return out

    def includes(self) -> list[str]:
        """Makefile INCLUDES + cmsis_nn.inc's, in their order; kernels_c's boards for semihost.h."""
        d = self.downloads
        return [
            f"-I{self.tflm}",
            f"-I{d}",
            f"-I{d / 'gemmlowp'}",
            f"-I{d / 'flatbuffers/include'}",
            f"-I{d / 'ruy'}",
            f"-I{d / 'cmsis'}",
            f"-I{self.cmsis_nn}",
            f"-I{d / 'cmsis/CMSIS/Core/Include'}",
            f"-I{self.cmsis_nn / 'Include'}",
            f"-I{KERNELS_C / 'boards'}",
        ]


# --- which sources -------------------------------------------------------------------------------


def _specialised(root: Path, rel: str, directory: str) -> str:
    """specialize_files.py: the file of the same name in ``directory`` when there is one."""
    name = rel.rsplit("/", 1)[-1]
    return f"{directory}/{name}" if (root / directory / name).is_file() else rel


def core_sources(sources: Sources) -> list[str]:
    """The interpreter core (MICROLITE_CC_SRCS minus tests and benchmarks), cortex_m_generic's
    files in place of the generic ones, and TFLite's shared sources (TFL_CC_SRCS)."""
    root = sources.tflm
    out = []
    for directory in (
        _MICRO,
        f"{_MICRO}/arena_allocator",
        f"{_MICRO}/memory_planner",
        f"{_MICRO}/tflite_bridge",
    ):
        for path in sorted((root / directory).glob("*.cc")):
            if path.name.endswith("_test.cc"):
                continue
            out.append(_specialised(root, str(path.relative_to(root)), f"{_MICRO}/cortex_m_generic"))
    for directory in _TFL_DIRS:
        for path in sorted((root / directory).rglob("*.c*")):
            rel = str(path.relative_to(root))
            if path.suffix not in (".c", ".cc") or rel == "tensorflow/lite/array.cc":
                continue
            if rel.startswith((f"{_MICRO}/", "tensorflow/lite/experimental/")):
                continue
            out.append(rel)
    return out


def kernel_sources(sources: Sources, ops: Sequence[str]) -> list[str]:
    """The kernel sources of ``ops`` and the helpers (MICROLITE_CC_KERNEL_SRCS, specialised to cmsis_nn/)."""
    names: list[str] = []
    for op in sorted(ops):
        if op not in OP_SOURCES:
            raise TflmBuildError(f"TFLM lab: no kernel sources listed for builtin op {op} (OP_SOURCES)")
        names += [n for n in OP_SOURCES[op] if n not in names]
    names += [n for n in KERNEL_SUPPORT if n not in names]
    return [_specialised(sources.tflm, f"{_KERNELS}/{n}", f"{_KERNELS}/cmsis_nn") for n in names]


def cmsis_nn_sources(sources: Sources) -> list[str]:
    """cmsis_nn.inc's CMSIS_NN_CC_SRCS (float sources out), relative to CMSIS_NN_DIR."""
    out = []
    for path in sorted((sources.cmsis_nn / "Source").rglob("*.c")):
        if path.name.endswith(("_f16.c", "_f32.c")) or path.name == "arm_nntables_flt.c":
            continue
        out.append(str(path.relative_to(sources.cmsis_nn)))
    return out


# --- compiling -----------------------------------------------------------------------------------


def cxx_flags(core: str, level: str = OPT_CORE) -> list[str]:
    """The C++ command flags of ``core`` at optimisation ``level`` (Makefile order: CXXFLAGS, level)."""
    return [*CXX_FLAGS, *COMMON_FLAGS, *TARGETS[core].platform_flags, level]


def c_flags(core: str, level: str = OPT_THIRD_PARTY) -> list[str]:
    return [*C_FLAGS, *COMMON_FLAGS, *TARGETS[core].platform_flags, level]


#: TFLM's platform flags that do not name the architecture (cortex_m_generic_makefile.inc, after
#: FLAGS_GCC); the -mcpu/-mfpu/-mfloat-abi are the core's own (refsim.qemu.cores).
_PLATFORM_COMMON: tuple[str, ...] = (
    "-DTF_LITE_MCU_DEBUG_LOG",
    "-mthumb",
    "-mlittle-endian",
    "-Wno-type-limits",
    "-Wno-unused-private-field",
    "-fomit-frame-pointer",
    "-funsigned-char",
)


def cmsis_nn_profile():
    """The CMSIS-NN build profile TFLM links: CMSIS-NN's sources at the Makefile's
    THIRD_PARTY_KERNEL_OPTIMIZATION_LEVEL (-O2, set as CMSIS-NN's ``CMSIS_OPTIMIZATION_LEVEL``)
    with TFLM's C flags (C_FLAGS, COMMON_FLAGS: release build, F16/F32 off; the platform flags
    but the architecture's, which the core gives), for ``refsim calibrate --profile tflm``. The
    CORE/ARM_CPU defines are left out: CMSIS-NN reads the ACLE feature macros the -mcpu sets."""
    from refsim.qemu.library import BuildProfile

    return BuildProfile(
        name="tflm",
        cmake_options=(f"CMSIS_OPTIMIZATION_LEVEL={OPT_THIRD_PARTY}",),
        c_flags=(*C_FLAGS, *COMMON_FLAGS, *_PLATFORM_COMMON),
        description=(
            f"TFLM 90b983c2's Makefile (TARGET=cortex_m_generic OPTIMIZED_KERNEL_DIR=cmsis_nn BUILD_TYPE=release): "
            f"CMSIS-NN at THIRD_PARTY_KERNEL_OPTIMIZATION_LEVEL {OPT_THIRD_PARTY} with "
            + ", ".join(FLAG_SOURCES)
        ),
    )


@dataclass(frozen=True)
class TflmObjects:
    """TFLM and CMSIS-NN compiled for one core: the objects by group (for the flash split)."""

    objects: Objects  # everything, for refsim.lab.build.link_probe (flags: the core's C++ -Os flags)
    core: tuple[str, ...]
    kernels: tuple[str, ...]
    cmsis_nn: tuple[str, ...]
    kernel_units: tuple[str, ...]  # the kernel sources, in the order of ``kernels``

    def with_includes(self, *extra: str) -> Objects:
        return dataclasses.replace(self.objects, includes=(*self.objects.includes, *extra))


def tflm_objects(core: str, sources: Sources, build: Path, ops: Sequence[str]) -> TflmObjects:
    """TFLM's core, the kernels of ``ops`` and CMSIS-NN compiled for ``core`` into ``build``
    (reused when already there: the object directory is named by a hash of the flags, the trees'
    paths and the compiler's)."""
    from refsim.qemu.cores import get_core

    if core not in TARGETS:
        raise TflmBuildError(f"TFLM lab: core must be one of {', '.join(TARGETS)}, got {core!r}")
    gxx, gcc = tool("arm-none-eabi-g++"), tool("arm-none-eabi-gcc")
    includes = sources.includes()
    digest = hashlib.sha256(
        "\0".join([*cxx_flags(core), *c_flags(core), *includes, tool("arm-none-eabi-g++")]).encode()
    ).hexdigest()[:12]
    objdir = build / f"tflm-{TARGETS[core].board or core}-{digest}"  # the M85 reuses the M55 build
    groups = {}
    for group, root, units, command in (
        ("core", sources.tflm, core_sources(sources), [gxx, *cxx_flags(core, OPT_CORE), *includes]),
        (
            "kernels",
            sources.tflm,
            kernel_sources(sources, ops),
            [gxx, *cxx_flags(core, OPT_KERNEL), *includes],
        ),
        ("cmsis_nn", sources.cmsis_nn, cmsis_nn_sources(sources), [gcc, *c_flags(core), *includes]),
    ):
        out = objdir / group
        out.mkdir(parents=True, exist_ok=True)
        groups[group] = (units, compile_units(command, root, units, out, core))
    every = tuple(o for _, objs in groups.values() for o in objs)
    board = get_core(TARGETS[core].board or core)
    objects = Objects(board, tuple(cxx_flags(core, OPT_CORE)), tuple(includes), every)
    return TflmObjects(
        objects,
        tuple(groups["core"][1]),
        tuple(groups["kernels"][1]),
        tuple(groups["cmsis_nn"][1]),
        tuple(groups["kernels"][0]),
    )
