"""The measurement lab: probes that build third-party runtimes (or compile their headers) from
source for a Cortex-M core, run them under QEMU (refsim.qemu) or read their linked ELFs, and
derive the data files refsim's cost and memory models ship (isa_models/cortex_m/dispatch.json,
isa_models/cortex_m/float_ops.json, refsim/memory/executorch_code.json, refsim/memory/runtime_sizes.json,
refsim/memory/tflm_measured.json).
Nothing else in refsim imports the lab: the data files carry the numbers and their provenance;
the probes regenerate them (benchmarks/dispatch.py, benchmarks/executorch_code.py,
``python -m refsim.lab.executorch.sizeof_probe``).

- :mod:`refsim.lab.build`: what every probe's build shares (cached compiling, linking on
  kernels_c's boards, the linker map, CMSIS-NN stubbed).
- :mod:`refsim.lab.executorch`: ExecuTorch's dispatch overhead, portable fp32 kernels, code size
  and runtime struct sizes.
- :mod:`refsim.lab.tflm`: TensorFlow Lite Micro + CMSIS-NN built from source and run under QEMU:
  its arena, outputs, flash and per-op Invoke counts (refsim/memory/tflm_measured.json,
  ``python -m refsim.lab.tflm.measure``; docs/tflm-lab.md).
"""
