"""`make test`'s closing lines: each suite's pytest summary again, and their sum.

    python tests/summary.py main=build/test-main.log interop=build/test-interop.log

Prints one line per suite (its pytest closing line, or "no pytest summary" when the suite did
not get as far as pytest: a lint or set-up failure) and a last ``total: N passed, N failed``
line; exits 1 if a suite has failures, errors or no summary.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

#: pytest's closing line: "=== 12 passed, 1 skipped in 3.2s ===" or, with -q, without the rules.
SUMMARY = re.compile(r"^=*\s*((?:\d+ \w+(?:, )?)+|no tests ran) in [\d.]+s")
COUNT = re.compile(r"(\d+) (\w+)")


def summary(log: Path) -> dict[str, int] | None:
    """The counts of the last pytest closing line in ``log`` (None if there is none)."""
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        match = SUMMARY.match(line.strip())
        if match:
            return {word: int(n) for n, word in COUNT.findall(match.group(1))}
    return None


def main(argv: list[str]) -> int:
    total: dict[str, int] = {}
    ok = True
    for arg in argv:
        name, _, path = arg.partition("=")
        counts = summary(Path(path))
        if counts is None:
            print(f"{name} suite: no pytest summary (it stopped before pytest ran; see {path})")
            ok = False
            continue
        if not counts:
            print(f"{name} suite: no tests ran")
            ok = False
            continue
        print(f"{name} suite: " + ", ".join(f"{n} {w}" for w, n in counts.items()))
        ok &= not (counts.get("failed") or counts.get("errors") or counts.get("error"))
        for word, n in counts.items():
            word = "errors" if word == "error" else word
            total[word] = total.get(word, 0) + n
    rest = "".join(f", {total[w]} {w}" for w in ("skipped", "xfailed", "xpassed", "errors") if total.get(w))
    print(f"total: {total.get('passed', 0)} passed, {total.get('failed', 0)} failed{rest}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
