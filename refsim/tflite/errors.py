"""The error a malformed or unsupported .tflite model raises."""

from refsim.errors import RefsimError


class ModelError(RefsimError):
    """A .tflite file fails validation.

    The message starts with the path of the failing field, in the schema's names, e.g.
    ``subgraphs[0].operators[3].inputs[1]: tensor index 97 out of range [0, 40)``; ``path``
    holds it alone ("" for whole-file problems) so that tests and tools can match on it.
    """

    def __init__(self, message: str, path: str = "") -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.reason = message
