"""refsim's error hierarchy. Every message names what was expected and what was found.

The CLI prints ``str(error)`` on one line and exits non-zero; it never shows a traceback
for a ``RefsimError``.
"""

from isa_models.errors import IsaModelError
from kernels_py.errors import KernelArgumentError, KernelError


class RefsimError(Exception):
    """Base of every error refsim reports to a user."""


class VectorError(RefsimError):
    """A conformance vector file or directory is malformed."""


class UnsupportedError(RefsimError):
    """A feature, function or operator refsim does not implement (the message names it)."""


#: What the CLI reports as a one-line error: refsim's own errors and kernels_py's argument
#: errors (kernels_py cannot import refsim, so its base class stands beside ours).
USER_ERRORS: tuple[type[Exception], ...] = (RefsimError, KernelError, IsaModelError)

__all__ = [
    "USER_ERRORS",
    "KernelArgumentError",
    "KernelError",
    "RefsimError",
    "UnsupportedError",
    "VectorError",
]
