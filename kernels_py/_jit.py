"""The single numba decorator every fast path uses.

``cache=True`` so a warm process skips compilation; never ``fastmath`` (golden numerics
must not let LLVM reassociate or contract anything); ``nogil`` so callers may thread.
"""

import numba

jit = numba.njit(cache=True, nogil=True)
