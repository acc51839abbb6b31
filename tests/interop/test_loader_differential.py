"""refsim's loader is never more lenient than ExecuTorch's: a differential fuzz.

The same mutants of every bundled and fixture program (tests/interop/loader_differential.py)
go through ``executorch.runtime``'s ``load_program`` (in a fork server: a file may crash it)
and through refsim's ``Program.load``. Every file ExecuTorch refuses, refsim refuses with
a one-line `RefsimError` naming the field; where refsim refuses a file ExecuTorch loads,
the reason is ExecuTorch's own ``load_method`` rejection or one of the named checks in
`STRICTER`. ExecuTorch's crashes are counted, not failures (refsim must not crash).
benchmarks/loader_differential.py runs a bigger campaign and saves JSON.
"""

from __future__ import annotations

import pytest

pytest.importorskip("executorch.runtime", reason="needs ExecuTorch 1.5.1 (.venv-interop)")

from tests.interop.loader_differential import (
    CORPUS,
    EtLoader,
    et_reason,
    refsim_check,
    run_campaign,
)

#: ~1-2 minutes on a loaded 2-core machine (mutation and refsim dominate).
CI_CASES = 2500


@pytest.fixture(scope="module")
def campaign():
    return run_campaign(CI_CASES, seed=0)


def test_every_file_executorch_refuses_refsim_refuses(campaign):
    missed = [v for v in campaign.verdicts if v.et_rejects and not v.refsim_rejects]
    assert not missed, [(v.program, v.seed, et_reason(v.et)) for v in missed[:10]]
    print("\n", campaign.summary())


def test_refsim_is_stricter_only_for_named_reasons(campaign):
    unnamed = [v for v in campaign.verdicts if v.kind.startswith("DISAGREE: refsim")]
    assert not unnamed, [(v.program, v.seed, v.refsim["error"]) for v in unnamed[:10]]


def test_refsim_never_crashes_and_its_errors_are_one_line(campaign):
    crashes = [v for v in campaign.verdicts if v.refsim["load"] == "crash"]
    assert not crashes, [(v.program, v.seed, v.refsim["error"]) for v in crashes[:5]]
    for v in campaign.verdicts:
        if v.refsim_rejects:
            assert "\n" not in v.refsim["error"], v.refsim["error"]


def test_the_campaign_exercises_both_loaders(campaign):
    """Guards the harness itself: a campaign where one side rejected everything (or nothing)
    would prove nothing."""
    s = campaign.summary()
    assert s["cases"] == CI_CASES
    assert 0.2 * CI_CASES < s["et_rejects"] < 0.8 * CI_CASES
    assert sum(not v.et_rejects and not v.refsim_rejects for v in campaign.verdicts) > 0.1 * CI_CASES


def test_untouched_programs_load_in_both():
    with EtLoader() as et:
        for name, path in sorted(CORPUS.items()):
            data = path.read_bytes()
            result = et.check(data)
            assert result["load"] == "ok", (name, et_reason(result))
            assert refsim_check(data)["load"] == "ok", name
