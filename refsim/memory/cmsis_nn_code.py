"""CMSIS-NN's code per function, core and build profile: the real library, as each runtime builds it.

Data: ``cmsis_nn_code.json`` (refsim/lab/cmsis_nn_code.py, provenance inside): per profile
(``executorch``: CMSIS-NN at ExecuTorch's pin built by CMSIS-NN's CMake with ExecuTorch's
toolchain flags, -Ofast; ``tflm``: CMSIS-NN at TFLM's pin with TFLM's Makefile flags, -O2) and
core, every flash section of the library (a function, a table) with its bytes and the sections it
references. A runtime's CMSIS-NN code for the functions it calls is the closure over those
references: what ``--gc-sections`` keeps.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path

from refsim.errors import RefsimError, UnsupportedError

DATA = Path(__file__).with_name("cmsis_nn_code.json")


class CmsisNnCodeError(RefsimError):
    """cmsis_nn_code.json is missing or lacks a profile/core/function."""


@functools.cache
def _data(path: Path = DATA) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise CmsisNnCodeError(f"CMSIS-NN code: cannot read {path}: {exc}") from exc


@dataclass(frozen=True)
class LibraryCode:
    """One profile's library on one core."""

    profile: str
    core: str
    built_as: str
    functions: dict[str, int]
    calls: dict[str, list[str]]
    source: str

    def closure(self, entries: list[str]) -> set[str]:
        missing = [e for e in entries if e not in self.functions]
        if missing:
            raise CmsisNnCodeError(
                f"CMSIS-NN code: {', '.join(missing)} not defined by the {self.profile} build ({DATA.name})"
            )
        seen: set[str] = set()
        todo = list(entries)
        while todo:
            f = todo.pop()
            if f in seen:
                continue
            seen.add(f)
            todo.extend(self.calls.get(f, ()))
        return seen

    def bytes_of(self, names: set[str]) -> int:
        return sum(self.functions[n] for n in names)


def library_code(profile: str, core: str) -> LibraryCode:
    profiles = _data()["profiles"]
    if profile not in profiles:
        raise CmsisNnCodeError(f"CMSIS-NN code: no profile {profile!r} in {DATA.name}")
    p = profiles[profile]
    built = p.get("same_build_as", {}).get(core, core)
    if built not in p["cores"]:
        raise UnsupportedError(
            f"CMSIS-NN code: the {profile} build is measured for {', '.join(p['cores'])}, not {core} ({DATA.name})"
        )
    entry = p["cores"][built]
    rev = p["cmsis_nn"].split(" ")
    where = f"CMSIS-NN {rev[1][:8] if len(rev) > 1 else rev[0]} built as {profile} builds it ({p['optimization']})"
    target = core if built == core else f"{core} (built as {built})"
    source = f"{where} for {target}, {_data()['provenance']['compiler'].split(' ')[-2]}; {DATA.name}"
    return LibraryCode(profile, core, built, entry["functions"], entry["calls"], source)
