"""Fixtures shared by the ``tests/test_cuda_*.py`` files.

``engine`` runs a test body on the CPU emulator and, marked ``gpu``, on
cupy. Without a usable GPU the cupy case is skipped with the exact reason,
and fails instead when ``REQUIRE_GPU=1``. ``PHISPARSE_EMU_SANITIZE=1``
selects the AddressSanitizer build (see ``test_cuda_asan.py``).
``geometry`` forces launch geometries so the grid-stride loops run.
"""
import os

import numpy as np
import pytest

from cuda_emu.backend import EmuBackend
from kernels.core.xp import gpu_ready
from kernels.gpu.backend import CupyBackend

GEOMETRIES = {"default": {}, "1x1": {"grid": 1, "block": 1}, "3x5": {"grid": 3, "block": 5}}


def usable_gpu_or_skip():
    """Return normally only if a GPU is usable; skip (or fail) with the reason."""
    ok, why = gpu_ready()
    if not ok:
        if os.environ.get("REQUIRE_GPU") == "1":
            pytest.fail(f"REQUIRE_GPU=1 but {why}")
        pytest.skip(why)


@pytest.fixture(scope="module", params=["emu", pytest.param("cupy", marks=pytest.mark.gpu)])
def engine(request):
    """The launchers' execution backend: the CPU emulator, or cupy on a GPU.

    Named ``engine`` so it does not shadow the conftest's ``backend``
    fixture ('cpu'/'gpu' strings) for the rest of the suite's readers.
    """
    if request.param == "emu":
        return EmuBackend(sanitize=os.environ.get("PHISPARSE_EMU_SANITIZE") == "1")
    usable_gpu_or_skip()
    return CupyBackend()


@pytest.fixture(params=list(GEOMETRIES))
def geometry(request):
    """Launch keyword arguments: default, one thread, and 3 blocks of 5."""
    return GEOMETRIES[request.param]


def to_host(array):
    """A numpy copy of a numpy or cupy array."""
    return array.get() if hasattr(array, "get") else np.asarray(array)


def mutant(tmp_path, monkeypatch, file, good, bad):
    """The emulator on a copy of ``file`` with its text ``good`` replaced by ``bad`` (a
    planted bug), built in a cache of its own under ``tmp_path``."""
    from kernels.gpu import SOURCE_DIR
    monkeypatch.setenv("PHISPARSE_EMU_CACHE", str(tmp_path / "cache"))
    source = (SOURCE_DIR / file).read_text()
    assert good in source, f"{file} no longer holds {good!r}"
    (tmp_path / file).write_text(source.replace(good, bad))
    return EmuBackend(source_dir=tmp_path)
