"""Differential loader fuzz: the same mutated .pte files through ExecuTorch's loader and refsim's.

ExecuTorch side: what ``executorch.runtime.Runtime.get().load_program(data)`` does (its
default verification, ``InternalConsistency``: the flatbuffers verifier plus
``validate_program``; then the Python `Program` decodes every method name), called on the
same ``_C._load_program_from_buffer`` entry point without importing torch, then
``load_method`` of every method of a program it accepted. It runs in a server process
(`EtLoader`): a file that crashes ExecuTorch's loader (a segfault, an abort) ends the
server, is counted, and a new server takes the next file. The server's stderr holds
ExecuTorch's log line naming the failed check.

refsim side, in this process: `Program.load` (reader + plan verifier), then ``method()`` of
every method. refsim must end every case in a load or a one-line `RefsimError`, never in
another exception (it never crashes).

A case is a `Verdict`. ``et_rejects and refsim loads`` is a disagreement, and so is refsim
rejecting a file ExecuTorch loads for a reason that is not one of `STRICTER`: the checks
refsim makes at load that ExecuTorch makes later (at ``load_method`` or while executing)
or not at all, each with its reason.

Mutations are test_hostile's (byte corruption and decode-change-rewrite), plus `vtable`:
a table's vtable size, object size or a field offset set to a value a flatbuffer trusts.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import struct
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from refsim.errors import RefsimError
from refsim.runtime import Program
from tests.runtime.test_hostile import apply_mutations, random_mutations

ROOT = Path(__file__).resolve().parents[2]
CORPUS = {
    str(p.relative_to(ROOT)): p
    for p in sorted((ROOT / "examples" / "models").glob("*.pte"))
    + sorted((ROOT / "tests" / "fixtures" / "pte").rglob("*.pte"))
}

#: Checks refsim makes at load that ExecuTorch's Program::load does not, each with why a
#: file failing it cannot run on the device either: (pattern of refsim's message, reason).
STRICTER: tuple[tuple[str, str], ...] = (
    (r"overlaps values\[", "plan verifier: live tensors share bytes (ExecuTorch never checks; garbage)"),
    (
        r"operator .* is not supported by refsim|unknown operator|Missing operator",
        "operator lookup (load_method: Missing operator)",
    ),
    (
        r"(argument|expected \d+ arguments|must be)",
        "operator argument checks (load_method: kernel lookup and the op's own checks at execute)",
    ),
    (
        r"values\[\d+\]|\.values|out of range|index",
        "value/operator index checks (load_method: parse_values / resolve_operator)",
    ),
    (
        r"sizes|dim_order|numel|bytes|arena|allocation|memory_id|non_const_buffer",
        "tensor and memory-plan checks (load_method: init_tensor / memory manager)",
    ),
    (
        r"constant|data_buffer_idx|segment|offsets",
        "constant data checks (load_method: get_constant_buffer_data)",
    ),
)


def stricter_reason(message: str) -> str | None:
    for pattern, reason in STRICTER:
        if re.search(pattern, message):
            return reason
    return None


# -- the ExecuTorch side: a loader server --------------------------------------------------------

_SERVER = r"""
import json, os, signal, sys
out = os.fdopen(os.dup(1), "w")
err_path = sys.argv[1]
fd = os.open(err_path, os.O_RDWR | os.O_CREAT | os.O_TRUNC)
os.dup2(fd, 2)  # ExecuTorch's log lines (and anything printed) go to the log file
os.dup2(fd, 1)
# executorch.runtime's Runtime.load_program, minus the torch import (a small process starts
# in a second): the same _C entry point, arguments and method-name decoding.
from executorch.extension.pybindings import _C
import resource

# A mutated arena size makes load_method allocate gigabytes, which on a shared machine
# takes seconds; under this cap the allocation fails at once (ExecuTorch then refuses the
# method: MemoryAllocationFailed) instead.
resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))


def load_program(data):
    program = _C._load_program_from_buffer(
        data,
        enable_etdump=False,
        debug_buffer_size=0,
        program_verification=_C.Verification.InternalConsistency,
        data_path=None,
    )
    names = {program.get_method_name(i) for i in range(program.num_methods())}
    return program, names


stdin = sys.stdin.buffer
out.write("ready\n"); out.flush()
while True:
    head = stdin.read(4)
    if len(head) < 4:
        break
    data = stdin.read(int.from_bytes(head, "little"))
    os.lseek(fd, 0, 0)
    os.ftruncate(fd, 0)
    signal.alarm(10)  # a hang ends the server like a crash
    res = {}
    try:
        program, names = load_program(data)
        res["load"] = "ok"
        os.write(fd, b"@@loaded\n")  # a crash from here on is load_method's
        methods = {}
        for name in sorted(names):
            try:
                program.load_method(name)
                methods[name] = "ok"
            except Exception as exc:
                methods[name] = "rejected: " + str(exc)
        res["methods"] = methods
        del program
    except Exception as exc:
        oom = isinstance(exc, MemoryError) or "bad_alloc" in str(exc)
        res["load"] = "oom" if oom else "rejected"
        res["error"] = str(exc)
    signal.alarm(0)
    os.lseek(fd, 0, 0)
    res["log"] = os.read(fd, 1 << 16).decode(errors="replace")[-4000:]
    out.write(json.dumps(res) + "\n"); out.flush()
