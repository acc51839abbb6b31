"""Hypothesis profiles: ``ci`` (derandomized, the default under CI=true), ``dev`` and ``thorough``.

Select with ``HYPOTHESIS_PROFILE=thorough pytest ...`` for long local campaigns.
"""

import os

import pytest
from hypothesis import HealthCheck, settings

_common = {
    "deadline": None,  # numba compiles on first call; timings are for benchmarks/, not tests
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
    "print_blob": True,
}
settings.register_profile("ci", max_examples=60, derandomize=True, **_common)
settings.register_profile("dev", max_examples=60, **_common)
settings.register_profile("thorough", max_examples=2000, **_common)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


def pytest_report_header(config):
    return f"hypothesis profile: {settings.get_current_profile_name()}"


@pytest.fixture(scope="module")
def ray_instance():
    """A local Ray instance of 2 CPUs, started for the requesting module and shut down after its
    Ray tests; skipped without Ray."""
    ray = pytest.importorskip(
        "ray", reason="Ray is the optional `cluster` extra (pip install 'refsim[cluster]')"
    )
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()
