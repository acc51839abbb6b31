"""The one exception kernels raise for arguments CMSIS-NN would reject.

``refsim.errors`` re-exports it as part of the ``RefsimError`` hierarchy; kernels_py
may not import refsim (dependencies point one way), so the base lives here.
"""


class KernelError(Exception):
    """Base of every error raised by kernels_py."""


class KernelArgumentError(KernelError, ValueError):
    """A kernel argument is outside what the CMSIS-NN function accepts.

    The message names the function, the argument, what was expected and what was found.
    """

    def __init__(self, function: str, argument: str, expected: str, found: object) -> None:
        self.function = function
        self.argument = argument
        self.expected = expected
        self.found = found
        super().__init__(f"{function}: {argument} must be {expected}, got {found}")
