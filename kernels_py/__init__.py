"""Golden int8 numerics: CMSIS-NN's fixed-point arithmetic, one module per op family.

Every public kernel has two implementations that must agree bit for bit:

* ``<name>_reference`` — plain loops in the style of TFLM's reference kernels, no numba;
  the living definition of the semantics.
* ``<name>`` — the validating public wrapper around a private ``@jit`` fast path.

Arrays are NHWC numpy arrays, parameters carry CMSIS-NN's struct field names
(see :mod:`kernels_py.types`). Multipliers and shifts are computed by the caller
(:func:`kernels_py.fixedpoint.quantize_multiplier`), never inside a kernel.
"""

from kernels_py.errors import KernelArgumentError

__all__ = ["KernelArgumentError"]
