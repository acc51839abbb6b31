"""TFLite's schema.fbs for the tests that hold refsim's reading against it: from
$REFSIM_TFLITE_SCHEMA, else from a tflite-micro clone ($REFSIM_TFLM_REPO) at the commit
refsim/tflite/schema.py names. None when neither is at hand (the tests then skip)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

TFLM_COMMIT = "90b983c2b3f1480642e040bbd2ddb37b998f3424"
SCHEMA_IN_TFLM = "tensorflow/compiler/mlir/lite/schema/schema.fbs"
DEFAULT_REPO = "/work/.mirror/tensorflow+tflite-micro/repo"


def schema_text() -> str | None:
    if os.environ.get("REFSIM_TFLITE_SCHEMA"):
        return Path(os.environ["REFSIM_TFLITE_SCHEMA"]).read_text()
    repo = os.environ.get("REFSIM_TFLM_REPO", DEFAULT_REPO)
    try:
        done = subprocess.run(
            ["git", "-C", repo, "show", f"{TFLM_COMMIT}:{SCHEMA_IN_TFLM}"], capture_output=True, text=True
        )
    except OSError:
        return None
    return done.stdout if done.returncode == 0 and done.stdout else None


def _strip(text: str) -> str:
    return re.sub(r"//[^\n]*", "", text)


def enums(text: str) -> dict[str, dict[str, int]]:
    """Every enum: name -> {member: value} (implicit values counted as flatc does)."""
    out = {}
    for name, body in re.findall(r"\benum\s+(\w+)\s*:\s*\w+\s*\{(.*?)\}", _strip(text), re.S):
        members, value = {}, -1
        for part in body.split(","):
            m = re.match(r"\s*(\w+)\s*(?:=\s*(-?\d+))?", part)
            if not m or not m.group(1):
                continue
            value = int(m.group(2)) if m.group(2) else value + 1
            members[m.group(1)] = value
        out[name] = members
    return out


def unions(text: str) -> dict[str, list[str]]:
    return {
        name: [p.split()[0] for p in body.split(",") if p.strip()]
        for name, body in re.findall(r"\bunion\s+(\w+)\s*\{(.*?)\}", _strip(text), re.S)
    }


def tables(text: str) -> dict[str, list[tuple[str, str, str | None]]]:
    """Every table: name -> [(field, type, default or None)] in schema order."""
    out = {}
    for name, body in re.findall(r"\btable\s+(\w+)[^{]*\{(.*?)\}", _strip(text), re.S):
        fields = []
        for decl in body.split(";"):
            m = re.match(r"\s*(\w+)\s*:\s*(\[?\w+\]?)\s*(?:=\s*([\w.\-]+))?", decl)
            if m:
                fields.append((m.group(1), m.group(2), m.group(3)))
        out[name] = fields
    return out


def slots(fields: list[tuple[str, str, str | None]], union_names: set[str]) -> dict[str, int]:
    """Field name -> vtable slot; a union field takes two: ``<name>_type``, then ``<name>``."""
    out, slot = {}, 0
    for name, type_, _ in fields:
        if type_ in union_names:
            out[f"{name}_type"] = slot
            slot += 1
        out[name] = slot
        slot += 1
    return out