"""


class EtLoader:
    """ExecuTorch's loader in a server process, restarted after a file crashes it.

    Files run one after another in the server (a fork per file costs ~0.1 s on a loaded
    machine); a crash (a signal, an abort, a 10 s hang) ends the server, is reported for the
    file that caused it, and a new server takes the next file."""

    def __init__(self) -> None:
        self.dir = tempfile.TemporaryDirectory(prefix="et_loader_")
        self.log_path = os.path.join(self.dir.name, "log")
        self.restarts = 0
        self._start()

    def _start(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _SERVER, self.log_path],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert self.proc.stdout is not None
        if self.proc.stdout.readline().strip() != b"ready":
            raise RuntimeError("the ExecuTorch loader server did not start")

    def check(self, data: bytes) -> dict:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            self.proc.stdin.write(struct.pack("<I", len(data)) + data)
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        except BrokenPipeError:
            line = b""
        if line:
            return json.loads(line)
        code = self.proc.wait(timeout=30)
        try:
            with open(self.log_path, errors="replace") as f:
                log = f.read()[-4000:]
        except OSError:
            log = ""
        self.restarts += 1
        self._start()
        stage = "load_method" if "@@loaded" in log else "load_program"
        return {
            "load": "crash",
            "stage": stage,
            "signal": -code if code < 0 else None,
            "exit": code,
            "log": log,
        }

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)
        self.dir.cleanup()

    def __enter__(self) -> EtLoader:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def et_reason(result: dict) -> str:
    """ExecuTorch's own words for a rejection: its last ``[file.cpp:line] message`` log line."""
    lines = [ln for ln in result.get("log", "").splitlines() if re.match(r"^\[\w+\.\w+:\d+\]", ln.strip())]
    return lines[-1].strip() if lines else result.get("error", "")


#: ExecuTorch's log lines about kernels it does not have (its wheel has no cortex_m kernels).
_MISSING_OPERATOR = re.compile(
    r"^\[operator_registry\.cpp:|Missing operator: |corresponding operator registered"
)


def et_load_method_reason(result: dict, kernels_missing: bool = True) -> str | None:
    """The check ExecuTorch's ``load_method`` failed on a program its ``load_program``
    accepted (its first log line), or None. For a program whose unmutated original already
    misses kernels in the wheel (``kernels_missing``: every cortex_m program), the lines
    about missing kernels say nothing about the mutation and are skipped."""
    methods = result.get("methods") or {}
    if result.get("load") != "ok" or not any(v != "ok" for v in methods.values()):
        return None
    for line in result.get("log", "").splitlines():
        line = line.strip()
        if re.match(r"^\[\w+\.\w+:\d+\]", line) and not (kernels_missing and _MISSING_OPERATOR.search(line)):
            return line
    return None


# -- the refsim side ----------------------------------------------------------------------------


def refsim_check(data: bytes) -> dict:
    """Program.load, then every method; the first RefsimError ends the case."""
    try:
        program = Program.load(data)
    except RefsimError as exc:
        return {"load": "rejected", "error": str(exc), "path": getattr(exc, "path", None)}
    methods = {}
    for name in program.method_names:
        try:
            program.method(name)
            methods[name] = "ok"
        except RefsimError as exc:
            methods[name] = "rejected: " + str(exc)
    return {"load": "ok", "methods": methods}


# -- mutations ----------------------------------------------------------------------------------


def _vtables(data: bytes) -> list[int]:
    """Positions of the vtables refsim's reader visits in a valid file (in schema order)."""
    from refsim.pte import _flatbuf

    seen: list[int] = []
    original = _flatbuf.Table.__init__

    def spy(self, reader, pos, path):
        original(self, reader, pos, path)
        seen.append(self.vt)

    _flatbuf.Table.__init__ = spy  # type: ignore[method-assign]
    try:
        Program.load(data)
    except RefsimError:
        pass
    finally:
        _flatbuf.Table.__init__ = original  # type: ignore[method-assign]
    return sorted(set(seen))


_VTABLE_CACHE: dict[bytes, list[int]] = {}


