"""The exceptions isa_models raises.

isa_models may not import refsim (dependencies point one way: refsim → isa_models), so its
base class stands beside refsim's; ``refsim.errors.USER_ERRORS`` lists it, so the CLI prints
these as one-line errors (exit status 2).
"""


class IsaModelError(Exception):
    """Base of every error raised by isa_models."""


class UnknownNameError(IsaModelError, ValueError):
    """A core or system name that is not in its table; the message lists the valid names."""

    def __init__(self, what: str, found: str, valid: tuple[str, ...]) -> None:
        self.what = what
        self.found = found
        self.valid = valid
        super().__init__(f"{what} must be one of {', '.join(valid)}; got {found!r}")
