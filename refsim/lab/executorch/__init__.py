"""Probes of ExecuTorch built from source (EXECUTORCH_DIR) for a Cortex-M core, and of its headers.

- :mod:`~refsim.lab.executorch.build`: ExecuTorch's runtime and any more of its sources compiled
  for a core (its Release flags, the flatbuffers schema headers).
- :mod:`~refsim.lab.executorch.dispatch_probe`: the generated unboxing wrappers over empty
  kernels and the probe ELF (its C++ driver in ``dispatch_probe/``).
- :mod:`~refsim.lab.executorch.dispatch_measure`: the programs it runs, the per-call fit
  (isa_models/cortex_m/dispatch.json) and the cortex_m ops' own set-up.
- :mod:`~refsim.lab.executorch.float_probe`: the portable fp32 kernels per element
  (isa_models/cortex_m/float_ops.json).
- :mod:`~refsim.lab.executorch.code_size`: the flash of the runtime core and of each operator
  (refsim/memory/executorch_code.json).
- :mod:`~refsim.lab.executorch.sizeof_probe`: the 32-bit sizes of the runtime structs, from the
  executorch wheel's headers compiled with arm-none-eabi-g++ (refsim/memory/runtime_sizes.json).
"""