def mutate_vtable(data: bytes, rng: random.Random) -> bytes:
    """One vtable's size, object size or a field offset set to an interesting 16-bit value."""
    key = data[:64] + len(data).to_bytes(8, "little")
    vts = _VTABLE_CACHE.get(key)
    if vts is None:
        vts = _VTABLE_CACHE[key] = _vtables(data)
    if not vts:
        return data
    vt = rng.choice(vts)
    (vsize,) = struct.unpack_from("<H", data, vt)
    slot = rng.randrange(max(2, vsize // 2))  # 0: vtable size, 1: object size, 2..: fields
    value = rng.choice((0, 1, 2, 3, 4, 5, 6, 8, 0xFFFF, 0x8000, rng.getrandbits(16), vsize + 2, vsize - 2))
    buf = bytearray(data)
    struct.pack_into("<H", buf, vt + 2 * slot, value & 0xFFFF)
    return bytes(buf)


def mutant(original: bytes, rng: random.Random) -> bytes:
    """test_hostile's 1-4 byte/semantic mutations, or (one case in four) a vtable mutation."""
    if rng.random() < 0.25:
        return mutate_vtable(original, rng)
    return apply_mutations(original, random_mutations(rng))


# -- the campaign -------------------------------------------------------------------------------


@dataclass
class Verdict:
    program: str
    seed: int
    et: dict
    refsim: dict
    #: ExecuTorch's wheel lacks kernels of the unmutated program (cortex_m ops).
    kernels_missing: bool = True

    @property
    def et_rejects(self) -> bool:
        return self.et["load"] == "rejected"

    @property
    def et_crashes(self) -> bool:
        return self.et["load"] == "crash"

    @property
    def refsim_rejects(self) -> bool:
        return self.refsim["load"] == "rejected"

    @property
    def kind(self) -> str:
        if self.refsim["load"] == "crash":
            return "refsim crash"
        if self.et["load"] == "oom":
            return "et out of memory under its 3 GiB cap (refsim " + (
                "rejects)" if self.refsim_rejects else "loads)"
            )
        if self.et["load"] == "crash":
            return f"et {self.et['stage']} crash (refsim " + ("rejects)" if self.refsim_rejects else "loads)")
        if self.et_rejects:
            return "both reject" if self.refsim_rejects else "DISAGREE: et rejects, refsim loads"
        if self.refsim_rejects:
            later = et_load_method_reason(self.et, self.kernels_missing)
            if later:
                return "refsim stricter: ExecuTorch rejects at load_method"
            reason = stricter_reason(self.refsim["error"])
            return (
                "refsim stricter: " + reason if reason else "DISAGREE: refsim rejects for an unnamed reason"
            )
        return "both load"


@dataclass
class Campaign:
    verdicts: list[Verdict] = field(default_factory=list)

    def counts(self) -> Counter:
        return Counter(v.kind for v in self.verdicts)

    def disagreements(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.kind.startswith("DISAGREE") or v.kind == "refsim crash"]

    def summary(self) -> dict:
        c = self.counts()
        return {
            "cases": len(self.verdicts),
            "et_rejects": sum(v.et_rejects for v in self.verdicts),
            "et_load_crashes": sum(v.et.get("stage") == "load_program" for v in self.verdicts),
            "et_out_of_memory": sum(v.et["load"] == "oom" for v in self.verdicts),
            "et_load_method_crashes": sum(v.et.get("stage") == "load_method" for v in self.verdicts),
            "refsim_rejects": sum(v.refsim_rejects for v in self.verdicts),
            "disagreements": len(self.disagreements()),
            "outcomes": dict(sorted(c.items())),
        }


def _refsim_safe(data: bytes) -> dict:
    try:
        return refsim_check(data)
    except Exception as exc:  # refsim must never get here: counted as a crash
        return {"load": "crash", "error": f"{type(exc).__name__}: {exc}"}


def run_campaign(cases: int, seed: int = 0, corpus: dict[str, Path] | None = None) -> Campaign:
    """``cases`` mutants, spread round-robin over ``corpus`` (default: every bundled and
    fixture program), each through both loaders."""
    import warnings

    corpus = corpus or CORPUS
    originals = {name: path.read_bytes() for name, path in corpus.items()}
    names = sorted(originals)
    campaign = Campaign()
    with EtLoader() as et, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # LayoutWarnings and numpy's on corrupt values
        runs = {name: et.check(data) for name, data in originals.items()}
        missing = {
            name: any(v != "ok" for v in (r.get("methods") or {}).values()) for name, r in runs.items()
        }
        old = signal.signal(signal.SIGPIPE, signal.SIG_DFL) if hasattr(signal, "SIGPIPE") else None
        try:
            for k in range(cases):
                name = names[k % len(names)]
                case_seed = seed * 1_000_003 + k
                data = mutant(originals[name], random.Random(case_seed))
                verdict = Verdict(name, case_seed, et.check(data), _refsim_safe(data), missing[name])
                campaign.verdicts.append(verdict)
        finally:
            if old is not None:
                signal.signal(signal.SIGPIPE, old)
    return campaign


def reproduce(name: str, case_seed: int) -> bytes:
    """The mutant of one verdict, for debugging: ``reproduce(v.program, v.seed)``."""
    return mutant(CORPUS[name].read_bytes(), random.Random(case_seed))


if __name__ == "__main__":  # a quick look: python -m tests.interop.loader_differential 300
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    result = run_campaign(n, seed=int(sys.argv[2]) if len(sys.argv) > 2 else 0)
    print(json.dumps(result.summary(), indent=2))
    for v in result.disagreements()[:30]:
        print(
            v.program, v.seed, v.kind, "| et:", et_reason(v.et), "| refsim:", v.refsim.get("error", "")[:200]
        )
    later = Counter(
        re.sub(r"\d+", "N", et_load_method_reason(v.et) or "")[:90]
        for v in result.verdicts
        if v.kind.endswith("at load_method")
    )
    print(json.dumps(later.most_common(40), indent=1))
