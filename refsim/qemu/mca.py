"""Time straight-line instruction blocks with llvm-mca-19, many blocks per process, cached.

    spans = block_spans("cortex-m4", [("ldr r2, [r0], #4", "smlad r4, r2, r3, r4"), ...])
    spans[0]   # (2, 1): cycles from each instruction's dispatch to the next one's, steady state

Each block becomes one llvm-mca code region (``# LLVM-MCA-BEGIN`` / ``# LLVM-MCA-END``) of one
input file; llvm-mca simulates 3 back-to-back iterations and prints its timeline, and the
*span* of instruction i is the dispatch cycle of instruction i+1 minus that of i in the second
iteration (the last instruction's span runs to the first of the third iteration): the spans add
up to the block's steady-state cycles per execution, and the TRM corrections of
refsim/qemu/timing.py replace individual spans (a load's) by the TRM's figure.

What llvm-mca cannot take: the file is first assembled with llvm-mc-19; every line it rejects
(an instruction objdump prints in a form the LLVM assembler does not accept, a conditional
instruction whose IT/VPT block began in another block) is left out of the region and reported
as *unparsed* (span None: the caller charges it the core's ALU cycles). Instructions that parse
but have no scheduling data are skipped by llvm-mca (``-skip-unsupported-instructions=lack-sched``)
and come back as None too.

Cache: ``$REFSIM_CACHE/timing/mca-<cpu>-<llvm version hash>.json``, keyed by the sha256 of the
block's text, so repeated runs of the same code never start llvm-mca.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from refsim.qemu.build import cache_root
from refsim.qemu.errors import QemuError, ToolchainMissingError

MCA = "llvm-mca-19"
MC = "llvm-mc-19"
ITERATIONS = 3

_TRIPLES = {
    "armv6-m": "thumbv6m-none-eabi",
    "armv7-m": "thumbv7m-none-eabi",
    "armv7e-m": "thumbv7em-none-eabi",
    "armv8-m.main": "thumbv8m.main-none-eabi",
    "armv8.1-m.main": "thumbv8.1m.main-none-eabi",
}

Spans = tuple[int | None, ...]


def find_tool(name: str) -> Path:
    found = shutil.which(name)
    if found is None:
        raise ToolchainMissingError(
            f"instruction-timed cycles need {name}: install the Debian package llvm-19 (apt-get install llvm-19)",
            package="llvm-19",
        )
    return Path(found)


@functools.cache
def llvm_version() -> str:
    out = subprocess.run([str(find_tool(MCA)), "--version"], capture_output=True, text=True, check=False)
    line = next((ln.strip() for ln in out.stdout.splitlines() if "version" in ln.lower()), "unknown")
    return line


def triple(arch: str) -> str:
    return _TRIPLES[arch]


def _key(cpu: str, arch: str, lines: Sequence[str]) -> str:
    digest = hashlib.sha256(f"{cpu}\0{arch}\0".encode())
    digest.update("\n".join(lines).encode())
    return digest.hexdigest()[:24]


def _cache_file(cpu: str) -> Path:
    tag = hashlib.sha256(llvm_version().encode()).hexdigest()[:8]
    return cache_root().parent / "timing" / f"mca-{cpu}-{tag}.json"


def _load_cache(path: Path) -> dict[str, list[int | None]]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _save_cache(path: Path, entries: dict[str, list[int | None]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    merged = {**_load_cache(path), **entries}
    fd, tmp = tempfile.mkstemp(prefix=".mca-", dir=path.parent)
    with os.fdopen(fd, "w") as f:
        json.dump(merged, f)
    os.replace(tmp, path)


_MC_ERROR = re.compile(r"^[^:]+:(\d+):\d+: error:", re.M)
_REGION = re.compile(r"^\[\d+\] Code Region - (b\d+)$", re.M)
_ROW = re.compile(r"^\[(\d+),(\d+)\]\s")
_IT = re.compile(r"^it[te]{0,3}$")
_MNEMONIC = re.compile(r"\s{2,}([a-z][a-z0-9.]*)(?:\t|$)")


def _rejected_lines(source: str, cpu: str, arch: str) -> set[int]:
    """1-based line numbers of ``source`` llvm-mc rejects."""
    command = [str(find_tool(MC)), f"-triple={triple(arch)}", f"-mcpu={cpu}", "-filetype=null", "-"]
    done = subprocess.run(command, input=source, capture_output=True, text=True, check=False)
    return {int(m.group(1)) for m in _MC_ERROR.finditer(done.stderr)}


def _timeline_spans(text: str, n: int) -> list[int]:
    """Spans of the ``n`` instructions of one region from its timeline view."""
    dispatch: dict[tuple[int, int], int] = {}
    for line in text.splitlines():
        row = _ROW.match(line)
        if row is None:
            continue
        column = line.find("D", 10)
        if column < 0:
            raise QemuError(f"llvm-mca: timeline row without a dispatch cycle: {line!r}")
        dispatch[(int(row.group(1)), int(row.group(2)))] = column - 10
    if len(dispatch) != ITERATIONS * n:
        raise QemuError(f"llvm-mca: timeline holds {len(dispatch)} rows, expected {ITERATIONS * n}")
    starts = [dispatch[(1, i)] for i in range(n)] + [dispatch[(2, 0)]]
    return [starts[i + 1] - starts[i] for i in range(n)]


def block_spans(cpu: str, arch: str, blocks: Sequence[Sequence[str]]) -> list[Spans]:
    """Per block, per instruction, its span in cycles (None: not timed by llvm-mca, see module
    docstring). One llvm-mc and one llvm-mca process for every block not in the cache."""
    path = _cache_file(cpu)
    cache = _load_cache(path)
    keys = [_key(cpu, arch, b) for b in blocks]
    todo = {k: b for k, b in zip(keys, blocks, strict=True) if k not in cache and len(b) > 0}
    if todo:
        cache_new = _run(cpu, arch, todo)
        _save_cache(path, cache_new)
        cache.update(cache_new)
    return [tuple(cache[k]) if len(b) else () for k, b in zip(keys, blocks, strict=True)]


def _run(cpu: str, arch: str, todo: dict[str, Sequence[str]]) -> dict[str, list[int | None]]:
    # Assemble everything once to find the lines llvm cannot parse.
    order = list(todo)
    lines: list[str] = []
    where: list[tuple[str, int]] = []  # line index -> (block key, instruction index)
    for key in order:
        for i, text in enumerate(todo[key]):
            lines.append(text)
            where.append((key, i))
    rejected = _rejected_lines("\n".join(lines) + "\n", cpu, arch)
    kept: dict[str, list[int]] = {k: [] for k in order}
    for number, (key, i) in enumerate(where, start=1):
        if number not in rejected:
            kept[key].append(i)
    regions: list[str] = []
    names: dict[str, str] = {}
    for n, key in enumerate(order):
        if not kept[key]:
            continue
        names[f"b{n}"] = key
        body = "\n".join(todo[key][i] for i in kept[key])
        regions.append(f"# LLVM-MCA-BEGIN b{n}\n{body}\n# LLVM-MCA-END\n")
    result: dict[str, list[int | None]] = {k: [None] * len(todo[k]) for k in order}
    if not regions:
        return result
    spans_by_region = _mca(cpu, arch, regions)
    if spans_by_region is None:  # llvm-mca crashed on some block: time them one by one
        spans_by_region = {}
        for region in regions:
            spans_by_region.update(_mca(cpu, arch, [region]) or {})
    for name, text in spans_by_region.items():
        key = names[name]
        timed = kept[key]
        if _count_rows(text) != len(timed):  # llvm-mca skipped instructions without scheduling data
            timed = _align(todo[key], timed, text)
        for i, span in zip(timed, _timeline_spans(text, len(timed)), strict=True):
            result[key][i] = span
    return result


def _mca(cpu: str, arch: str, regions: Sequence[str]) -> dict[str, str] | None:
    """llvm-mca's report text per region name, or None when llvm-mca failed (it crashes on a few
    encodings, e.g. LLVM 19 on ``ldr.w r6, [r0], #4`` with -mcpu=cortex-m4)."""
    command = [
        str(find_tool(MCA)),
        f"-mtriple={triple(arch)}",
        f"-mcpu={cpu}",
        f"-iterations={ITERATIONS}",
        "-timeline",
        f"-timeline-max-iterations={ITERATIONS}",
        "-timeline-max-cycles=0",
        "-instruction-info=false",
        "-resource-pressure=false",
        "-skip-unsupported-instructions=lack-sched",
        "-",
    ]
    done = subprocess.run(command, input="".join(regions), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return None
    heads = list(_REGION.finditer(done.stdout))
    if len(heads) != len(regions):
        raise QemuError(f"llvm-mca: {len(heads)} code regions in its report, {len(regions)} sent")
    out = {}
    for j, head in enumerate(heads):
        end = heads[j + 1].start() if j + 1 < len(heads) else len(done.stdout)
        out[head.group(1)] = done.stdout[head.end() : end]
    return out


def _count_rows(text: str) -> int:
    return sum(1 for line in text.splitlines() if line.startswith("[0,"))


def _first_mnemonic(row: str) -> str:
    match = _MNEMONIC.search(row)
    if match is None:
        raise QemuError(f"llvm-mca: no instruction in timeline row {row!r}")
    return match.group(1)


def _align(block: Sequence[str], timed: list[int], text: str) -> list[int]:
    """The instructions of ``timed`` llvm-mca kept when it skipped some for lack of scheduling
    data: on the M7 and M85 models the IT instructions (their conditional instructions stay);
    otherwise (FP instructions some models lack: ``vcmpe.f64`` on the M7, ``vseleq.f32`` on the
    M33) the instructions whose mnemonics match llvm-mca's timeline rows in order, the others
    left untimed (span None: unparsed)."""
    kept = [i for i in timed if not _IT.match(block[i].split()[0])]
    if len(kept) == _count_rows(text):
        return kept
    shown = [_first_mnemonic(line) for line in text.splitlines() if line.startswith("[0,")]
    matched, at = [], 0
    for i in timed:
        if at < len(shown) and block[i].split()[0] == shown[at]:
            matched.append(i)
            at += 1
    if at != len(shown):
        raise QemuError(
            f"llvm-mca skipped instructions in block {list(block)} that do not align; it timed {shown}"
        )
    return matched


__all__ = ["ITERATIONS", "block_spans", "llvm_version", "triple"]
