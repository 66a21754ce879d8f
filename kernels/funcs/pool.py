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
request that finds none first frees the idle blocks smaller than itself and
those that served none of the last :data:`STALE_REQUESTS` requests, then
allocates a new one (making room under the cap, largest idle block first):
outputs of growing sizes cost what they cost with the pool off, the largest
of a cycle of sizes serves the rest once it is idle, and a call that asks
for a set of sizes on threads, in an order the threads decide, keeps its
large blocks when one of its small requests misses.  (Freeing every idle
block at a miss cost a two-thread add of two 1e7-entry operands its 152 and
76 MiB result blocks on every call: in alternating processes, 20 adds each,
the COO add's median went from 151 to 105-108 ms with this rule, the CSR
add's from 83-93 to 78-88; AMD EPYC VM, 2 cores, 2026-11-28.)
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
#: A miss frees an idle block that served none of this many requests before it.
STALE_REQUESTS = 64

_blocks = []
#: id(block) -> the request count when the block last served one.
_served = {}
_requests = [0]
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
        _shrink(limit)


def _shrink(limit):
    """:func:`_trim` with the lock held."""
    idle = sorted((i for i in range(len(_blocks)) if _idle(i)), key=lambda i: _blocks[i].size)
    held = sum(b.size for b in _blocks)
    drop = []
    while held > limit and idle:
        i = idle.pop()
        held -= _blocks[i].size
        drop.append(i)
    _drop(drop)


def _drop(indices):
    """Forget the blocks at ``indices`` (their memory goes once no array uses it)."""
    for i in sorted(indices, reverse=True):
        _served.pop(id(_blocks[i]), None)
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
    """The smallest idle block holding ``nbytes`` (at most FIT times it), else a new
    block after freeing the idle ones smaller than it or stale (see the module's
    docstring) and making room under ``limit``, else None (over the cap)."""
    size = -(-nbytes // GRAIN) * GRAIN
    _requests[0] += 1
    now = _requests[0]
    fits = [i for i in range(len(_blocks))
            if size <= _blocks[i].size <= FIT * size and _idle(i)]
    if fits:
        best = min(fits, key=lambda i: _blocks[i].size)
        _served[id(_blocks[best])] = now
        return _blocks[best]
    _drop([i for i in range(len(_blocks)) if _idle(i) and (
        _blocks[i].size < size or now - _served.get(id(_blocks[i]), 0) > STALE_REQUESTS)])
    _shrink(limit - size)
    if sum(b.size for b in _blocks) + size > limit:
        return None
    _blocks.append(keep_writable(np.empty(size, np.uint8)))
    _served[id(_blocks[-1])] = now
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
        _drop(idle)
    return freed


def pooled_bytes():
    """(in use, idle) bytes held by the pool."""
    with _lock:
        idle = sum(_blocks[i].size for i in range(len(_blocks)) if _idle(i))
        return sum(b.size for b in _blocks) - idle, idle
