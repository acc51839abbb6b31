"""CMSIS-NN call parameters under CMSIS-NN's names (``input_dims.n``, ``stride.h`` ...) for the
cost hooks' ``KernelWork`` items. A light module on purpose: the op modules import it at load,
and a plain run must not load the cost model (tests/isa_models/test_import_cost.py)."""

from __future__ import annotations

from refsim.ops.registry import Args


def dims(prefix: str, d) -> dict[str, int]:
    """A ``cmsis_nn_dims`` as ``{prefix}.n`` ... ``{prefix}.c``."""
    return {f"{prefix}.{k}": int(v) for k, v in zip("nhwc", (d.n, d.h, d.w, d.c), strict=True)}


def tiles(p) -> dict[str, int]:
    """Stride and padding (and dilation when the params have one) of a conv/pool params struct."""
    out = {"stride.h": p.stride.h, "stride.w": p.stride.w, "padding.h": p.padding.h, "padding.w": p.padding.w}
    if hasattr(p, "dilation"):
        out.update({"dilation.h": p.dilation.h, "dilation.w": p.dilation.w})
    return out


def weight_bytes(a: Args, *names: str) -> int:
    """The bytes of the named tensor arguments that are present (what a call streams as weights)."""
    return sum(int(getattr(a, n).meta.nbytes) for n in names if getattr(a, n, None) is not None)
