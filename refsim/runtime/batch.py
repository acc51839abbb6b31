"""Many samples through one method: `execute_batch`, the same bits as one `Method.execute` per sample.

Two ways, both exact by construction. When the program stacks (refsim.runtime.stack says when and
why that cannot move a bit), each worker runs S samples per kernel call through a stacked copy of
the plan. Otherwise, per-sample clones:

**Layout.** The batch is not laid out as one bigger program. Each worker owns a *clone* of the
method: another `Method` built from the same execution plan, so it has its own arenas in the
planned layout (every tensor at its planned offset, the in-place aliasing and the arena reuse of
the plan exactly as for one sample) and its own prepared calls; constants are the same read-only
bytes of the file. A worker takes samples one after another: it copies sample ``i``'s inputs into
its input slots and runs `Method.execute`, the loop, kernels and operands of a single run, then
copies the outputs into row ``i`` of the result. Two workers share nothing writable, so the order
in which samples run, or which worker runs them, cannot reach a bit: sample ``i``'s output is
what ``method.execute(sample_i)`` returns, by construction rather than by test (the tests check
it anyway, tests/runtime/test_batch.py).

**The integer GEMM.** While a batch runs, the GEMMs of convolutions and fully connected layers use
ONNX Runtime's exact integer product when the ``fast`` extra is installed (refsim.runtime.igemm,
kernels_py.gemm's docstring: the same integer sums as the float32 product, so the same bits).

**Both cores.** The golden kernels are numba functions compiled with ``nogil`` and the GEMMs are
BLAS calls, both of which release the GIL, so workers are threads; only the Python dispatch
between kernels is serialised. ``workers`` defaults to the number of CPUs this process may use.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np

from refsim.runtime.igemm import batch_product
from refsim.runtime.stack import StackedMethod, StackError, stack_refusal
from refsim.runtime.tensor import TensorRef

if TYPE_CHECKING:
    from refsim.runtime.program import Method

#: Samples a worker claims at a time: large enough to keep the claim lock cold, small enough
#: that two workers finish together and a progress bar moves.
CLAIM = 8
#: Samples per stacked call, at most, and the bytes of stacked arenas a runner may take.
STACK = 64
STACK_BYTES = 8 << 20
#: A stacked chunk shorter than this runs every chunk on one thread (`_run_stacked`).
PARALLEL_MIN_SECONDS = 0.002


def default_workers() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def batch_inputs(method: Method, inputs: Sequence[Any]) -> tuple[list[Any], int]:
    """Check ``inputs`` (one entry per method input, a leading sample axis on each tensor input)
    and return them with the sample count. A non-tensor input (a constant the method was exported
    with) is given once, as for `Method.execute`."""
    from refsim.runtime.program import ExecutionError

    if len(inputs) != len(method.inputs):
        raise ExecutionError(f"method {method.name!r} takes {len(method.inputs)} inputs, got {len(inputs)}")
    count = None
    checked: list[Any] = []
    for k, (slot, value) in enumerate(zip(method.inputs, inputs, strict=True)):
        if not isinstance(slot, TensorRef):
            if value != slot:
                raise ExecutionError(f"input{k}: this method was exported with the constant {slot!r}")
            checked.append(value)
            continue
        arr = np.asarray(value)
        sizes = tuple(slot.sizes)
        if arr.ndim != len(sizes) + 1 or arr.shape[1:] != sizes:
            raise ExecutionError(
                f"input{k}: expected shape [N, {', '.join(map(str, sizes))}] (a leading sample axis), "
                f"got {list(arr.shape)}"
            )
        if arr.dtype != slot.dtype:
            raise ExecutionError(f"input{k}: expected dtype {slot.dtype}, got {arr.dtype}")
        if count is not None and arr.shape[0] != count:
            raise ExecutionError(f"input{k}: {arr.shape[0]} samples, but an earlier input has {count}")
        count = arr.shape[0]
        checked.append(arr)
    if count is None:
        raise ExecutionError(f"method {method.name!r} has no tensor input to batch over")
    return checked, count


def _clone(method: Method) -> Method:
    """Another `Method` over the same plan: its own arenas and prepared calls (validated again)."""
    return type(method)(method.program, method.plan)


def clones(method: Method, count: int) -> list[Method]:
    """``count`` independent clones of ``method``, made once and kept on it."""
    pool: list[Method] = method.__dict__.setdefault("_batch_clones", [])
    while len(pool) < count:
        pool.append(_clone(method))
    return pool[:count]


def stack_size(method: Method, count: int, workers: int) -> int:
    """Samples per stacked call: enough for every worker to get a share of ``count``, a power of two (so
    few stacked copies are ever built), at most `STACK` and `STACK_BYTES` of arenas per runner."""
    arena = sum(len(a) for a in method.arenas)
    cap = max(1, min(STACK, STACK_BYTES // max(arena, 1)))
    share = -(-count // max(workers, 1))
    return min(cap, 1 << max(share - 1, 0).bit_length())


def stacked_runners(method: Method, count: int, size: int) -> list[StackedMethod] | None:
    """``count`` stacked runners of ``method`` for ``size`` samples each (refsim.runtime.stack), made
    once and kept on the method; None if it does not stack."""
    cache: dict[Any, Any] = method.__dict__.setdefault("_stacked", {})
    if "refusal" not in cache:
        cache["refusal"] = stack_refusal(method)
    if cache["refusal"] is not None:
        return None
    pool: list[StackedMethod] = cache.setdefault(size, [])
    try:
        while len(pool) < count:
            pool.append(StackedMethod(method, size))
    except StackError as exc:
        cache["refusal"] = str(exc)
        return None
    return pool[:count]


def execute_batch(
    method: Method,
    inputs: Sequence[Any],
    *,
    workers: int | None = None,
    progress: Callable[[int], None] | None = None,
    stacked: bool = True,
) -> list[Any]:
    """Run every sample of ``inputs`` (see `batch_inputs`); return one array per output with the
    samples along a new leading axis (a non-tensor output: a list with one value per sample).
    ``progress(n)`` is called, from a worker thread, after every ``n`` samples finished.
    ``stacked``: run S samples per kernel call when the method allows it (refsim.runtime.stack);
    otherwise, or with False, every sample on its own through a clone."""
    arrays, count = batch_inputs(method, inputs)
    with batch_product():
        return _execute(method, arrays, count, workers, progress, stacked)


def _execute(method, arrays, count, workers, progress, stacked) -> list[Any]:
    want = workers or default_workers()
    stacks = None
    if stacked and count > 1:
        size = stack_size(method, count, want)
        stacks = stacked_runners(method, max(1, min(want, -(-count // size))), size)
    if stacks is not None:
        return _run_stacked(stacks, arrays, count, progress)
    n_workers = max(1, min(want, -(-count // CLAIM) if count else 1))
    runners = clones(method, n_workers)
    results: list[Any] = [None] * len(method.outputs)
    claimed = 0
    lock = threading.Lock()

    def store(i: int, outs: list[Any]) -> None:
        for k, out in enumerate(outs):
            if results[k] is None:
                with lock:
                    if results[k] is None:
                        results[k] = (
                            np.empty((count, *np.shape(out)), np.asarray(out).dtype)
                            if isinstance(out, np.ndarray)
                            else [None] * count
                        )
            results[k][i] = out

    def work(runner: Method) -> None:
        nonlocal claimed
        while True:
            with lock:
                start = claimed
                claimed = min(count, claimed + CLAIM)
                stop = claimed
            if start >= count:
                return
            for i in range(start, stop):
                sample = [a[i] if isinstance(a, np.ndarray) else a for a in arrays]
                store(i, runner.execute(sample))
            if progress is not None:
                progress(stop - start)

    if n_workers == 1:
        work(runners[0])
    else:
        with ThreadPoolExecutor(n_workers, thread_name_prefix="refsim-batch") as pool:
            for future in [pool.submit(work, r) for r in runners]:
                future.result()  # re-raises a worker's error here
    if count == 0:  # no sample ran: shape the empty results from the output slots
        results = [
            np.empty((0, *slot.sizes), slot.dtype) if isinstance(slot, TensorRef) else []
            for slot in method.outputs
        ]
    return results


def _run_stacked(stacks: list[StackedMethod], arrays: list[Any], count: int, progress) -> list[np.ndarray]:
    """Chunks of `StackedMethod.size` samples claimed by the runners. Below `PARALLEL_MIN_SECONDS` a
    chunk is too short for a second thread to pay (each op's Python between the GIL-free kernels
    hands the GIL back and forth: AD's chunks ran 2.6x slower on two threads than on one), so every
    chunk runs on this thread. How long a chunk takes is measured on the first call (its first chunk
    runs alone) and kept on the runner (`StackedMethod.chunk_seconds`, the fastest chunk seen since):
    later calls start every runner at once (a batch of four chunks on two threads: two chunk-times,
    not the three of a timed first chunk then the rest). Which thread runs a chunk cannot move a bit (the module
    docstring)."""
    size = stacks[0].size
    results = [np.empty((count, *o.sizes), o.dtype) for o in stacks[0].method.outputs]
    claimed = 0
    lock = threading.Lock()

    def claim() -> tuple[int, int] | None:
        nonlocal claimed
        with lock:
            start = claimed
            claimed = min(count, claimed + size)
            return (start, claimed) if start < count else None

    def run(stack: StackedMethod, start: int, stop: int) -> None:
        started = time.perf_counter()
        chunk = [a[start:stop] for a in arrays]
        if stop - start < size:  # a short last chunk: fill the stack with copies of its last sample
            fill = size - (stop - start)
            chunk = [np.concatenate([c, np.repeat(c[-1:], fill, axis=0)]) for c in chunk]
        for k, out in enumerate(stack.run(chunk)):
            results[k][start:stop] = out[: stop - start]
        seconds = (
            time.perf_counter() - started
        )  # the fastest chunk seen: a first call's warm-up does not stick
        if stacks[0].chunk_seconds is None or seconds < stacks[0].chunk_seconds:
            stacks[0].chunk_seconds = seconds
        if progress is not None:
            progress(stop - start)

    def work(stack: StackedMethod) -> None:
        while (span := claim()) is not None:
            run(stack, *span)

    if stacks[0].chunk_seconds is None:  # the first call: time a chunk alone
        first = claim()
        if first is None:
            return results
        run(stacks[0], *first)
    if len(stacks) == 1 or stacks[0].chunk_seconds < PARALLEL_MIN_SECONDS:
        work(stacks[0])
    else:
        with ThreadPoolExecutor(len(stacks), thread_name_prefix="refsim-stack") as pool:
            for future in [pool.submit(work, s) for s in stacks]:
                future.result()
    return results
