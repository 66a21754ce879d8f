"""Shared fixtures: the backend fixture and the hypothesis profile."""
import os

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
