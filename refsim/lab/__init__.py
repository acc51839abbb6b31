"""The measurement lab: probes that build third-party runtimes from source for a Cortex-M core,
run them under QEMU (refsim.qemu) or read their linked ELFs, and derive the data files refsim's
cost and memory models ship (isa_models/dispatch.json, isa_models/float_ops.json,
refsim/memory/executorch_code.json). Nothing in refsim imports the lab at run time: the data
files carry the numbers and their provenance; the probes regenerate them (benchmarks/).

- :mod:`refsim.lab.build`: what every probe's build shares (cached compiling, linking on
  kernels_c's boards, the linker map, CMSIS-NN stubbed).
- :mod:`refsim.lab.executorch`: ExecuTorch's dispatch overhead, portable fp32 kernels and code size.
"""
