"""ExecuTorch's own flash (refsim/memory/executorch_code.json): the shipped data is consistent,
flash lines use it (union of a program's ops, "not measured" for an op it lacks), and with the
ExecuTorch sources at hand (EXECUTORCH_DIR, FLATBUFFERS_DIR, CMSIS_NN_DIR) it regenerates equal."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from refsim.lab.build import map_sections
from refsim.lab.executorch.code_size import OPS
from refsim.lab.executorch.dispatch_measure import CORES
from refsim.memory.flash import ET_CODE, RUNTIME, operator_code_lines, runtime_lines

ROOT = Path(__file__).resolve().parents[2]
DATA = json.loads(ET_CODE.read_text())
ENV = ("EXECUTORCH_DIR", "FLATBUFFERS_DIR", "CMSIS_NN_DIR")


def test_the_data_covers_every_core_and_op():
    assert set(DATA["cores"]) == set(CORES)
    assert DATA["sources"] == dict(sorted(OPS.items()))
    for core, entry in DATA["cores"].items():
        if "same_build_as" in entry:
            assert "same_build_as" not in DATA["cores"][entry["same_build_as"]], core
            continue
        assert set(entry["ops"]) == set(OPS), core
        assert len(entry["functions"]) == len(DATA["function_names"])
        names = DATA["function_names"]
        for op, o in entry["ops"].items():
            assert o["kernel"], f"{core} {op}: no kernel function"
            assert o["kernel_bytes"] == sum(entry["functions"][f] for f in o["kernel"])
            assert o["wrapper_bytes"] == sum(entry["functions"][f] for f in o["wrapper"])
            assert not [names[f] for f in (*o["kernel"], *o["wrapper"]) if names[f].startswith("arm_")], op
        r = entry["runtime"]
        assert r["bytes"] == r["executorch"] + r["executorch_headers"] + r["libraries"]
        assert sum(r["by_source"].values()) == r["executorch"]
        assert 10_000 < r["executorch"] < RUNTIME.bytes, core


def test_runtime_line_is_measured_with_the_published_figure_beside():
    entry = DATA["cores"]["cortex-m4"]["runtime"]
    whole, *details = runtime_lines("cortex-m4")
    assert whole.bytes == entry["bytes"] and whole.source.startswith("measured")
    published = next(ln for ln in details if ln.name == "published figure (comparison)")
    assert published.bytes == RUNTIME.bytes and published.part_of == whole.name
    m85, *_ = runtime_lines("cortex-m85")
    assert (
        m85.bytes == DATA["cores"]["cortex-m55"]["runtime"]["bytes"] and "built as cortex-m55" in m85.source
    )


def test_operator_lines_count_shared_code_once_and_name_what_is_missing():
    ops = ["aten::add.out", "aten::mul.out", "aten::exp.out"]  # add and mul share elementwise_util
    whole, add, mul, missing = operator_code_lines(ops, "cortex-m55")
    assert whole.name == "ExecuTorch operator code" and whole.part_of is None
    assert (add.name, mul.name) == tuple(ops[:2]) and add.part_of == mul.part_of == whole.name
    assert max(add.bytes, mul.bytes) < whole.bytes < add.bytes + mul.bytes  # shared code once
    assert missing.bytes is None and missing.part_of is None and "aten::exp.out" in missing.source
    (none,) = operator_code_lines(ops, "cortex-m99")
    assert none.bytes is None and "cortex-m99" in none.source


def test_map_sections_reads_a_gnu_ld_map(tmp_path):
    map_file = tmp_path / "probe.map"
    map_file.write_text(
        "Discarded input sections\n .text.gone 0x0 0x10 a.o\n\nLinker script and memory map\n\n"
        ".text           0x00000000     0x1000\n"
        " .text._ZN10executorch7runtime6Method4loadEv\n"
        "                0x00000100       0x40 /b/et-x/runtime__executor__method.cpp.o\n"
        " .text          0x00000140       0x20 /usr/lib/libc.a(lib_a-memcpy.o)\n"
        " *fill*         0x00000160        0x4 \n"
        " .bss           0x00002000      0x100 /b/main.o\n"
    )
    sections = map_sections(map_file)
    assert [(s.name, s.address, s.size) for s in sections] == [
        (".text._ZN10executorch7runtime6Method4loadEv", 0x100, 0x40),
        (".text", 0x140, 0x20),
    ]


def _by_name(data: dict, core: str) -> dict:
    """A core's entry with function names in place of the data's table indices."""
    names, entry = data["function_names"], data["cores"][core]
    ops = {
        op: {**o, "kernel": [names[i] for i in o["kernel"]], "wrapper": [names[i] for i in o["wrapper"]]}
        for op, o in entry["ops"].items()
    }
    functions = {names[i]: b for i, b in enumerate(entry["functions"]) if b is not None}
    return {**entry, "ops": ops, "functions": functions}


@pytest.mark.skipif(
    not all(os.environ.get(v) for v in ENV) or shutil.which("arm-none-eabi-g++") is None,
    reason="regenerating needs EXECUTORCH_DIR, FLATBUFFERS_DIR, CMSIS_NN_DIR and arm-none-eabi-g++",
)
def test_regenerated_core_equals_the_shipped_data(tmp_path):
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from executorch_code import generate

    core = "cortex-m4"
    fresh = generate([core], tmp_path, "test")
    assert _by_name(fresh, core) == _by_name(DATA, core)
    assert fresh["published"]["measured_here"] == DATA["published"]["measured_here"]
    assert fresh["provenance"]["executorch"] == DATA["provenance"]["executorch"]
