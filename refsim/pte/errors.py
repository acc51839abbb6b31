"""The error a malformed or unsupported .pte program raises."""

from refsim.errors import RefsimError


class ProgramError(RefsimError):
    """A .pte file or a `Program` fails validation.

    The message starts with the path of the failing field, in the schema's names, e.g.
    ``execution_plan[0].values[12].tensor.sizes[1]: negative size -3``; ``path`` holds it
    alone ("" for whole-file problems) so that tests and tools can match on it.
    """

    def __init__(self, message: str, path: str = "") -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.reason = message
