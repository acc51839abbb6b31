"""The Cortex-M cost model: cycles of CMSIS-NN calls and whole programs on one core and system
(docs/cost-model.md). Nothing is imported here: a plain run loads none of it, an estimate only
what its calls route to.

- :mod:`~isa_models.cortex_m.cores`, :mod:`~isa_models.cortex_m.systems` (with its datasheet
  facts in :mod:`~isa_models.cortex_m.system_sources`): the cores and the system presets;
- :mod:`~isa_models.cortex_m.formula`: the ``Formula`` record (features x fitted coefficients);
- :mod:`~isa_models.cortex_m.formulas`: the registry: which family routes each CMSIS-NN function
  (``ROUTES``) and the estimate of one call (``estimate_call``);
- one package per op family, named as kernels_py's modules (``conv``, ``depthwise``,
  ``fully_connected``, ``pooling``, ``elementwise``, ``softmax``, ``layout``, ``activation``):
  its formulas in its ``__init__``, its calibration sweep in ``<family>/sweep.py`` and, for conv
  and depthwise, the features of kernels_c's own loops in ``<family>/kernels_c.py``;
- :mod:`~isa_models.cortex_m.calibration`: the fitted coefficients per library and core
  (``calibration/<library>/<core>.json``, written by ``refsim calibrate``);
- :mod:`~isa_models.cortex_m.program`: whole programs (work items, ExecuTorch's dispatch from
  ``dispatch.json``, fp32 ops from ``float_ops.json``).
"""
