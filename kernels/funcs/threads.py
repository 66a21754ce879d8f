"""Split large numpy work over threads: copyto, add.reduce and matmul release the GIL.

``PHISPARSE_NUM_THREADS`` sets the thread count (1 turns threading off); the
default is the number of CPUs this process may run on.  The variable is read
once, at the first call that needs it; :func:`set_num_threads` changes the
count at run time.
"""
import os
from concurrent.futures import ThreadPoolExecutor

#: Below this many bytes per thread, splitting costs more than it saves.
MIN_BYTES_PER_THREAD = 4 << 20

_POOLS = {}
_BLAS = []
#: The thread count in force; None until first read from the environment.
_num_threads = None


def _from_environment():
    env = os.environ.get("PHISPARSE_NUM_THREADS", "").strip()
    if env:
        return max(1, int(env))
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
        else os.cpu_count() or 1


def num_threads():
    """Threads a kernel may use: ``PHISPARSE_NUM_THREADS`` or the usable CPUs, read once."""
    global _num_threads
    if _num_threads is None:
        _num_threads = _from_environment()
    return _num_threads


def set_num_threads(n=None):
    """Use ``n`` threads from now on (1 turns threading off); None reads
    ``PHISPARSE_NUM_THREADS`` (or the CPU count) again.  Returns the previous count.

    Examples
    --------
    >>> old = set_num_threads(1)
    >>> num_threads()
    1
    >>> _ = set_num_threads(old)
    """
    global _num_threads
    old = num_threads()
    _num_threads = _from_environment() if n is None else max(1, int(n))
    return old


def split_index(shape, nbytes, candidates=None):
    """Index tuples cutting ``shape`` into pieces of work for the threads.

    The cut runs along the first of ``candidates`` (default: every axis)
    long enough for one piece per thread, preferring one twice that long.
    Work under :data:`MIN_BYTES_PER_THREAD` per thread stays whole: ``[()]``.

    Examples
    --------
    >>> split_index((8, 8), 256)
    [()]
    >>> len(split_index((1, 4096), 1 << 30, candidates=[1])) == min(num_threads(), 256)
    True
    """
    parts = min(num_threads(), nbytes // MIN_BYTES_PER_THREAD)
    axes = range(len(shape)) if candidates is None else candidates
    for want in (2 * parts, parts):
        for axis in axes:
            n = shape[axis]
            if parts > 1 and n >= want:
                lead = (slice(None),) * axis
                return [lead + (slice(n * k // parts, n * (k + 1) // parts),)
                        for k in range(parts)]
    return [()]


def run_parallel(fn, pieces):
    """Call ``fn(piece)`` for every piece, concurrently; the caller runs the first.

    ``fn`` must not call ``run_parallel`` itself.
    """
    if len(pieces) == 1:
        fn(pieces[0])
        return
    workers = len(pieces) - 1
    pool = _POOLS.get(workers)
    if pool is None:
        pool = _POOLS.setdefault(workers, ThreadPoolExecutor(workers, "phisparse"))
    futures = [pool.submit(fn, p) for p in pieces[1:]]
    try:
        fn(pieces[0])
    finally:
        for f in futures:
            f.result()


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
    """True if threadpoolctl is installed, so :func:`single_threaded_blas` works."""
    return _blas_controller() is not None


def single_threaded_blas():
    """A context manager holding BLAS to one thread (needs :func:`can_limit_blas`).

    Kernels that call BLAS from their own threads run inside it: OpenBLAS's
    threads spin while they wait, and on a busy machine they stall the call
    many times over.  The limit is process-wide while it is held.
    """
    return _blas_controller().limit(limits=1, user_api="blas")
