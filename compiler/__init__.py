"""PyTorch → ExecuTorch-compatible ``.pte`` (torch.export, int8 quantization under CMSIS-NN
rules, AOT passes, memory planning, serialization). Not implemented yet: no module here
is imported by the runtime, and ``refsim compile`` is not registered until it lands.
"""
