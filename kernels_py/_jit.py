"""The single decorator every fast path uses, and where its machine code comes from.

``@jit`` makes a `Kernel`: the Python function, compiled by numba (``cache=True``, ``nogil``,
never ``fastmath``: golden numerics must not let LLVM reassociate or contract anything). Nothing
is compiled, loaded or even imported at decoration: a process that runs one KWS program should not
pay for numba's import (~0.2-0.3 s of CPU) nor for the ~100 kernels it never calls. A kernel finds
its machine code on its first call, for the argument types of that call (`Kernel.resolve`):

1. **Ahead of time.** ``python -m refsim.aot`` (run by ``make venv``) compiles every specialization
   the bundled programs and the conformance vectors call into one extension module with numba's
   AOT compiler (``numba.pycc``): the same numba, the same typed IR and LLVM passes as the JIT, for
   the host CPU, GIL released as with ``nogil``. The process that loads it never imports numba. A
   call is routed there only when its argument types are *exactly* a compiled specialization
   (`signature_key`: dtype, rank, layout, writeable and aligned flags per array, as numba's
   ``typeof`` sees them; an AOT entry point does not check its arguments);
2. **Just in time**, for anything else: numba is imported and the kernel's dispatcher made (loading
   from numba's on-disk cache, or compiling) on first use. Inside numba code a `Kernel` is seen as
   its dispatcher (``_numba_type_``), so kernels call each other as before.

``REFSIM_AOT=0`` (or ``NUMBA_DISABLE_JIT=1``, which runs the plain Python) turns the AOT path off.

Both caches live in a directory named after a hash of all kernels_py sources and numba's version:
numba's cache is keyed by the *calling* function's file only, so an edit to a helper in another
module (say ``fixedpoint.requantize``) would leave every kernel that inlined it stale; with the hash
any edit to the golden numerics starts fresh caches (and, until ``python -m refsim.aot`` runs
again, the JIT). A user-provided ``NUMBA_CACHE_DIR`` stays the base directory.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.machinery
import importlib.util
import json
import os
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

#: Name of the extension module (its ``PyInit_`` symbol) that holds the AOT-compiled kernels.
AOT_MODULE = "_refsim_kernels"
#: ... and of the one that computes `signature_key` in C (kernels_py/_typekey.c).
TYPEKEY_MODULE = "_refsim_typekey"
#: The dtypes `signature_key` tells apart (numba types each as the scalar type of that name).
_TYPES = (
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float32",
    "float64",
)

AOT_ENABLED = os.environ.get("REFSIM_AOT", "1") != "0" and os.environ.get("NUMBA_DISABLE_JIT", "") in (
    "",
    "0",
)
#: While not None (``python -m refsim.aot`` records a workload), every call that reaches the JIT
#: appends ``(kernel id, signature key, numba argument types)`` here.
RECORDING: list[tuple[str, tuple[int, ...], tuple]] | None = None
#: Dispatchers are made with ``cache=False`` when False (the AOT build links callees as LLVM IR,
#: which a dispatcher loaded from numba's cache, as object code, cannot give).
CACHE = True

KERNELS: dict[str, Kernel] = {}
_lock = threading.RLock()
_aot_table: dict[str, dict[tuple[int, ...], Callable[..., Any]]] | None = None
#: Bumped whenever `_aot_table` changes, so each kernel refreshes the entries it cached.
_generation = 0


def _numba_version() -> str:
    """numba's version, read from its ``_version.py`` without importing numba."""
    spec = importlib.util.find_spec("numba")
    if spec is None or not spec.submodule_search_locations:
        return "none"
    text = (Path(next(iter(spec.submodule_search_locations))) / "_version.py").read_text()
    found = re.search(r'"version":\s*"([^"]+)"', text)
    return found.group(1) if found else "unknown"


@functools.cache
def _sources_digest() -> str:
    h = hashlib.sha256()
    for path in sorted([*Path(__file__).parent.rglob("*.py"), Path(__file__).with_name("_typekey.c")]):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    h.update(_numba_version().encode())
    return h.hexdigest()[:16]


def cache_dir() -> str:
    """numba's cache directory for the current kernels_py sources and numba version."""
    base = os.environ.get("NUMBA_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache"), "refsim", "numba"
    )
    return os.path.join(base, _sources_digest())


