"""Split large numpy work over threads: copyto, add.reduce and matmul release the GIL.

``PHISPARSE_NUM_THREADS`` sets the thread count (1 turns threading off); the
default (also ``auto``) is the number of CPUs this process may run on;
anything else is a ValueError naming the variable.  The variable is read
once, at the first call that needs it; :func:`set_num_threads` changes the
count at run time.  One pool of that many threads minus one serves every call.
"""
import functools
import glob
import itertools
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..core.env import checked_count, env_count, previous_value

#: Below this many bytes per thread, splitting costs more than it saves.
MIN_BYTES_PER_THREAD = 4 << 20
#: Threaded work is cut into up to this many pieces per thread ...
PIECES_PER_THREAD = 4
#: ... of at least this many bytes each.
MIN_BYTES_PER_PIECE = 1 << 20

_POOL = []
_BLAS = []
_LOCK = threading.Lock()
#: The thread count in force; None until first read from the environment.
_num_threads = None


def _from_environment():
    return env_count("PHISPARSE_NUM_THREADS", _usable_cpus, minimum=1, auto=True)


def _usable_cpus():
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
        else os.cpu_count() or 1


@functools.lru_cache(maxsize=None)
def last_level_cache_bytes(default=32 << 20):
    """The size of the CPU's largest cache, from Linux's sysfs (cpu0), else ``default``.

    Examples
    --------
    >>> last_level_cache_bytes() > 0
    True
    """
    best = 0
    for d in glob.glob("/sys/devices/system/cpu/cpu0/cache/index*/size"):
        try:
            with open(d) as f:
                text = f.read().strip().upper()
        except OSError:
            continue
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
        digits = text.rstrip("KMG")
        if digits.isdigit():
            best = max(best, int(digits) * scale)
    return best or default


def num_threads():
    """Threads a kernel may use: ``PHISPARSE_NUM_THREADS`` or the usable CPUs, read once."""
    global _num_threads
    if _num_threads is None:
        _num_threads = _from_environment()
    return _num_threads


def set_num_threads(n: int | None = None) -> int | None:
    """Use ``n`` threads from now on (1 turns threading off); None reads
    ``PHISPARSE_NUM_THREADS`` (or the CPU count) again.  Returns the previous count
    (None where the variable holds a bad value that ``n`` now overrides).
    ``n`` must be an int (TypeError) of at least 1 (ValueError).

    Examples
    --------
    >>> old = set_num_threads(1)
    >>> num_threads()
    1
    >>> _ = set_num_threads(old)
    """
    global _num_threads
    n = None if n is None else checked_count("set_num_threads", "n", n, 1)
    old = previous_value(num_threads, n)
    _num_threads = _from_environment() if n is None else n
    return old


