"""Reading, writing, checking and generating conformance vector directories.

Format (shared VECTORS.md, docs/conformance.md): ``DIR/<function>/<id>.npz``, each holding
the function's arrays in CMSIS-NN layouts, ``output`` (the expected result) and ``params``
(a 0-d unicode array with a JSON object of flattened CMSIS-NN field names). Loading never
unpickles; every malformation is a one-line :class:`~refsim.errors.VectorError`.
"""

from __future__ import annotations

import json
import re
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kernels_py.errors import KernelError
from refsim.conformance import registry
from refsim.errors import RefsimError, VectorError

_ID = re.compile(r"^[A-Za-z0-9_-]+$")


@dataclass
class Case:
    """One vector: the function it calls, its arrays, params and expected output."""

    function: str
    case_id: str
    arrays: dict[str, np.ndarray]
    params: dict[str, Any]
    output: np.ndarray
    path: Path | None = None

    @property
    def label(self) -> str:
        return f"{self.function}/{self.case_id}"

    def __repr__(self) -> str:
        # Short: hypothesis prints a failing example's cases, whose arrays can be kilobytes.
        shapes = ", ".join(f"{name}{list(a.shape)}" for name, a in self.arrays.items())
        return f"Case({self.label}: {shapes} -> output{list(np.shape(self.output))})"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """The same for hypothesis' and IPython's pretty printers (which list a dataclass's fields)."""
        printer.text(repr(self))


@dataclass
class CaseResult:
    case: Case
    passed: bool
    message: str = ""


@dataclass
class Summary:
    results: list[CaseResult] = field(default_factory=list)

    @property
    def passed(self) -> int:
        return sum(r.passed for r in self.results)

    @property
    def failed(self) -> int:
        return len(self.results) - self.passed

    def closing_line(self) -> str:
        return f"{self.passed} passed, {self.failed} failed"


