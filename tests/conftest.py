"""Shared fixtures: the backend fixture and the hypothesis profile; the skip summary."""
import os
from collections import Counter

import pytest
from hypothesis import HealthCheck, settings

from kernels.core.xp import gpu_ready

settings.register_profile("ci", derandomize=True, max_examples=60, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=200, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def require_gpu_or_skip():
    """Skip with the exact reason when no GPU is usable; fail instead if REQUIRE_GPU=1."""
    ok, why = gpu_ready()
    if ok:
        return
    if os.environ.get("REQUIRE_GPU") == "1":
        pytest.fail(f"REQUIRE_GPU=1 but no GPU is usable: {why}")
    pytest.skip(f"needs a CUDA GPU: {why}")


@pytest.fixture(params=["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def backend(request):
    """Run one test body on every backend; 'gpu' skips with the reason when absent."""
    if request.param == "gpu":
        require_gpu_or_skip()
    return request.param


def _skip_reason(report):
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    return reason.removeprefix("Skipped: ")


def pytest_terminal_summary(terminalreporter):
    """One line for the tests skipped for want of a GPU; one per reason for any other skip.

    pyproject's ``-r`` flags leave skips out of pytest's own summary (it
    would print one line per GPU test); this hook replaces that list.
    """
    skipped = terminalreporter.stats.get("skipped", [])
    gpu = [r for r in skipped if "gpu" in getattr(r, "keywords", ())]
    if gpu:
        why = Counter(_skip_reason(r) for r in gpu).most_common(1)[0][0]
        terminalreporter.write_line(f"{len(gpu)} tests skipped for want of a CUDA GPU ({why})")
    for reason, n in Counter(_skip_reason(r) for r in skipped if r not in gpu).items():
        terminalreporter.write_line(f"SKIPPED [{n}] {reason}")
