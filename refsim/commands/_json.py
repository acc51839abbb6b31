"""``--json FILE`` of the inspect, compare and eval commands: ``-`` prints the report to stdout
(and the command prints nothing else), a path gets it written; an unwritable path is one line."""

from __future__ import annotations

import json
from pathlib import Path

from refsim.errors import RefsimError


def emit_json(report: dict, json_path: Path | None) -> bool:
    """Write ``report`` as ``--json`` asks; True when it went to stdout (the caller stops there)."""
    if json_path is None:
        return False
    if str(json_path) == "-":
        print(json.dumps(report, indent=2))
        return True
    try:
        json_path.write_text(json.dumps(report, indent=2) + "\n")
    except OSError as exc:
        raise RefsimError(f"--json {json_path}: {exc.strerror or exc}") from None
    return False