def read_case(path: Path) -> Case:
    """Load one ``.npz`` vector, validating the container and the ``params`` object."""
    function, case_id = path.parent.name, path.stem
    if not _ID.match(case_id):
        raise VectorError(f"{path}: case id {case_id!r} must match [A-Za-z0-9_-]+")
    try:
        with np.load(path, allow_pickle=False) as z:
            contents = {k: z[k] for k in z.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise VectorError(f"{path}: not a readable numpy .npz file ({exc})") from None
    if "output" not in contents:
        raise VectorError(f"{path}: missing the expected 'output' array")
    if "params" not in contents:
        raise VectorError(f"{path}: missing 'params' (a 0-d string array holding JSON)")
    raw = contents.pop("params")
    if raw.shape != () or raw.dtype.kind != "U":
        raise VectorError(f"{path}: 'params' must be a 0-d unicode array, got {raw.dtype} {raw.shape}")
    try:
        params = json.loads(str(raw))
    except json.JSONDecodeError as exc:
        raise VectorError(f"{path}: 'params' is not valid JSON ({exc.msg} at {exc.pos})") from None
    if not isinstance(params, dict):
        raise VectorError(f"{path}: 'params' must be a JSON object")
    if params.get("function") != function:
        raise VectorError(
            f"{path}: params.function is {params.get('function')!r} but the directory says {function!r}"
        )
    output = contents.pop("output")
    return Case(function, case_id, contents, params, output, path)


def iter_directory(root: Path) -> Iterator[Case]:
    """Every case under ``root``, functions and ids in sorted order."""
    if not root.exists():
        raise VectorError(f"{root}: vector directory does not exist")
    if not root.is_dir():
        raise VectorError(f"{root}: not a directory")
    function_dirs = sorted(p for p in root.iterdir() if not p.name.startswith("."))
    if not function_dirs:
        raise VectorError(f"{root}: no function directories (expected <function>/<id>.npz)")
    known = registry.functions()
    for fdir in function_dirs:
        if not fdir.is_dir():
            raise VectorError(f"{fdir}: expected a directory named after a CMSIS-NN function")
        if fdir.name not in known:
            raise VectorError(f"{fdir}: unknown function {fdir.name!r} (see `refsim conformance --list`)")
        files = sorted(fdir.iterdir())
        for f in files:
            if f.suffix != ".npz":
                raise VectorError(f"{f}: unexpected file (cases are <id>.npz)")
            yield read_case(f)


def compare(expected: np.ndarray, actual: np.ndarray) -> str:
    """Empty when equal; otherwise a one-line description of the first difference."""
    if expected.dtype != actual.dtype:
        return f"dtype: expected {expected.dtype}, got {actual.dtype}"
    if expected.shape != actual.shape:
        return f"shape: expected {expected.shape}, got {actual.shape}"
    if expected.dtype.kind == "f":
        differ = ~((expected == actual) | (np.isnan(expected) & np.isnan(actual)))
    else:
        differ = expected != actual
    if not differ.any():
        return ""
    flat = int(np.flatnonzero(differ)[0])
    index = tuple(int(i) for i in np.unravel_index(flat, expected.shape))
    return (
        f"first mismatch at index {index} (flat {flat}): expected {expected.flat[flat]}, "
        f"got {actual.flat[flat]} ({int(differ.sum())} of {differ.size} differ)"
    )


def run_case(case: Case) -> np.ndarray:
    function = registry.get(case.function)
    try:
        return np.asarray(function.run(case.arrays, case.params))
    except KernelError as exc:
        raise VectorError(f"{case.label}: {exc}") from None


def check_case(case: Case) -> CaseResult:
    """Run the golden model on a case and compare bit for bit."""
    try:
        actual = run_case(case)
    except RefsimError as exc:
        return CaseResult(case, False, str(exc))
    diff = compare(case.output, actual)
    return CaseResult(case, not diff, diff)


def write_case(root: Path, case: Case) -> Path:
    """Write a case as ``root/<function>/<id>.npz`` (no pickled objects)."""
    if not _ID.match(case.case_id):
        raise VectorError(f"case id {case.case_id!r} must match [A-Za-z0-9_-]+")
    reserved = {"output", "params"} & set(case.arrays)
    if reserved:
        raise VectorError(f"{case.label}: array names {sorted(reserved)} are reserved")
    params = dict(case.params, function=case.function)
    out = root / case.function / f"{case.case_id}.npz"
    out.parent.mkdir(parents=True, exist_ok=True)
    np.savez(
        out,
        allow_pickle=False,
        params=np.array(json.dumps(params, sort_keys=True)),
        output=np.ascontiguousarray(case.output),
        **{k: np.ascontiguousarray(v) for k, v in case.arrays.items()},
    )
    return out


def generate_cases(function: str, count: int, seed: int, *, start: int = 0) -> Iterator[Case]:
    """``count`` random cases of ``function``, computed by the golden model: cases ``start`` to
    ``start + count - 1``.

    Case ``i`` uses ``np.random.default_rng([seed, i])``, so any case can be regenerated
    alone from its ``seed`` and ``index`` params (and a campaign sharded by index ranges).
    """
    fn = registry.get(function)
    for i in range(start, start + count):
        rng = np.random.default_rng([seed, i])
        arrays, params = fn.generate(rng)
        params = dict(params, function=function, seed=seed, index=i)
        output = np.asarray(fn.run(arrays, params))
        yield Case(function, f"{seed}_{i:05d}", arrays, params, output)


def resolve_functions(names: list[str] | None) -> list[str]:
    """CMSIS-NN function names from ``--kernel`` values: function names, family names or ``all``."""
    known = registry.functions()
    if not names or names == ["all"]:
        return list(known)
    chosen: list[str] = []
    for name in names:
        if name in known:
            chosen.append(name)
        elif any(f.family == name for f in known.values()):
            chosen.extend(n for n, f in known.items() if f.family == name)
        else:
            families = sorted({f.family for f in known.values()})
            raise VectorError(
                f"--kernel {name!r} is neither a known function nor a family ({', '.join(families)}); "
                "see `refsim conformance --list`"
            )
    return list(dict.fromkeys(chosen))
