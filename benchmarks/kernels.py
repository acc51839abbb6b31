"""MAC/s of the numba fast paths vs the readable references on MLPerf-Tiny-sized layers.

    python benchmarks/kernels.py [--repeat N] [--out benchmarks/results/kernels.json]

Each layer runs once to load or compile its numba code (the first-call time is reported),
then ``--repeat`` times for the fast path and once for the reference; both outputs are
checked equal. Results print as a table and are saved as JSON. Timings on a shared machine
are noisy: compare the ratios within one run, not numbers across runs.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from kernels_py import conv, depthwise, fully_connected, pooling
from kernels_py.types import (
    Activation,
    ConvParams,
    DwConvParams,
    FcParams,
    PerChannelQuantParams,
    PerTensorQuantParams,
    PoolParams,
    Tile,
)


@dataclass
class Result:
    layer: str
    function: str
    macs: int
    first_call_ms: float
    fast_us: float
    reference_ms: float
    fast_gmacs: float
    reference_mmacs: float
    speedup: float


def _quant(rng, channels):
    return PerChannelQuantParams(
        rng.integers(1 << 30, (1 << 31) - 1, channels), rng.integers(-10, -6, channels, endpoint=True)
    )


def _conv_case(rng, name, h, w, c_in, c_out, k, stride, pad, out=None):
    x = rng.integers(-128, 128, (1, h, w, c_in), dtype=np.int8)
    f = rng.integers(-128, 128, (c_out, k[0], k[1], c_in), dtype=np.int8)
    b = rng.integers(-5000, 5000, c_out, dtype=np.int32)
    p = ConvParams(3, -5, Tile(stride, stride), Tile(pad[1], pad[0]), Tile(1, 1), Activation(-128, 127))
    q = _quant(rng, c_out)
    oh, ow = out or ((h + 2 * pad[0] - k[0]) // stride + 1, (w + 2 * pad[1] - k[1]) // stride + 1)
    macs = oh * ow * c_out * k[0] * k[1] * c_in  # nominal, padded taps included
    args = (x, f, b, p, q, (oh, ow))
    return (
        name,
        "arm_convolve_s8",
        macs,
        lambda: conv.convolve_s8(*args),
        lambda: conv.convolve_s8_reference(*args),
    )


def _dw_case(rng, name, h, w, c, stride):
    x = rng.integers(-128, 128, (1, h, w, c), dtype=np.int8)
    f = rng.integers(-128, 128, (1, 3, 3, c), dtype=np.int8)
    b = rng.integers(-5000, 5000, c, dtype=np.int32)
    p = DwConvParams(3, -5, 1, Tile(stride, stride), Tile(1, 1), Tile(1, 1), Activation(-128, 127))
    q = _quant(rng, c)
    oh, ow = (h + 2 - 3) // stride + 1, (w + 2 - 3) // stride + 1
    args = (x, f, b, p, q, (oh, ow))
    return (
        name,
        "arm_depthwise_conv_s8",
        oh * ow * c * 9,
        lambda: depthwise.depthwise_conv_s8(*args),
        lambda: depthwise.depthwise_conv_s8_reference(*args),
    )


def _fc_case(rng, name, n, k, c_out):
    x = rng.integers(-128, 128, (n, k), dtype=np.int8)
    f = rng.integers(-128, 128, (c_out, k), dtype=np.int8)
    b = rng.integers(-5000, 5000, c_out, dtype=np.int32)
    p = FcParams(3, 0, -5, Activation(-128, 127))
    q = PerTensorQuantParams(int(rng.integers(1 << 30, (1 << 31) - 1)), -9)
    args = (x, f, b, p, q)
    return (
        name,
        "arm_fully_connected_s8",
        n * k * c_out,
        lambda: fully_connected.fully_connected_s8(*args),
        lambda: fully_connected.fully_connected_s8_reference(*args),
    )


def _pool_case(rng, name, h, w, c):
    x = rng.integers(-128, 128, (1, h, w, c), dtype=np.int8)
    p = PoolParams(Tile(1, 1), Tile(0, 0), Activation(-128, 127))
    return (
        name,
        "arm_avgpool_s8",
        h * w * c,
        lambda: pooling.avgpool_s8(x, p, (h, w), (1, 1)),
        lambda: pooling.avgpool_s8_reference(x, p, (h, w), (1, 1)),
    )


def cases(rng) -> list[tuple[str, str, int, Callable, Callable]]:
    return [
        # TF SAME: 25x5 output, the extra padding row/column at the bottom/right
        _conv_case(rng, "KWS conv1 49x10x1 → 64, 10x4/2", 49, 10, 1, 64, (10, 4), 2, (4, 1), (25, 5)),
        _dw_case(rng, "KWS depthwise 25x5x64 3x3", 25, 5, 64, 1),
        _conv_case(rng, "KWS pointwise 25x5x64 → 64", 25, 5, 64, 64, (1, 1), 1, (0, 0)),
        _fc_case(rng, "KWS fc 64 → 12", 1, 64, 12),
        _pool_case(rng, "KWS avgpool 25x5x64", 25, 5, 64),
        _conv_case(rng, "VWW pointwise 24x24x32 → 64", 24, 24, 32, 64, (1, 1), 1, (0, 0)),
        _dw_case(rng, "VWW depthwise 48x48x16 3x3/2", 48, 48, 16, 2),
        _conv_case(rng, "IC conv 32x32x16 → 16, 3x3", 32, 32, 16, 16, (3, 3), 1, (1, 1)),
        _fc_case(rng, "AD fc 640 → 128", 1, 640, 128),
        _fc_case(rng, "fc 1024 → 1024", 1, 1024, 1024),
        _fc_case(rng, "fc 1024 → 1024, batch 8", 8, 1024, 1024),
    ]


def measure(repeat: int) -> list[Result]:
    rng = np.random.default_rng(0)
    results = []
    for name, function, macs, fast, reference in cases(rng):
        t0 = time.perf_counter()
        out_fast = fast()
        first = time.perf_counter() - t0
        n = max(1, min(repeat, int(2e9 // max(macs, 1) // 100)))
        t0 = time.perf_counter()
        for _ in range(n):
            fast()
        fast_s = (time.perf_counter() - t0) / n
        t0 = time.perf_counter()
        out_ref = reference()
        ref_s = time.perf_counter() - t0
        np.testing.assert_array_equal(out_fast, out_ref, err_msg=name)
        results.append(
            Result(
                name,
                function,
                macs,
                first * 1e3,
                fast_s * 1e6,
                ref_s * 1e3,
                macs / fast_s / 1e9,
                macs / ref_s / 1e6,
                ref_s / fast_s,
            )
        )
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "kernels.json")
    args = parser.parse_args()
    results = measure(args.repeat)
    table = Table(title="kernels_py: numba fast path vs reference (one core, warm numba cache)")
    for col in (
        "layer",
        "function",
        "MACs",
        "first call ms",
        "fast µs",
        "fast GMAC/s",
        "ref ms",
        "ref MMAC/s",
        "×",
    ):
        table.add_column(col, justify="left" if col in ("layer", "function") else "right")
    for r in results:
        table.add_row(
            r.layer,
            r.function,
            f"{r.macs:,}",
            f"{r.first_call_ms:.1f}",
            f"{r.fast_us:,.1f}",
            f"{r.fast_gmacs:.2f}",
            f"{r.reference_ms:,.1f}",
            f"{r.reference_mmacs:.2f}",
            f"{r.speedup:,.0f}",
        )
    Console(width=max(Console().width, 150)).print(table)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "machine": {
            "python": platform.python_version(),
            "processor": platform.processor() or platform.machine(),
        },
        "results": [asdict(r) for r in results],
    }
    args.out.write_text(json.dumps(payload, indent=2) + "\n")
    print(f"saved {args.out}")


if __name__ == "__main__":
    main()
