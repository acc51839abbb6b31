"""TFLM's whole-device RAM and flash for one .tflite on one core, in the line format of the
ExecuTorch report (refsim/memory/report.py), for `refsim compare`.

RAM: the smallest tensor arena TFLM's AllocateTensors accepts (the arena an application must
give it; refsim/memory/tflm/, to the byte against TFLM under QEMU) plus what TFLM keeps beside it
(MicroInterpreter, the op resolver, .data/.bss: refsim/memory/tflm_flash.tflm_runtime_ram).
Flash: the predicted linked image (refsim/memory/tflm_flash.tflm_flash_report). A core with no
measured TFLM build says so in ``note`` and leaves that total None; the Cortex-M85 takes the
Cortex-M55's build, as the ExecuTorch report does (gcc 12.2 has no -mcpu=cortex-m85).
"""

from __future__ import annotations

from pathlib import Path

from refsim.errors import UnsupportedError
from refsim.tflite.model import Model

#: Cores whose TFLM build is another core's (what the device would link).
SAME_BUILD = {"cortex-m85": "cortex-m55"}


def tflm_memory_report(model: Model, path: Path | str, cpu: str) -> dict:
    """``lines`` (``section``, ``name``, ``bytes``, ``source``, ``part_of``), ``ram_total``,
    ``flash_total`` (None where not predicted) and ``note``."""
    from refsim.memory.tflm.predict import predict, setup_for
    from refsim.memory.tflm_flash import tflm_flash_report, tflm_runtime_ram

    build = SAME_BUILD.get(cpu, cpu)
    via = f" ({build}'s build)" if build != cpu else ""
    prediction = predict(model, setup_for(build), build)
    lines = [
        {
            "section": "ram",
            "name": "TFLM tensor arena (smallest AllocateTensors accepts)",
            "bytes": prediction.arena_min_bytes,
            "source": f"refsim/memory/tflm replay of MicroAllocator{via}; arena_used_bytes() "
            f"{prediction.arena_used_bytes:,}",
            "part_of": None,
        }
    ]
    notes = []
    flash_total = None
    ram_total: int | None = prediction.arena_min_bytes
    try:
        flash = tflm_flash_report(path, build)
        runtime = tflm_runtime_ram(build, flash["ops"])
    except UnsupportedError as exc:
        notes.append(f"TFLM flash and RAM beside the arena not predicted on {cpu}: {exc}")
        ram_total = None
    else:
        lines += [
            {
                "section": "ram",
                "name": ln["name"],
                "bytes": ln["bytes"],
                "source": ln["source"] + via,
                "part_of": None,
            }
            for ln in runtime["lines"]
        ]
        lines += [{"section": "flash", **ln} for ln in flash["lines"]]
        flash_total = flash["flash_bytes"]
        ram_total = prediction.arena_min_bytes + runtime["ram_bytes"]
    return {"lines": lines, "ram_total": ram_total, "flash_total": flash_total, "note": "; ".join(notes)}
