"""Running refsim's CLI in-process from a test, and the one-line-error contract every command keeps
(bad input: exit 2 and exactly one ``refsim: error: ...`` line)."""

from __future__ import annotations

from refsim.cli import main


def refsim(capsys, *argv) -> tuple[int, str, str]:
    """``refsim ARGV...`` in this process: (exit code, stdout, stderr)."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_error_line(result: tuple[int, str, str], *fragments: str) -> None:
    code, _, err = result
    lines = err.splitlines()
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith("refsim: error: "), err
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
