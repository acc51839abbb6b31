"""A cost formula: named features of a call's shape, weighted by per-core fitted coefficients.

    instructions = Σ_f  a_f · feature_f(shape)        cycles = Σ_f  b_f · feature_f(shape)

``a`` and ``b`` come from a calibration file (:mod:`isa_models.cortex_m.calibration`), one set per
CMSIS-NN function (and routing variant) per core, fitted on measured calls. The features are
counts a kernel's loops run (calls, output pixels, outputs requantized, inner-loop passes,
tails), so each coefficient is "instructions (cycles) per trip of that loop".
"""

# No ``from __future__ import annotations`` here: typing.NamedTuple compiles every string
# annotation into a ForwardRef at import (~10 µs a field), which the estimate's cold start pays.
from collections.abc import Callable, Mapping
from functools import partial
from importlib import import_module
from typing import NamedTuple

from isa_models.shapes import Params

Features = Mapping[str, float]


class Formula(NamedTuple):
    """One CMSIS-NN function (or routing variant) on one tier.

    ``key``: ``<function>`` or ``<function>/<variant>`` as in calibration files; ``public``:
    the function a deployment calls to reach it (the calibration sweep calls that one, so the
    wrapper's own routing is measured too); ``features(params, tier)``: the named features;
    ``macs(params)``: multiply-accumulates (or elements) of the call; ``bytes(params)``:
    (read, written) bytes of activations and weights.
    """

    key: str
    public: str
    features: Callable[[Params, str], Features]
    macs: Callable[[Params], int]
    bytes: Callable[[Params], tuple[int, int]]
    doc: str = ""
    #: ``(library, features)`` pairs for a library whose implementation loops differently from
    #: CMSIS-NN's (kernels_c's planned transpose); ``features`` is the real CMSIS-NN's.
    library_features: tuple[tuple[str, Callable[[Params, str], Features]], ...] = ()
    #: The features depend on the core's architecture, not only its tier, because the code the
    #: kernel links differs (newlib's ARMv6-M memcpy): the feature functions take ``arch=``.
    by_arch: bool = False
    #: Params that count work the call's *values* decide (softmax's exponentials), which the
    #: golden run reports (refsim.ops.data_work): given, the features price them; absent, the
    #: features take the shape-only bound and an estimate says it is shape-only.
    data: tuple[str, ...] = ()

    def features_for(self, library: str | None, core: str | None = None) -> Callable[[Params, str], Features]:
        """The feature function for ``library`` (None or a library without its own: CMSIS-NN's)
        on ``core`` (None: the tier's ARMv7-M/ARMv8-M code)."""
        features = dict(self.library_features).get(library or "", self.features)
        if not self.by_arch or core is None:
            return features
        from isa_models.cortex_m.cores import get_core_model

        return partial(features, arch=get_core_model(core).arch)

    def evaluate(self, coefficients: Mapping[str, float], features: Features) -> float:
        return sum(coefficients.get(name, 0.0) * x for name, x in features.items())


def imported_at_call(module: str, name: str) -> Callable[..., Features]:
    """The feature function ``module.name``, imported at its first call: another library's own
    loops (kernels_c's, in ``isa_models.cortex_m.<family>.kernels_c``) that an estimate of the default
    library never compiles. Keyword arguments (``arch=``) pass through."""

    def features(p: Params, tier: str, **kwargs) -> Features:
        return getattr(import_module(module), name)(p, tier, **kwargs)

    features.__qualname__ = features.__name__ = f"{module}.{name}"
    return features


__all__ = ["Features", "Formula", "imported_at_call"]
