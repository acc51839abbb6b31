"""Every cost formula, by CMSIS-NN function, and the estimate of one call on one core.

    from isa_models.cortex_m.formulas import estimate_call
    cost = estimate_call("arm_convolve_wrapper_s8", params, core="cortex-m55")   # a Cost

``params`` are the call's scalar parameters under CMSIS-NN's names (shared VECTORS.md). The
call is routed with kernels_py's predicates for the core's tier (one family = one module
name in every layer: :mod:`isa_models.cortex_m.conv`, ``depthwise``, ``fully_connected``,
``pooling``, ``elementwise``, ``softmax``, ``layout``, ``activation``), its features computed,
and the features weighted by the coefficients of that core's calibration file::

    instructions = Σ_f a_f · feature_f        cycles = Σ_f b_f · feature_f

No QEMU runs here; an estimate costs microseconds of host time.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from types import MappingProxyType, ModuleType
from typing import TYPE_CHECKING, NamedTuple

from isa_models.cortex_m.formula import Features, Formula
from isa_models.cost import Cost
from isa_models.errors import IsaModelError
from isa_models.shapes import Params

if TYPE_CHECKING:
    from isa_models.cortex_m.calibration import CalibrationSet

#: The formula modules, one per op family (the same names as kernels_py's modules), by name:
#: :data:`FAMILIES` imports them all; an estimate imports only those its calls route through.
FAMILY_NAMES: tuple[str, ...] = (
    "conv",
    "depthwise",
    "fully_connected",
    "pooling",
    "elementwise",
    "softmax",
    "layout",
    "activation",
)

#: Public or leaf CMSIS-NN function → the family module that routes it, written out so that a
#: call imports its own family only (compiling and building every family costs tens of ms at a
#: cold start). It must equal what the families' FORMULAS give (each formula's ``public`` and key
#: function, depthwise leaves routed by depthwise): tests/isa_models/test_cost.py checks it.
ROUTES: Mapping[str, str] = MappingProxyType(
    {
        "arm_avgpool_s8": "pooling",
        "arm_batch_matmul_s8": "fully_connected",
        "arm_convolve_1_x_n_s8": "conv",
        "arm_convolve_1x1_s8": "conv",
        "arm_convolve_1x1_s8_fast": "conv",
        "arm_convolve_s8": "conv",
        "arm_convolve_wrapper_s8": "conv",
        "arm_depthwise_conv_3x3_s8": "depthwise",
        "arm_depthwise_conv_s8": "depthwise",
        "arm_depthwise_conv_s8_opt": "depthwise",
        "arm_depthwise_conv_wrapper_s8": "depthwise",
        "arm_elementwise_add_s8": "elementwise",
        "arm_elementwise_mul_s8": "elementwise",
        "arm_fully_connected_per_channel_s8": "fully_connected",
        "arm_fully_connected_s8": "fully_connected",
        "arm_max_pool_s8": "pooling",
        "arm_maximum_s8": "elementwise",
        "arm_minimum_s8": "elementwise",
        "arm_pad_s8": "layout",
        "arm_relu6_s8": "activation",
        "arm_softmax_s8": "softmax",
        "arm_transpose_conv_s8": "conv",
        "arm_transpose_conv_wrapper_s8": "conv",
        "arm_transpose_s8": "layout",
        "arm_vector_sum_s8": "fully_connected",
        "refsim_lut_s8": "activation",
    }
)


#: Declared for readers and type checkers; built by the module ``__getattr__`` below on first use.
FAMILIES: tuple[ModuleType, ...]
FORMULAS: Mapping[str, Formula]


class CostModelError(IsaModelError):
    """A call the cost model cannot estimate (unknown function, no calibration for the core)."""


_LOADED: dict[str, ModuleType] = {}


def family(name: str) -> ModuleType:
    """The family package ``isa_models.cortex_m.<name>``, whose ``__init__`` holds its formulas
    (imported on first use; its ``sweep`` and ``kernels_c`` modules are not)."""
    module = _LOADED.get(name)
    if module is None:
        module = _LOADED[name] = importlib.import_module(f"isa_models.cortex_m.{name}")
    return module


def derived_routes() -> dict[str, str]:
    """Function → family name as the families' FORMULAS give it (imports every family): what
    :data:`ROUTES` writes out, and the fallback for a function missing from it."""
    routes: dict[str, str] = {}
    for name in FAMILY_NAMES:
        for formula in family(name).FORMULAS.values():
            routes.setdefault(formula.public, name)
            routes.setdefault(formula.key.split("/")[0], name)
    # Depthwise leaves are routed by the depthwise module even when called directly.
    for key in family("depthwise").FORMULAS:
        routes[key.split("/")[0]] = "depthwise"
    return routes


def __getattr__(name: str):
    """``FAMILIES`` (every family module) and ``FORMULAS`` (every formula by key), built on
    first access: they import all families, which an estimate does not need (PEP 562)."""
    if name in globals():
        return globals()[name]
    if name == "FAMILIES":
        value: object = tuple(family(n) for n in FAMILY_NAMES)
    elif name == "FORMULAS":
        value = MappingProxyType({k: f for n in FAMILY_NAMES for k, f in family(n).FORMULAS.items()})
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def sweep(name: str, library: str | None = None, tier: str | None = None) -> list[tuple[str, dict[str, int]]]:
    """Family ``name``'s designed calibration sweep, (public function, params) per shape: its
    module ``isa_models.cortex_m.<name>.sweep``, apart from the formulas so an estimate never compiles
    the shape tables (``refsim calibrate`` and the tests import it). For the real CMSIS-NN as
    its own CMake project builds it (``library`` ``cmsis-nn``, -Ofast) the module's
    ``cmsis_nn_sweep()`` shapes follow, appended last: the short, odd and single-pixel shapes
    that CMSIS-NN's random-case tail called for (issue 18, benchmarks/cost_model.py (d)), whose
    features were read from that build. kernels_c and TFLM's -O2 build (``cmsis-nn-tflm``: no
    loop unswitching, other inlined copies) keep the shared sweep. With ``tier``, a module's
    ``cmsis_nn_tier_sweep(tier)`` shapes follow those: a loop only one tier's code has (the DSP
    vec-mat's K-tail entries) is measured on that tier's cores only, so the other cores' files
    keep the sweep they were measured on (on MVE: shapes whose call takes another route off MVE, a
    one-channel depthwise being a convolution there, or that exercise MVE-only loops)."""
    module = importlib.import_module(f"isa_models.cortex_m.{name}.sweep")
    shapes = module.sweep()
    if library == "cmsis-nn" and hasattr(module, "cmsis_nn_sweep"):
        shapes += module.cmsis_nn_sweep()
        if tier is not None and hasattr(module, "cmsis_nn_tier_sweep"):
            shapes += module.cmsis_nn_tier_sweep(tier)
    return shapes


def _router(function: str) -> ModuleType:
    name = ROUTES.get(function) or derived_routes().get(function)
    if name is None:
        raise CostModelError(
            f"no cost formula for CMSIS-NN function {function!r}; known: {', '.join(known_functions())}"
        )
    return family(name)


def known_functions() -> tuple[str, ...]:
    """CMSIS-NN functions (public and leaf) the model can estimate."""
    return tuple(sorted(set(ROUTES) | set(derived_routes())))


def route(function: str, params: Params, tier: str) -> str:
    """The formula key (``arm_convolve_1x1_s8_fast``, ``arm_depthwise_conv_wrapper_s8/to_conv``,
    ...) that a call of ``function`` runs on ``tier``."""
    return _router(function).route(function, params, tier)


def formula_for(function: str, key: str) -> Formula:
    """The formula ``key`` that a call of ``function`` was routed to."""
    formula = _router(function).FORMULAS.get(key)
    return formula if formula is not None else __getattr__("FORMULAS")[key]


def data_params(function: str, params: Params, tier: str) -> tuple[str, ...]:
    """The params of a call of ``function`` that count work its values decide
    (:attr:`Formula.data`: softmax's ``exp_elements``); () when the shape decides it all."""
    return formula_for(function, route(function, params, tier)).data


class Call(NamedTuple):
    """A routed call: the public function, the formula key it runs, its features and MACs."""

    function: str
    key: str
    features: Features
    macs: int
    bytes_read: int
    bytes_written: int


def describe_call(
    function: str, params: Params, tier: str, library: str | None = None, core: str | None = None
) -> Call:
    """The routed call with ``library``'s features (default: the real CMSIS-NN's loops) on
    ``core`` (features that depend on the architecture: :attr:`Formula.by_arch`)."""
    return _describe(function, route(function, params, tier), params, tier, library, core)


def _describe(
    function: str, key: str, params: Params, tier: str, library: str | None, core: str | None = None
) -> Call:
    formula = formula_for(function, key)
    read, written = formula.bytes(params)
    features = formula.features_for(library, core)(params, tier)
    return Call(function, key, features, formula.macs(params), read, written)


def estimate_call(
    function: str,
    params: Params,
    core: str,
    *,
    library: str | None = None,
    tier: str | None = None,
    memory: str = "sram",
    fallback: bool = True,
    calibrations: CalibrationSet | None = None,
) -> Cost:
    """The Cost of one call of ``function`` on ``core`` from ``library``'s calibration
    (default: :data:`isa_models.cortex_m.calibration.DEFAULT_LIBRARY`). ``calibrations``: the
    estimate's already loaded :class:`~isa_models.cortex_m.calibration.CalibrationSet` for
    ``core`` (then ``library`` is its chosen one); without it the call loads its own."""
    from isa_models.cortex_m.calibration import LIBRARY_PREFERENCE, CalibrationSet

    if calibrations is None:
        calibrations = CalibrationSet(core, library)
    elif calibrations.core != core or library not in (None, calibrations.chosen.library):
        raise ValueError(f"estimate_call on {core} ({library or 'default library'}) given {calibrations!r}")
    calibration = calibrations.chosen
    tier = tier or calibration.tier
    key = route(function, params, tier)
    fit = calibration.functions.get(key)
    used = calibration.library
    source = f"{calibration.library}/{core}:{key}"
    if fit is None and fallback:
        # A library without this function (refsim_lut_s8 is refsim's own): the next library's fit,
        # named in the sources so the report says which numbers are not the chosen library's.
        for other in LIBRARY_PREFERENCE:
            if other == calibration.library:
                continue
            alt = calibrations.fallback(other)
            if alt is None:
                continue
            if key in alt.functions and alt.tier == tier:
                fit, used, source = (
                    alt.functions[key],
                    other,
                    f"{other}/{core}:{key} ({calibration.library} has none)",
                )
                break
    if fit is None:
        raise CostModelError(
            f"{calibration.library} calibration for {core} has no fit for {key} "
            f"(routed from {function}); regenerate it with `refsim calibrate --cpu {core}`"
        )
    call = _describe(function, key, params, tier, used, core)  # the features of the fitted library's loops
    return Cost(
        macs=call.macs,
        instructions=max(fit.evaluate("instructions", call.features), 0.0),
        cycles=max(fit.evaluate("cycles", call.features), 0.0),
        bytes_read={memory: call.bytes_read},
        bytes_written={memory: call.bytes_written},
        sources=(source,),
    )


__all__ = [
    "FAMILIES",
    "FAMILY_NAMES",
    "FORMULAS",
    "ROUTES",
    "Call",
    "CostModelError",
    "data_params",
    "derived_routes",
    "describe_call",
    "estimate_call",
    "family",
    "formula_for",
    "known_functions",
    "route",
    "sweep",
]
