"""The single numba decorator every fast path uses.

``cache=True`` so a warm process skips compilation; never ``fastmath`` (golden numerics
must not let LLVM reassociate or contract anything); ``nogil`` so callers may thread.

Numba's on-disk cache is keyed by the *calling* function's source file only: a change to a
helper in another module (say ``fixedpoint.requantize``) would leave every kernel that
inlined it stale. We therefore put the cache in a directory named after a hash of all
kernels_py sources, so any edit to the golden numerics starts a fresh cache. A
user-provided ``NUMBA_CACHE_DIR`` stays the base directory.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numba


def _sources_digest() -> str:
    h = hashlib.sha256()
    for path in sorted(Path(__file__).parent.rglob("*.py")):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    h.update(numba.__version__.encode())
    return h.hexdigest()[:16]


def _cache_dir() -> str:
    base = os.environ.get("NUMBA_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache"), "refsim", "numba"
    )
    return os.path.join(base, _sources_digest())


numba.config.CACHE_DIR = _cache_dir()

jit = numba.njit(cache=True, nogil=True)
