"""Probes of TensorFlow Lite Micro built from source (REFSIM_TFLM_REPO) with the CMSIS-NN it pins
(CMSIS_NN_DIR) for a Cortex-M core, run under QEMU.

- :mod:`~refsim.lab.tflm.build`: TFLM's core, kernels and CMSIS-NN compiled with the flags of
  TFLM's own Makefile (cortex_m_generic, cmsis_nn, release).
- :mod:`~refsim.lab.tflm.measure`: the harness images (``harness/``), the arena measurement
  (``arena_used_bytes()``, the smallest accepted arena), the outputs for a fixed input, the flash
  split of a firmware per model, per-op Invoke instruction counts; refsim/memory/tflm_measured.json.
- :mod:`~refsim.lab.tflm.sizeof_probe`: the sizes of the structs MicroAllocator puts in the arena,
  each kernel's OpData and the builtin params, compiled from TFLM's headers (``sizeof_probe/``);
  refsim/memory/tflm_sizes.json, read by refsim.memory.tflm.
"""
