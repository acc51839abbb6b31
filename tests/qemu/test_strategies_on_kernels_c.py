"""refsim.testing.strategies draws only calls the C kernels accept: hypothesis-drawn cases of every
function kernels_c runs (boundary-heavy, unlike the numpy draws of refsim conformance), through
the public functions on one core per tier, bit for bit. One example, one QEMU start per core."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from refsim.qemu import conformance as qc
from refsim.testing import strategies as rst

PER_FUNCTION = 6


@pytest.mark.parametrize("cpu", ["cortex-m3", "cortex-m4", "cortex-m55"])
@settings(max_examples=1, phases=[Phase.generate], suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_drawn_cases_pass_kernels_c(toolchain, cpu, data):
    functions = qc.kernel_functions()
    cases = [data.draw(rst.cases(f)) for f in functions for _ in range(PER_FUNCTION)]
    report = qc.run_cases(qc.resolve_target(None, cpu), cases)
    assert report.emulator_starts == 1 and not report.skipped
    assert report.failed == 0, "; ".join(f"{f.case.label}: {f.message}" for f in report.failures[:5])
    assert report.passed == PER_FUNCTION * len(functions)
