"""The three figures of TFLM's arena for a ``.tflite``: ``arena_used_bytes()``, the smallest arena
``AllocateTensors`` accepts, and the slack between them (what the Prepare-time temps and the
planning peak need above what stays allocated).

``arena_used_bytes`` is reported for a 16-aligned arena whose size is a multiple of 16 (then it does
not depend on the size: every allocation aligns to at most 16 bytes); the smallest arena is the least
byte count for which the replay succeeds at a 16-aligned start, found by bisection and checked
byte by byte below it.
"""

from __future__ import annotations

from dataclasses import dataclass

from refsim.errors import RefsimError
from refsim.memory.tflm.arena import ArenaTooSmall, Replay, Setup, replay
from refsim.memory.tflm.kernels import KernelConfig
from refsim.memory.tflm.sizes import tflm_sizes
from refsim.tflite.model import Model

#: Searched arena sizes: up to 1 GiB.
_LIMIT = 1 << 30


@dataclass(frozen=True)
class Prediction:
    setup: Setup
    cpu: str | None
    arena_used_bytes: int
    arena_min_bytes: int
    replay: Replay  # the replay on the large arena (its events and plan)
    failing_step: str  # what does not fit one byte below the minimum

    @property
    def slack_bytes(self) -> int:
        return self.arena_min_bytes - self.arena_used_bytes

    @property
    def head_bytes(self) -> int:
        return self.replay.head_bytes

    @property
    def tail_bytes(self) -> int:
        a = self.replay.arena
        return a.buffer_tail - a.tail


def setup_for(cpu: str | None, word_size: int = 32, *, optimized_for_speed: bool = True) -> Setup:
    """32-bit: TFLM's cmsis_nn kernels built for ``cpu`` (its CMSIS-NN tier), MicroInterpreter's own
    MicroAllocator. 64-bit: the tflite-micro wheel (reference kernels, RecordingMicroAllocator)."""
    sizes = tflm_sizes(word_size)
    if word_size == 64:
        return Setup(
            sizes, KernelConfig("reference", optimized_for_speed=optimized_for_speed), recording=True
        )
    if cpu is None:
        raise RefsimError(
            "TFLM arena: --cpu names the core the 32-bit build targets (cortex-m3, cortex-m4, cortex-m55, ...)"
        )
    # The arena depends on the core only through the CMSIS-NN tier its kernels are built for
    # (their scratch sizes): any core the cost model knows, not only the ones QEMU emulates.
    from isa_models.cortex_m.cores import get_core_model
    from isa_models.errors import IsaModelError

    try:
        isa = get_core_model(cpu).tier
    except IsaModelError as exc:
        raise RefsimError(f"--cpu: {exc}") from None
    return Setup(sizes, KernelConfig("cmsis_nn", isa=isa, optimized_for_speed=optimized_for_speed))


def _fits(model: Model, setup: Setup, n: int) -> str | None:
    try:
        replay(model, setup, n)
    except ArenaTooSmall as exc:
        return str(exc)
    return None


def predict(model: Model, setup: Setup, cpu: str | None = None) -> Prediction:
    big = replay(model, setup, _LIMIT)  # raises the modelling errors (unsupported op, ...) first
    lo, hi = 0, _LIMIT  # lo fails, hi fits
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _fits(model, setup, mid) is None:
            hi = mid
        else:
            lo = mid
    # Alignment makes acceptance step-wise; the bisection must not have skipped a smaller size.
    for n in range(max(0, hi - 64), hi):
        if _fits(model, setup, n) is None:
            raise RefsimError(f"TFLM arena: acceptance is not monotonic near {hi} bytes ({n} fits)")
    why = _fits(model, setup, hi - 1) or ""
    return Prediction(setup, cpu, big.arena.used_bytes, hi, big, why)