def _cpu_id() -> str:
    """The host CPU (model and feature flags): AOT code is compiled for it, and would fault on another."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            lines = [ln for ln in f.read(1 << 16).splitlines() if ln.startswith(("model name", "flags"))][:2]
    except OSError:
        import platform

        lines = [platform.machine(), platform.processor()]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:12]


def aot_dir() -> Path:
    """Where the AOT extension of the current sources lives: under `cache_dir`, per Python ABI, numpy
    version and host CPU."""
    tag = importlib.machinery.EXTENSION_SUFFIXES[0].strip(".").replace(".so", "")
    return Path(cache_dir()) / "aot" / f"{tag}-numpy{np.__version__}-{_cpu_id()}"


def _type_index() -> dict[int, int]:
    """numpy type number -> position in `_TYPES` (``long`` and ``longlong`` are both int64 here)."""
    index = {}
    for code in np.typecodes["All"]:
        dt = np.dtype(code)
        if dt.name in _TYPES:
            index[dt.num] = _TYPES.index(dt.name)
    return index


_INDEX = _type_index()
_INT64, _FLOAT64, _BOOL = _TYPES.index("int64"), _TYPES.index("float64"), _TYPES.index("bool")
#: numpy's array flag bits (ndarraytypes.h: NPY_ARRAY_C_CONTIGUOUS, F_CONTIGUOUS, ALIGNED, WRITEABLE).
_C, _F, _ALIGNED, _WRITEABLE = 0x1, 0x2, 0x100, 0x400
_ARRAY = 1 << 16


def signature_key(args: tuple) -> tuple[int, ...] | None:
    """The argument types as numba's ``typeof`` gives them, one int each: for an array its dtype,
    rank, layout (C, else F, else A, as numba's ``map_layout``), writeable and aligned flags; for a
    scalar its type (a Python int is int64, a float float64, as numba types them). None for anything
    this does not model (the call then goes to the JIT, which types it itself). This runs on every
    call a Python function makes to a kernel, so it reads only C-level attributes (``dtype.name``
    is a Python property, ~10x slower)."""
    key = []
    for a in args:
        t = type(a)
        if t is np.ndarray:
            dt = a.dtype
            index = _INDEX.get(dt.num)
            if index is None or not dt.isnative:
                return None
            f = a.flags.num
            layout = 0 if f & _C else 1 if f & _F else 2
            aligned = 1 if f & _ALIGNED else 0
            writeable = 1 if f & _WRITEABLE else 0
            key.append(_ARRAY | index | a.ndim << 4 | layout << 12 | writeable << 14 | aligned << 15)
        elif t is int:
            if a.bit_length() >= 64:  # numba: uint64 or an error
                return None
            key.append(_INT64)
        elif t is float:
            key.append(_FLOAT64)
        elif t is bool:
            key.append(_BOOL)
        elif isinstance(a, np.generic) and a.dtype.num in _INDEX:
            key.append(_INDEX[a.dtype.num])  # np.int64(1) types as 1 does, np.bool_ as True
        else:
            return None
    return tuple(key)


def describe_key(key: tuple[int, ...]) -> str:
    """`signature_key` as text (``int8[4 C]``, ``int8[2 A readonly unaligned]``, ``int64``)."""
    parts = []
    for code in key:
        name = _TYPES[code & 0xF]
        if code & _ARRAY:
            flags = ["CFA"[code >> 12 & 3]]
            flags += [] if code >> 14 & 1 else ["readonly"]
            flags += [] if code >> 15 & 1 else ["unaligned"]
            name = f"{name}[{code >> 4 & 0xFF} {' '.join(flags)}]"
        parts.append(name)
    return ", ".join(parts)


def _python_signature_key(args: tuple) -> tuple[int, ...] | None:
    return signature_key(args)


#: `signature_key` as the routing uses it: the C build beside the AOT extension (kernels_py/_typekey.c,
#: the same codes at about the cost of numba's own dispatch), else the Python one.
_key: Callable[[tuple], tuple[int, ...] | None] = _python_signature_key


def _import(name: str, path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _load_aot() -> dict[str, dict[tuple[int, ...], Callable[..., Any]]]:
    """The AOT entry points of the current sources, by kernel id and signature key; empty when none
    is built (or ``REFSIM_AOT=0``)."""
    global _aot_table, _key
    with _lock:
        if _aot_table is not None:
            return _aot_table
        table: dict[str, dict[tuple[int, ...], Callable[..., Any]]] = {}
        folder = aot_dir()
        manifest = folder / "manifest.json"
        suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
        if AOT_ENABLED and manifest.exists() and (folder / (AOT_MODULE + suffix)).exists():
            module = _import(AOT_MODULE, folder / (AOT_MODULE + suffix))
            for entry in json.loads(manifest.read_text())["entries"]:
                table.setdefault(entry["kernel"], {})[tuple(entry["key"])] = getattr(module, entry["symbol"])
            if (folder / (TYPEKEY_MODULE + suffix)).exists():
                _key = _import(TYPEKEY_MODULE, folder / (TYPEKEY_MODULE + suffix)).signature_key
        set_aot_table(table)
        return table


def set_aot_table(table: dict[str, dict[tuple[int, ...], Callable[..., Any]]] | None) -> None:
    """Install an AOT table (None: load it again on the next call); kernels drop what they cached."""
    global _aot_table, _generation
    with _lock:
        _aot_table = table
        _generation += 1


class Kernel:
    """A ``@jit`` function: called like the function, it runs the AOT-compiled specialization of
    the argument types when there is one, else numba's dispatcher (see the module docstring)."""

    def __init__(self, py_func: Callable[..., Any]) -> None:
        self.py_func = py_func
        self.__name__ = py_func.__name__
        self.__qualname__ = py_func.__qualname__
        self.__module__ = py_func.__module__
        self.__doc__ = py_func.__doc__
        self.__wrapped__ = py_func
        self.id = f"{py_func.__module__}:{py_func.__qualname__}"
        self._dispatcher: Any = None
        #: This kernel's AOT entry points by signature key, as of table generation `_seen`.
        self._entries: dict[tuple[int, ...], Callable[..., Any]] = {}
        self._seen = -1
        KERNELS[self.id] = self

    def __repr__(self) -> str:
        return f"<kernel {self.id}>"

    @property
    def dispatcher(self) -> Any:
        """numba's dispatcher (made, and numba imported, on first use)."""
        if self._dispatcher is None:
            with _lock:
                if self._dispatcher is None:
                    import numba

                    numba.config.CACHE_DIR = cache_dir()
                    self._dispatcher = numba.njit(cache=CACHE, nogil=True)(self.py_func)
        return self._dispatcher

    @property
    def _numba_type_(self) -> Any:
        """How numba types a `Kernel` referenced from compiled code: as its dispatcher."""
        from numba.core import types

        return types.Dispatcher(self.dispatcher)

    def _aot(self) -> dict[tuple[int, ...], Callable[..., Any]]:
        if self._seen != _generation or _aot_table is None:
            table = _aot_table if _aot_table is not None else _load_aot()
            self._entries, self._seen = table.get(self.id, {}), _generation
        return self._entries

    def resolve(self, *args: Any) -> Callable[..., Any]:
        """The callable that computes ``self(*args)``: an AOT entry point compiled for exactly these
        argument types, or numba's dispatcher. A caller that calls again with arguments of the same
        types (a prepared op) may keep it."""
        entries = self._entries if self._seen == _generation else self._aot()
        if entries:
            fn = entries.get(_key(args))  # type: ignore[arg-type]
            if fn is not None:
                return fn
        dispatcher = self.dispatcher
        if RECORDING is not None and dispatcher is not self.py_func:
            key = signature_key(args)
            if key is not None:
                RECORDING.append((self.id, key, tuple(dispatcher.typeof_pyval(a) for a in args)))
        return dispatcher

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs:
            return self.dispatcher(*args, **kwargs)
        entries = self._entries if self._seen == _generation else self._aot()
        if entries:
            fn = entries.get(_key(args))  # type: ignore[arg-type]
            if fn is not None:
                return fn(*args)
        return self.resolve(*args)(*args)


def jit(fn: Callable[..., Any]) -> Kernel:
    """Decorate a fast path (see the module docstring)."""
    return Kernel(fn)


def resolve(fn: Any, *args: Any) -> Callable[..., Any]:
    """``fn.resolve(*args)`` for a `Kernel`, else ``fn`` itself (a public wrapper, a plain function)."""
    return fn.resolve(*args) if isinstance(fn, Kernel) else fn


def aot_used() -> bool:
    """Whether an AOT extension is loaded in this process (for reports and tests)."""
    return bool(_aot_table)
