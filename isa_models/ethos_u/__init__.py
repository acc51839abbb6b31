"""The Ethos-U cost model (U55, U65, U85), after Vela's performance model; docs/cost-model.md
"Ethos-U". Each module is imported by what needs it, none here (a Cortex-M estimate never
loads the NPU model):

- :mod:`~isa_models.ethos_u.arch`: the accelerator configurations (MAC engine, SHRAM, rates);
- :mod:`~isa_models.ethos_u.systems`: Vela's system configurations and memory modes;
- :mod:`~isa_models.ethos_u.layers`: one NPU layer's cycles on U55/U65 (compute vs memory);
- :mod:`~isa_models.ethos_u.u85_arch`, :mod:`~isa_models.ethos_u.u85_blocks`,
  :mod:`~isa_models.ethos_u.u85`: the U85 tables, block choice and layer cycles (Vela's regor);
- :mod:`~isa_models.ethos_u.weights`: the encoded weight stream's size;
- :mod:`~isa_models.ethos_u.supported`: which CMSIS-NN calls the NPU takes (Vela's rules);
- :mod:`~isa_models.ethos_u.program`: a whole program: placement, layers, host ops, hand-over.
"""
