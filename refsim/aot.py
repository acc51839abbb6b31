"""Compile the golden kernels ahead of time, so that ``refsim run`` never imports numba.

    python -m refsim.aot            # build (skipped when the current sources are built)
    python -m refsim.aot --force    # rebuild
    python -m refsim.aot --status   # where the extension is, and whether it is current

What to compile is *measured*, not listed: a child process runs a workload under the JIT alone
(``REFSIM_AOT=0``) and records every specialization a kernel is called with from Python
(kernels_py._jit.RECORDING): the bundled programs (``examples/models/*.pte``, one input and a
stacked batch, as ``refsim run`` and ``refsim eval`` call them) and every CMSIS-NN function of the
conformance registry (a few generated cases each). This process then compiles those
specializations with numba's AOT compiler (``numba.pycc``) into one extension module in
`kernels_py._jit.aot_dir` (named after a hash of the kernels_py sources, so an edit to any kernel
is never served stale code: until the next build, the JIT runs). A call whose argument types were
not recorded goes to the JIT as before.

The AOT code is numba's own: the same typing, the same lowering and LLVM passes as the JIT, for the
host CPU, without fastmath, and with the GIL released around each call as ``nogil`` does (``pycc``
has no option for it: its compile flags are given ``release_gil``). tests/runtime/test_aot.py holds
it to the JIT bit for bit on the conformance vectors and the bundled programs. Beside it goes
kernels_py/_typekey.c, the routing key in C (a Python function calling a kernel pays it per call).
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from kernels_py import _jit

ROOT = Path(__file__).resolve().parents[1]
MODELS_DIR = ROOT / "examples" / "models"
#: Conformance cases generated per CMSIS-NN function for the workload.
CASES_PER_FUNCTION = 6


def record_workload(out: Path) -> None:
    """Run the workload under the JIT and pickle what was recorded (the child process)."""
    if _jit.AOT_ENABLED:
        raise RuntimeError("record_workload needs REFSIM_AOT=0 (every call must reach the JIT)")
    _jit.RECORDING = []
    from refsim.conformance import registry, vectors
    from refsim.runtime import Program, TensorRef

    for path in sorted(MODELS_DIR.glob("*.pte")):
        method = Program.load(path).method("forward")
        rng = np.random.default_rng(0)
        samples = []
        for slot in method.inputs:
            assert isinstance(slot, TensorRef), f"{path}: a non-tensor input"
            samples.append(rng.integers(-128, 128, (3, *slot.sizes), dtype=np.int8).astype(slot.dtype))
        method.execute([s[0] for s in samples])
        method.execute_batch(samples, workers=1)
    for function in sorted(registry.functions()):
        for case in vectors.generate_cases(function, CASES_PER_FUNCTION, seed=1):
            vectors.run_case(case)
    unique = {(kernel, key): argtypes for kernel, key, argtypes in _jit.RECORDING}
    out.write_bytes(pickle.dumps([(k, key, t) for (k, key), t in sorted(unique.items())]))


def _record() -> list[tuple[str, tuple[int, ...], tuple]]:
    with tempfile.TemporaryDirectory(prefix="refsim-aot-") as tmp:
        out = Path(tmp) / "signatures.pkl"
        env = {**os.environ, "REFSIM_AOT": "0"}
        subprocess.run([sys.executable, "-m", "refsim.aot", "--record", str(out)], env=env, check=True)
        return pickle.loads(out.read_bytes())


def compile_aot(entries: list[tuple[str, tuple[int, ...], tuple]], folder: Path) -> None:
    """Compile ``entries`` (kernel id, signature key, numba argument types) into the extension in
    ``folder``, with its manifest."""
    from unittest import mock

    import numba.pycc.compiler as pycc_compiler
    from numba.core.compiler import Flags
    from numba.pycc import CC

    _jit.CACHE = False  # callees must be linked as LLVM IR, which a cached dispatcher cannot give

    class _NoGilFlags(Flags):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.release_gil = True  # what njit(nogil=True) sets; pycc's wrapper honours it

    import importlib

    cc = CC(_jit.AOT_MODULE)
    cc.output_dir = str(folder)
    cc.target_cpu = "host"
    manifest = []
    for n, (kernel_id, key, argtypes) in enumerate(entries):
        module, _, name = kernel_id.partition(":")
        kernel = getattr(importlib.import_module(module), name)
        assert isinstance(kernel, _jit.Kernel), kernel_id
        symbol = f"k{n}_{name.strip('_')}"
        cc.export(symbol, argtypes)(kernel.py_func)
        manifest.append(
            {"kernel": kernel_id, "key": list(key), "symbol": symbol, "signature": _jit.describe_key(key)}
        )
    with mock.patch.object(pycc_compiler, "Flags", _NoGilFlags):
        cc.compile()
    (folder / "manifest.json").write_text(
        json.dumps(
            {
                "sources_digest": Path(_jit.cache_dir()).name,
                "numba": _jit._numba_version(),
                "numpy": np.__version__,
                "python": sys.version.split()[0],
                "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "entries": manifest,
            },
            indent=1,
        )
        + "\n"
    )


def compile_typekey(folder: Path) -> None:
    """kernels_py/_typekey.c (`signature_key` in C) into ``folder``, with the toolchain pycc uses."""
    from numba.pycc.platform import Toolchain

    source = Path(_jit.__file__).with_name("_typekey.c")
    toolchain = Toolchain()
    with tempfile.TemporaryDirectory(prefix="refsim-typekey-") as build_dir:
        objects = toolchain.compile_objects(
            [str(source)], build_dir, include_dirs=[*toolchain.get_python_include_dirs(), np.get_include()]
        )
        toolchain.link_shared(
            str(folder / toolchain.get_ext_filename(_jit.TYPEKEY_MODULE)),
            objects,
            toolchain.get_python_libraries(),
            toolchain.get_python_library_dirs(),
            export_symbols=[f"PyInit_{_jit.TYPEKEY_MODULE}"],
        )


def build(force: bool = False) -> Path:
    folder = _jit.aot_dir()
    if (folder / "manifest.json").exists() and not force:
        print(f"refsim.aot: up to date ({folder})")
        return folder
    t0 = time.perf_counter()
    entries = _record()
    print(f"refsim.aot: {len(entries)} specializations of {len({e[0] for e in entries})} kernels recorded "
          f"({time.perf_counter() - t0:.0f} s); compiling", flush=True)  # fmt: skip
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".build-", dir=folder.parent))
    try:
        compile_typekey(staging)
        compile_aot(entries, staging)
        if folder.exists():
            shutil.rmtree(folder)
        try:
            staging.rename(folder)  # a reader sees no extension or a complete one
        except OSError:
            if not (folder / "manifest.json").exists():  # else another build finished first
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    print(f"refsim.aot: built {folder} in {time.perf_counter() - t0:.0f} s")
    return folder


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m refsim.aot", description=__doc__.splitlines()[0])
    parser.add_argument("--force", action="store_true", help="rebuild even when current")
    parser.add_argument("--status", action="store_true", help="print where the extension is and exit")
    parser.add_argument("--record", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.record:
        record_workload(args.record)
        return 0
    if args.status:
        folder = _jit.aot_dir()
        state = "built" if (folder / "manifest.json").exists() else "not built (the JIT runs)"
        print(f"{folder}: {state}")
        return 0
    build(force=args.force)
    return 0


if __name__ == "__main__":
    sys.exit(main())
