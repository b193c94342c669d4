"""Test settings: hypothesis profiles and the MTE_REQUIRE_TORCH switch.

Profiles: "ci" (default; few examples, keeps the suite fast), "dev" (more), "thorough" (many).
Pick one with HYPOTHESIS_PROFILE=dev. With MTE_REQUIRE_TORCH=1 (set by .ci/run) a test that
would be skipped because torch is missing fails instead, so reference checks cannot vanish.
"""
import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=8, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow,
                                                 HealthCheck.data_too_large])
settings.register_profile("dev", max_examples=40, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=400, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

REQUIRE_TORCH = os.environ.get("MTE_REQUIRE_TORCH") == "1"

try:  # the reference runs single-threaded: on a busy 2-core machine its thread pool stalls
    import torch as _torch
    _torch.set_num_threads(1)
except ImportError:
    pass
_TORCH_MISSING = ("torch not installed", "could not import 'torch'", "no module named 'torch'")


def _torch_missing(report):
    text = str(report.longrepr).lower()
    return any(marker in text for marker in _TORCH_MISSING)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if REQUIRE_TORCH and report.skipped and _torch_missing(report):
        report.outcome = "failed"
        report.longrepr = f"MTE_REQUIRE_TORCH=1 but the test was skipped: {report.longrepr}"


def pytest_collectreport(report):
    if REQUIRE_TORCH and report.skipped and _torch_missing(report):
        report.outcome = "failed"
