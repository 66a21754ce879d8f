"""Backends the runner times on: numpy on 'cpu', cupy on 'gpu'.

A backend bundles the array namespace, a host-to-device copy and ``sync``,
which waits for queued device work.  Timings bracket every call with ``sync``
so that an asynchronous device is timed to completion.  Setting
``PHISPARSE_BENCH_FAKE_GPU=1`` makes 'gpu' a numpy backend whose ``sync`` only
counts, so the device path runs (and is tested) on a machine without a GPU.
"""
import os

import numpy as np

FAKE_GPU_ENV = "PHISPARSE_BENCH_FAKE_GPU"


class Backend:
    """An array namespace with a device barrier.

    Parameters
    ----------
    name : {'cpu', 'gpu'}
    xp : module
        numpy or cupy.
    barrier : callable
        Waits until queued device work is done.
    """

    def __init__(self, name, xp, barrier):
        self.name = name
        self.xp = xp
        self.syncs = 0
        self._barrier = barrier

    def sync(self):
        """Wait for queued device work; count the call."""
        self.syncs += 1
        self._barrier()

    def asarray(self, a):
        """``a`` (a numpy array) on this backend."""
        return self.xp.asarray(a)


def _noop():
    return None


def fake_gpu():
    """True when 'gpu' is the counting numpy stand-in."""
    return os.environ.get(FAKE_GPU_ENV) == "1"


def gpu_status():
    """(True, '') if a GPU backend can be made here, else (False, reason)."""
    if fake_gpu():
        return True, ""
    try:
        import cupy
    except ImportError:
        return False, "cupy is not installed"
    try:
        ok = bool(cupy.is_available())
    except Exception as exc:  # noqa: BLE001 (a broken driver is a reason, not a crash)
        return False, f"cupy cannot reach CUDA: {exc}"
    return (True, "") if ok else (False, "cupy sees no CUDA GPU")


def get_backend(name):
    """The :class:`Backend` called ``name``; RuntimeError if it cannot be made."""
    if name == "cpu":
        return Backend("cpu", np, _noop)
    if name != "gpu":
        raise ValueError(f"bench: unknown backend {name!r}; expected 'cpu' or 'gpu'")
    ok, why = gpu_status()
    if not ok:
        raise RuntimeError(f"bench: no gpu backend: {why}")
    if fake_gpu():
        return Backend("gpu", np, _noop)
    import cupy
    return Backend("gpu", cupy, lambda: cupy.cuda.Device().synchronize())
