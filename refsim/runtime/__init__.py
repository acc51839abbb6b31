"""The refsim runtime: load a .pte and execute its methods in their planned arenas."""

from refsim.runtime.plan import PlanError, verify_plan
from refsim.runtime.program import ExecutionError, Method, Program
from refsim.runtime.tensor import TensorRef

__all__ = ["ExecutionError", "Method", "PlanError", "Program", "TensorRef", "verify_plan"]
