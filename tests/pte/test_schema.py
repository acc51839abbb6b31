"""refsim's schema files are the source of truth: the slot table and enums must match them,
and (when flatc is installed) flatc must decode refsim-written files with them."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from refsim.pte import load_program, rewrite_program, write_program
from refsim.pte import model as m
from refsim.pte._slots import TABLES
from tests.pte.test_validation import CONSTANTS, PROGRAM, SEGMENTS

SCHEMA = Path(m.__file__).parent / "schema"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "pte"


def parse_fbs(text: str) -> tuple[dict[str, tuple[str, ...]], dict[str, dict[str, int]]]:
    """Tables (fields in slot order, a union field as two slots) and enums of an .fbs file."""
    text = re.sub(r"//[^\n]*", "", text)
    unions = set(re.findall(r"\bunion\s+(\w+)", text))
    tables = {}
    for name, body in re.findall(r"\btable\s+(\w+)\s*\{([^}]*)\}", text):
        fields: list[str] = []
        for statement in body.split(";"):
            declaration = re.match(r"\s*(\w+)\s*:\s*\[?\s*(\w+)", statement)
            if declaration:
                field, ftype = declaration.groups()
                fields += [f"{field}_type", field] if ftype in unions else [field]
        tables[name] = tuple(fields)
    enums = {}
    for name, body in re.findall(r"\benum\s+(\w+)\s*:\s*\w+\s*\{([^}]*)\}", text):
        enums[name] = {k: int(v) for k, v in re.findall(r"(\w+)\s*=\s*(-?\d+)", body)}
    return tables, enums


def test_slot_table_matches_the_schema():
    tables, _ = parse_fbs((SCHEMA / "program.fbs").read_text())
    assert tables == TABLES


def test_enums_match_the_schema():
    _, enums = parse_fbs((SCHEMA / "program.fbs").read_text() + (SCHEMA / "scalar_type.fbs").read_text())
    assert list(enums["ScalarType"].values()) == [t.value for t in m.ScalarType]
    for name, enum in [
        ("TensorShapeDynamism", m.ShapeDynamism),
        ("TensorDataLocation", m.TensorDataLocation),
        ("DeviceType", m.DeviceType),
        ("DataLocation", m.DataLocation),
    ]:
        assert enums[name] == {e.name: e.value for e in enum}


def test_union_tags_follow_schema_order():
    text = (SCHEMA / "program.fbs").read_text()
    for union, kinds in [("KernelTypes", m.ValueKind), ("InstructionArguments", m.InstructionKind)]:
        members = re.search(rf"union\s+{union}\s*\{{([^}}]*)\}}", text).group(1)
        names = re.findall(r"\w+", members)
        assert [re.sub(r"(?<!^)(?=[A-Z])", "_", n).upper() for n in names] == [k.name for k in kinds]


@pytest.mark.skipif(
    shutil.which("flatc") is None, reason="flatc not installed (Debian: flatbuffers-compiler)"
)
def test_flatc_decodes_refsim_files_with_refsim_schema(tmp_path):
    pte = tmp_path / "p.pte"
    write_program(PROGRAM, CONSTANTS, pte, segments=SEGMENTS)
    subprocess.run(
        [
            "flatc",
            "--json",
            "--strict-json",
            "--raw-binary",
            "-o",
            str(tmp_path),
            str(SCHEMA / "program.fbs"),
            "--",
            str(pte),
        ],
        check=True,
        capture_output=True,
    )
    decoded = json.loads((tmp_path / "p.json").read_text())
    plan = decoded["execution_plan"][0]
    assert plan["name"] == "forward"
    assert len(plan["values"]) == len(PROGRAM.execution_plan[0].values)
    assert plan["values"][1]["val_type"] == "Tensor"
    assert plan["values"][1]["val"]["dim_order"] == [0, 2, 3, 1]
    assert plan["chains"][0]["instructions"][0]["instr_args_type"] == "KernelCall"
    assert decoded["constant_segment"]["offsets"] == [0, 0]
    assert decoded["named_data"] == [{"key": "lut", "segment_index": 1}]


@pytest.mark.skipif(
    shutil.which("flatc") is None, reason="flatc not installed (Debian: flatbuffers-compiler)"
)
@pytest.mark.parametrize("name", ["fp32_linear", "cm_conv_linear", "cm_mixed"])
def test_rewriting_an_executorch_export_keeps_its_content(tmp_path, name):
    """flatc decodes ExecuTorch's file and refsim's rewrite of it to the same JSON."""
    original = FIXTURES / f"{name}.pte"
    rewritten = tmp_path / f"{name}.rw.pte"
    rewrite_program(load_program(original), rewritten)
    decoded = []
    for pte, out in [(original, tmp_path / "orig"), (rewritten, tmp_path / "ours")]:
        cmd = [
            "flatc",
            "--json",
            "--strict-json",
            "--raw-binary",
            "-o",
            str(out),
            str(SCHEMA / "program.fbs"),
        ]
        subprocess.run([*cmd, "--", str(pte)], check=True, capture_output=True)
        decoded.append(json.loads((out / f"{pte.stem}.json").read_text()))
    assert decoded[0] == decoded[1]
