"""Cost models, one package per target; nothing is imported here (a plain ``refsim run`` loads
none of them, an estimate only what its calls route to). docs/cost-model.md "Where the code is".

- :mod:`isa_models.cortex_m`: CMSIS-NN calls and whole programs on a Cortex-M core and system
  (cores, systems, one package per op family, calibration data);
- :mod:`isa_models.ethos_u`: the Ethos-U55/U65/U85 NPU after Vela's performance model;
- target-neutral: :mod:`isa_models.cost` (the ``Cost`` record), :mod:`isa_models.errors`,
  :mod:`isa_models.shapes` (a CMSIS-NN call's parameters, per-tier blockings),
  :mod:`isa_models.fit` (the non-negative least-squares fit).

The shape predicates the formulas share with the kernels live in kernels_py
(``is_convolve_1x1_s8_fast``, ...).
"""
