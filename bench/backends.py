"""Backends the runner times on: numpy on 'cpu', cupy on 'gpu'.

A backend bundles the array namespace, a host-to-device copy, ``sync``, which
waits for queued device work, and ``timer``, the clock a timed call is read
with.  On 'cpu' the clock is the host's ``perf_counter`` after a ``sync``.  On
a real GPU it is a pair of CUDA events recorded on cupy's current stream
before and after the call, read once the second one has completed
(``cupy.cuda.get_elapsed_time``): the device's time between the two events,
which leaves out the barrier's own wait but keeps any gap the host leaves
between its launches (a library's Python overhead).  cupy's current stream is the null stream
unless a peer changes it, and torch queues its kernels on the legacy default
stream, which is the same null stream, so the events order with cupy's and
torch's work alike.  Setting ``PHISPARSE_BENCH_FAKE_GPU=1`` makes 'gpu' a numpy
backend whose ``sync`` only counts and whose clock is ``perf_counter``, so the
device path runs (and is tested) on a machine without a GPU.
"""
import os
import time

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
    events : module, optional
        ``cupy.cuda`` (or a stand-in with ``Event()`` and
        ``get_elapsed_time(start, end)`` in ms): time calls with its events
        instead of ``perf_counter``.
    """

    def __init__(self, name, xp, barrier, events=None):
        self.name = name
        self.xp = xp
        self.syncs = 0
        self._barrier = barrier
        self._events = events

    @property
    def clock(self):
        """The clock :meth:`timer` reads: 'cuda events' or 'perf_counter'."""
        return "perf_counter" if self._events is None else "cuda events"

    def sync(self):
        """Wait for queued device work; count the call."""
        self.syncs += 1
        self._barrier()

    def timer(self):
        """A (start, stop) pair timing what runs between them.

        ``start()`` waits for queued work (:meth:`sync`) and starts the clock;
        ``stop()`` returns the seconds since, once the work queued in between is
        done (a :meth:`sync` on the host clock, the end event's completion with
        CUDA events; both count as a sync).
        """
        if self._events is None:
            return self._host_timer()
        return self._event_timer()

    def _host_timer(self):
        t0 = []

        def start():
            self.sync()
            t0.append(time.perf_counter())

        def stop():
            self.sync()
            return time.perf_counter() - t0[0]
        return start, stop

    def _event_timer(self):
        ev = self._events
        begin, end = ev.Event(), ev.Event()

        def start():
            self.sync()
            begin.record()

        def stop():
            end.record()
            end.synchronize()
            self.syncs += 1
            return ev.get_elapsed_time(begin, end) / 1e3
        return start, stop

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
    return Backend("gpu", cupy, lambda: cupy.cuda.Device().synchronize(), events=cupy.cuda)
