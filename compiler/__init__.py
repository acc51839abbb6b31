"""PyTorch → ExecuTorch-compatible cortex_m ``.pte``: torch.export, int8 quantization under
CMSIS-NN rules (PT2E with our own quantizer), cortex_m lowering, memory planning, refsim's
writer. Needs torch (and torchao's PT2E), never executorch; the runtime never imports this.

    from compiler import compile, zoo
    result = compile(model, example_inputs, target="cortex-m55", calibration=samples, path="m.pte")
"""


def compile(*args, **kwargs):
    """``compiler.api.compile`` (imported lazily so ``compiler.planner`` stays torch-free)."""
    from compiler.api import compile as _compile

    return _compile(*args, **kwargs)
