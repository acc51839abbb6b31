"""The compiler's errors: each a RefsimError, so the CLI prints one line and exits with status 2."""

from refsim.errors import RefsimError, UnsupportedError


class CompileError(RefsimError):
    """The model or its arguments cannot be compiled (the message says what and why)."""


class UnsupportedLayerError(UnsupportedError, CompileError):
    """A layer the cortex_m lowering has no int8 form for, where it cannot stay in fp32."""


class ModelSpecError(CompileError):
    """``MODULE.py:FACTORY`` or ``zoo:NAME`` does not name a model."""
