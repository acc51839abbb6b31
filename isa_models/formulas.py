"""Every cost formula, by CMSIS-NN function, and the estimate of one call on one core.

    from isa_models.formulas import estimate_call
    cost = estimate_call("arm_convolve_wrapper_s8", params, core="cortex-m55")   # a Cost

``params`` are the call's scalar parameters under CMSIS-NN's names (shared VECTORS.md). The
call is routed with kernels_py's predicates for the core's tier (one family = one module
name in every layer: :mod:`isa_models.conv`, ``depthwise``, ``fully_connected``, ``pooling``,
``elementwise``, ``softmax``, ``layout``, ``activation``), its features computed, and the
features weighted by the coefficients of that core's calibration file::

    instructions = Σ_f a_f · feature_f        cycles = Σ_f b_f · feature_f

No QEMU runs here; an estimate costs microseconds of host time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType, ModuleType

from isa_models import activation, conv, depthwise, elementwise, fully_connected, layout, pooling, softmax
from isa_models.cost import Cost
from isa_models.errors import IsaModelError
from isa_models.formula import Features, Formula
from isa_models.shapes import Params

#: The formula modules, one per op family (the same names as kernels_py's modules).
FAMILIES: tuple[ModuleType, ...] = (
    conv,
    depthwise,
    fully_connected,
    pooling,
    elementwise,
    softmax,
    layout,
    activation,
)


class CostModelError(IsaModelError):
    """A call the cost model cannot estimate (unknown function, no calibration for the core)."""


FORMULAS: Mapping[str, Formula] = MappingProxyType({k: f for m in FAMILIES for k, f in m.FORMULAS.items()})

#: Public CMSIS-NN function → the family module that routes it.
_ROUTERS: dict[str, ModuleType] = {}
for _module in FAMILIES:
    for _formula in _module.FORMULAS.values():
        _ROUTERS.setdefault(_formula.public, _module)
        _ROUTERS.setdefault(_formula.key.split("/")[0], _module)
# Depthwise leaves are routed by the depthwise module even when called directly.
for _name in depthwise.FORMULAS:
    _ROUTERS[_name.split("/")[0]] = depthwise


def known_functions() -> tuple[str, ...]:
    """CMSIS-NN functions (public and leaf) the model can estimate."""
    return tuple(sorted(_ROUTERS))


def route(function: str, params: Params, tier: str) -> str:
    """The formula key (``arm_convolve_1x1_s8_fast``, ``arm_depthwise_conv_wrapper_s8/to_conv``,
    ...) that a call of ``function`` runs on ``tier``."""
    module = _ROUTERS.get(function)
    if module is None:
        raise CostModelError(
            f"no cost formula for CMSIS-NN function {function!r}; known: {', '.join(known_functions())}"
        )
    return module.route(function, params, tier)


@dataclass(frozen=True)
class Call:
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
    key = route(function, params, tier)
    formula = FORMULAS[key]
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
) -> Cost:
    """The Cost of one call of ``function`` on ``core`` from ``library``'s calibration
    (default: :data:`isa_models.calibration.DEFAULT_LIBRARY`)."""
    from isa_models.calibration import LIBRARY_PREFERENCE, CalibrationError, load

    calibration = load(core, library)
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
            try:
                alt = load(core, other)
            except CalibrationError:
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
    call = describe_call(function, params, tier, used, core)  # the features of the fitted library's loops
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
    "FORMULAS",
    "Call",
    "CostModelError",
    "describe_call",
    "estimate_call",
    "known_functions",
    "route",
]
