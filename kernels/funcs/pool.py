"""Reuse large host output buffers once nothing references them.

A fresh output costs page faults: the kernel zeroes every page before the
kernel writes it, which halves the write speed of a big copy.  Like
TensorFlow's allocator, :func:`empty` hands out large outputs as views of
pooled blocks and reuses a block once no array refers to it any more (every
view of a block keeps the block itself as its ``base``, so CPython's
reference count tells when it is idle).  A live tensor's memory is never
reused, so tensors stay immutable.

A request takes the smallest idle block that holds it and is at most
:data:`FIT` times its size (so a live output pins at most that much).  A
request that finds none first frees every idle block, then allocates a new
one: what the pool holds idle never grows past the blocks of the last miss,
so outputs of varying sizes cost what they cost with the pool off, and the
largest of a cycle of sizes serves the rest once it is idle.
:func:`release_idle` (``dense.release_memory()``) frees the idle blocks now.

``PHISPARSE_POOL_BYTES`` caps the bytes the pool tracks (0 turns pooling
off; a K/M/G/T suffix is allowed, and anything else is a ValueError naming
the variable); the default is an eighth of physical memory, at most 4 GiB.  The
variable is read once, at the first large request; :func:`set_pool_bytes`
changes the cap at run time.  Requests below :data:`MIN_BYTES`, and any
beyond the cap, come from ``np.empty``.
"""
import os
import sys
import threading

import numpy as np

from ..core.env import checked_count, env_count, previous_value
from ..core.owned import keep_writable
from ..core.xp import xp_of
from .shape import prod

#: Smaller outputs come straight from np.empty (malloc reuses them cheaply).  Not
#: above 4 MiB: glibc gives a freed block of a few MiB back to the system when it tops
#: the heap (its trim threshold follows its mmap threshold, 32 MiB at most), so a
#: sparse add of two 1e6-entry CSR tensors, whose result buffers were 15.3 and 7.6 MiB,
#: faulted in 3400 fresh pages a call: 11.7 against 7.0 ms a call with this floor
#: (AMD EPYC VM, 2026-11-27; no row of the bench's sparse set got slower).
MIN_BYTES = 4 << 20
#: Blocks are sized in whole huge pages.
GRAIN = 2 << 20
#: An idle block serves requests down to 1/FIT of its size.
FIT = 2.5

_blocks = []
_lock = threading.Lock()
#: The cap in force; None until first read from the environment.
_limit = None


def pool_limit():
    """The most bytes the pool may track: ``PHISPARSE_POOL_BYTES`` or the default, read once."""
    global _limit
    if _limit is None:
        _limit = _from_environment()
    return _limit


def set_pool_bytes(n: int | None = None) -> int | None:
    """Cap the pool at ``n`` bytes from now on (0 turns it off); None reads
    ``PHISPARSE_POOL_BYTES`` (or the default) again.  Returns the previous cap.
    ``n`` must be an int (TypeError) of at least 0 (ValueError).

    A lower cap frees idle blocks at once until what the pool holds fits under it.
    A cap given here stands even where the variable holds a bad value (the previous
    cap is then returned as None).

    Examples
    --------
    >>> old = set_pool_bytes(0)
    >>> empty((1 << 22,), np.float64).base is None    # 32 MiB, yet not pooled
    True
    >>> _ = set_pool_bytes(old)
    """
    global _limit
    n = None if n is None else checked_count("set_pool_bytes", "n", n, 0)
    old = previous_value(pool_limit, n)
    _limit = _from_environment() if n is None else n
    _trim(_limit)
    return old


def _trim(limit):
    """Free idle blocks, largest first, until the pool holds at most ``limit`` bytes."""
    with _lock:
        idle = sorted((i for i in range(len(_blocks)) if _idle(i)),
                      key=lambda i: _blocks[i].size)
        held = sum(b.size for b in _blocks)
        drop = []
        while held > limit and idle:
            i = idle.pop()
            held -= _blocks[i].size
            drop.append(i)
        for i in sorted(drop, reverse=True):
            del _blocks[i]


def _from_environment():
    return env_count("PHISPARSE_POOL_BYTES", _default_limit, units=True)


def _default_limit():
    try:
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0
    return min(ram // 8, 4 << 30)


def _idle(i):
    return sys.getrefcount(_blocks[i]) == 2  # the list and this call's argument


def _take(nbytes, limit):
    """The smallest idle block holding ``nbytes`` (at most FIT times it), else a
    new block after freeing every idle one, else None (over the cap)."""
    size = -(-nbytes // GRAIN) * GRAIN
    fits = [i for i in range(len(_blocks))
            if size <= _blocks[i].size <= FIT * size and _idle(i)]
    if fits:
        return _blocks[min(fits, key=lambda i: _blocks[i].size)]
    for i in reversed(range(len(_blocks))):
        if _idle(i):
            del _blocks[i]
    if sum(b.size for b in _blocks) + size > limit:
        return None
    _blocks.append(keep_writable(np.empty(size, np.uint8)))
    return _blocks[-1]


def empty(shape, dtype):
    """Like ``np.empty(shape, dtype)``; large requests reuse an idle pooled block.

    Examples
    --------
    >>> a = empty((2, 3), np.float32)
    >>> a.shape, a.dtype.name, a.flags.c_contiguous
    ((2, 3), 'float32', True)
    """
    dtype = np.dtype(dtype)
    nbytes = prod(shape) * dtype.itemsize
    if nbytes < MIN_BYTES:
        return np.empty(shape, dtype)
    limit = pool_limit()
    if nbytes > limit:
        return np.empty(shape, dtype)
    with _lock:                         # the cap again, under the lock: set_pool_bytes
        block = _take(nbytes, pool_limit())     # may have lowered and trimmed meanwhile
    if block is None:
        return np.empty(shape, dtype)
    return block[:nbytes].view(dtype).reshape(shape)


def new_array(like, shape, dtype=None):
    """A new uninitialised array on ``like``'s device (its dtype by default).

    Host arrays come from :func:`empty`; device arrays from cupy's own pool.
    """
    xp = xp_of(like)
    dtype = like.dtype if dtype is None else dtype
    return empty(shape, dtype) if xp is np else xp.empty(shape, dtype)


def release_idle():
    """Free every pooled block that no array uses; return the bytes freed."""
    with _lock:
        idle = [i for i in range(len(_blocks)) if _idle(i)]
        freed = sum(_blocks[i].size for i in idle)
        for i in reversed(idle):
            del _blocks[i]
    return freed


def pooled_bytes():
    """(in use, idle) bytes held by the pool."""
    with _lock:
        idle = sum(_blocks[i].size for i in range(len(_blocks)) if _idle(i))
        return sum(b.size for b in _blocks) - idle, idle
