"""Where a stacked batch spends its time: each step of one `StackedMethod`, on one thread.

    PYTHONPATH=$PWD python benchmarks/profile_stacked.py MODEL [--size 64] [--repeat 40]
    REFSIM_INTEGER_GEMM=0 PYTHONPATH=$PWD python benchmarks/profile_stacked.py MODEL   # float32 route

MODEL is a bundled program (examples/models/MODEL.pte). Each step (one kernel call for ``size``
samples) is timed ``repeat`` times and its minimum kept: on a shared machine the minimum is what
the code costs, a mean what the neighbours cost. Printed as µs per inference and share of the
total; the integer GEMM (refsim.runtime.igemm) is on unless REFSIM_INTEGER_GEMM=0, as in a batch.
benchmarks/results/profile_batch.txt holds its output before and after the integer route.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from refsim.ops.registry import Args  # noqa: E402
from refsim.runtime import Program  # noqa: E402
from refsim.runtime.igemm import batch_product  # noqa: E402
from refsim.runtime.stack import StackedMethod  # noqa: E402


def step_minima(stack: StackedMethod, x: np.ndarray, repeat: int) -> np.ndarray:
    """Seconds per step of ``stack.run([x])``, the minimum over ``repeat`` runs."""
    best = np.full(len(stack.steps), np.inf)
    for _ in range(repeat):
        stack.inputs[0].logical[...] = x.reshape(stack.inputs[0].logical.shape)
        for i, (fn, args) in enumerate(stack.steps):
            started = time.perf_counter()
            if isinstance(args, Args):
                fn(args)
            else:
                operands, dst = args
                if dst is None:
                    fn(*operands)
                else:
                    dst[...] = fn(*operands)
            best[i] = min(best[i], time.perf_counter() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="kws, vww, ic, ad (examples/models/MODEL.pte)")
    parser.add_argument("--size", type=int, default=64, help="samples per stacked call")
    parser.add_argument("--repeat", type=int, default=40)
    args = parser.parse_args()
    method = Program.load(ROOT / "examples" / "models" / f"{args.model}.pte").method("forward")
    x = np.random.default_rng(0).integers(-128, 128, (args.size, *method.inputs[0].sizes), dtype=np.int8)
    with batch_product() as product:
        stack = StackedMethod(method, args.size)
        for _ in range(3):
            stack.run([x])
        best = step_minima(stack, x, args.repeat)
    route = "integer GEMM" if product is not None else "float32 GEMM"
    total = best.sum()
    print(
        f"{args.model}, {args.size} samples per call, {route}: {1e3 * total / args.size:.4f} ms/inference (1 thread)"
    )
    for (fn, _), seconds in zip(stack.steps, best, strict=True):
        name = getattr(fn, "__name__", type(fn).__name__)
        print(f"{100 * seconds / total:5.1f}% {1e6 * seconds / args.size:8.2f} us/inf  {name}")


if __name__ == "__main__":
    main()