def split_index(shape, nbytes, candidates=None, per_thread=None):
    """Index tuples cutting ``shape`` into pieces of work for the threads.

    The cut runs along the first of ``candidates`` (default: every axis) long
    enough for the pieces, preferring one twice that long.  Threaded work is
    cut into up to :data:`PIECES_PER_THREAD` pieces per thread of at least
    :data:`MIN_BYTES_PER_PIECE` each, so that a thread the machine does not
    run right away leaves its share to the others (see :func:`run_parallel`).
    Work under :data:`MIN_BYTES_PER_THREAD` (or ``per_thread``) bytes per thread
    stays whole: ``[()]``.

    Examples
    --------
    >>> split_index((8, 8), 256)
    [()]
    >>> n = len(split_index((1, 4096), 1 << 30, candidates=[1]))
    >>> n == (1 if num_threads() == 1 else PIECES_PER_THREAD * min(num_threads(), 256))
    True
    """
    threads, parts = _counts(nbytes, per_thread)
    axes = range(len(shape)) if candidates is None else candidates
    for want in (2 * parts, parts):
        for axis in axes:
            n = shape[axis]
            if threads > 1 and n >= want:
                lead = (slice(None),) * axis
                return [lead + (slice(n * k // parts, n * (k + 1) // parts),)
                        for k in range(parts)]
    return [()]


def _counts(nbytes, per_thread=None):
    """Threads worth using on ``nbytes`` of work, and the pieces to cut it into."""
    threads = min(num_threads(), nbytes // (per_thread or MIN_BYTES_PER_THREAD))
    return threads, max(threads, min(PIECES_PER_THREAD * threads, nbytes // MIN_BYTES_PER_PIECE))


def block_count(nbytes, per_thread=None, at_least=1):
    """How many blocks :func:`balanced_cuts` cuts ``nbytes`` of work into (1: it stays
    whole), so that a caller can skip preparing the cumulative counts of a small job.

    Examples
    --------
    >>> block_count(256), block_count(256, at_least=16)
    (1, 1)
    """
    threads, parts = _counts(nbytes, per_thread)
    if threads < 2:
        parts = 1
    return max(parts, min(at_least, nbytes // MIN_BYTES_PER_PIECE))


def balanced_cuts(cum, nbytes, per_thread=None, at_least=1):
    """Boundaries ``[0, ..., n]`` cutting ``n`` rows into blocks of about equal work.

    ``cum`` holds the work before each row and the total (``n + 1``
    non-decreasing counts from 0, a CSR's row pointers); ``nbytes`` is the
    bytes the whole work moves, which sets the number of blocks as in
    :func:`split_index`: one block (``[0, n]``) below ``per_thread`` (default
    :data:`MIN_BYTES_PER_THREAD`) bytes per thread.  ``at_least`` asks for that
    many blocks on any number of threads, each of :data:`MIN_BYTES_PER_PIECE`
    or more (a caller whose blocks may take different paths).

    Examples
    --------
    >>> balanced_cuts(np.array([0, 5, 10]), 256)
    [0, 2]
    >>> cuts = balanced_cuts(np.arange(0, 801, 100), 1 << 30)
    >>> cuts == ([0, 8] if num_threads() == 1 else [0, 1, 2, 3, 4, 5, 6, 7, 8])
    True
    """
    n = cum.shape[0] - 1
    parts = block_count(nbytes, per_thread, at_least)
    if parts < 2 or n < 2:
        return [0, n]
    cuts = np.searchsorted(cum, np.linspace(0, int(cum[-1]), parts + 1)[1:-1])
    return [0, *sorted(set(cuts.tolist()) - {0, n}), n]


def run_parallel(fn, pieces):
    """Call ``fn(piece)`` for every piece, on up to ``num_threads()`` threads.

    The caller and the workers take the next piece from a shared counter, and
    the caller waits only for pieces a thread has started: a worker that a
    busy machine has not scheduled yet finds nothing left when it runs,
    instead of holding the call up (threads never make a call slower than one
    thread).  The first exception raised by a piece is re-raised.  ``fn``
    must not call ``run_parallel`` itself.
    """
    workers = min(len(pieces), num_threads()) - 1
    if workers < 1:
        for piece in pieces:
            fn(piece)
        return
    work = _Work(fn, pieces)
    pool = _pool(workers)
    for _ in range(workers):
        pool.submit(work.drain)
    work.drain()
    work.wait()


class _Work:
    """Pieces handed out by a shared counter, and how many are still running."""

    def __init__(self, fn, pieces):
        self.fn, self.pieces = fn, pieces
        self.ticket = itertools.count()          # next() is atomic under the GIL
        self.left = len(pieces)
        self.done = threading.Condition()
        self.error = None

    def drain(self):
        while (i := next(self.ticket)) < len(self.pieces):
            try:
                self.fn(self.pieces[i])
            except BaseException as exc:         # noqa: BLE001 (re-raised by wait)
                self.error = self.error or exc
            with self.done:
                self.left -= 1
                if self.left == 0:
                    self.done.notify_all()

    def wait(self):
        with self.done:
            while self.left:
                self.done.wait()
        if self.error is not None:
            raise self.error


def _pool(workers):
    """The one worker pool: ``num_threads() - 1`` threads (at least ``workers``).

    A larger thread count (:func:`set_num_threads`) replaces it; the old
    pool's threads exit once the calls still using it drop it (CPython's
    executor stops its workers when it is garbage-collected), so no call
    races a shutdown and the live threads stay bounded.
    """
    with _LOCK:
        if not _POOL or _POOL[0]._max_workers < workers:
            _POOL[:] = [ThreadPoolExecutor(max(workers, num_threads() - 1), "phisparse")]
        return _POOL[0]


def _blas_controller():
    if not _BLAS:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:
            _BLAS.append(None)
        else:
            _BLAS.append(ThreadpoolController())
    return _BLAS[0]


def can_limit_blas():
    """True if :func:`single_threaded_blas` works here: threadpoolctl is installed and
    this is the main thread.

    OpenBLAS (0.3.31 measured) ignores a call that raises its thread count
    from any other thread, so a limit set and undone on a worker thread (a
    backward pass run on threads) would leave BLAS at one thread for the
    whole process; kernels on other threads take their non-BLAS path instead.
    """
    return (threading.current_thread() is threading.main_thread()
            and _blas_controller() is not None)


def single_threaded_blas():
    """A context manager holding BLAS to one thread (needs :func:`can_limit_blas`).

    Kernels that call BLAS from their own threads run inside it: OpenBLAS's
    threads spin while they wait, and on a busy machine they stall the call
    many times over.  The limit is process-wide while it is held, and only
    the main thread takes it (see :func:`can_limit_blas`).
    """
    return _blas_controller().limit(limits=1, user_api="blas")
