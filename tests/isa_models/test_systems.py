"""The system presets' facts and where they come from (isa_models/cortex_m/systems.py, system_sources.py).

The numbers themselves are the sources' (see docs/cost-model.md "Memory system"); these tests
check that every fact the estimate uses is backed by a source with a status, that checked
sources carry the copy they were checked against, and that a checked source's text states the
value the table holds (a number edited without its source fails here)."""

from __future__ import annotations

import dataclasses
import re

import pytest

from isa_models.cortex_m.cores import SOURCE_STATUSES, Source
from isa_models.cortex_m.systems import FACT_FIELDS, SYSTEMS, fact_status, get_system, required_fields

NAMED = [p for p in SYSTEMS.values() if not p.name.startswith("ideal-")]
CHECKED = ("confirmed", "corrected")


@pytest.mark.parametrize("preset", NAMED, ids=lambda p: p.name)
def test_every_fact_the_estimate_uses_is_backed(preset) -> None:
    backed = {f for s in preset.sources for f in s.fields}
    assert set(required_fields(preset)) <= backed
    assert backed <= set(FACT_FIELDS) | {"tcm_wait_states"}
    for source in preset.sources:
        assert source.status in SOURCE_STATUSES
        assert source.document and source.section and source.fact
        if source.status in CHECKED:
            assert source.url.startswith("https://"), (preset.name, source.document)


@pytest.mark.parametrize("preset", NAMED, ids=lambda p: p.name)
def test_checked_sources_state_the_table_value(preset) -> None:
    for source in preset.sources:
        if source.status not in CHECKED:
            continue
        if "flash_wait_states" in source.fields:
            ws = preset.flash_wait_states
            assert re.search(rf"(?<![\d.]){ws} (WS|wait)", source.fact) or re.search(
                rf"\.\.{ws} wait", source.fact
            ), (preset.name, ws, source.fact)
        if "clock_mhz" in source.fields:
            assert f"{preset.clock_mhz:g} MHz" in source.fact, (preset.name, source.fact)


def test_clock_sources_are_checked_for_every_named_preset() -> None:
    assert {p.name: fact_status(p, "clock_mhz") for p in NAMED} == {p.name: "confirmed" for p in NAMED}


def test_fact_status_takes_the_best_backing_source() -> None:
    base = get_system("nucleo-l4r5zi")

    def with_sources(*statuses: str):
        sources = tuple(
            Source(
                "doc",
                "sec",
                "fact",
                status,
                "https://example.org" if status in CHECKED else "",
                ("clock_mhz",),
            )
            for status in statuses
        )
        return dataclasses.replace(base, sources=sources)

    assert fact_status(with_sources(), "clock_mhz") == "unverified"
    assert fact_status(with_sources("unverified"), "clock_mhz") == "unverified"
    assert fact_status(with_sources("unverified", "model"), "clock_mhz") == "model"
    assert fact_status(with_sources("model", "confirmed"), "clock_mhz") == "confirmed"
    assert fact_status(with_sources("confirmed", "corrected"), "clock_mhz") == "corrected"
    assert fact_status(with_sources("confirmed"), "flash_wait_states") == "unverified"


def test_tcm_wait_states_are_required_only_where_a_tcm_is_used() -> None:
    assert "tcm_wait_states" in required_fields(get_system("corstone-300"))
    assert "tcm_wait_states" not in required_fields(get_system("nucleo-l4r5zi"))


def test_a_checked_source_needs_its_copy_and_a_known_status() -> None:
    with pytest.raises(AssertionError, match="no url"):
        Source("doc", "sec", "fact", "confirmed")
    with pytest.raises(AssertionError):
        Source("doc", "sec", "fact", "probably")
