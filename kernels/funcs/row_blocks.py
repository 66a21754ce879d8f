"""Whole rows moved in threaded blocks: the CPU side of the gather primitive.

A gather folded to the ``[batch, outer, size, inner]`` view of
:mod:`kernels.funcs.gather_view` moves whole rows of ``inner`` elements
(numpy sees each row as one void item): output row ``(b, o, p)`` is x row
``(b, o, local[b, p])``.  :class:`RowMap` gives each block of output rows
its x rows; :func:`in_parallel` runs blocks on threads that pull from a
shared queue; :func:`zeros` clears a pooled output one memset per thread.
The gather forward (:mod:`kernels.dense.gather`) and its scatter-add
gradient (:mod:`kernels.funcs.scatter_add`) share them.
"""
import threading

import numpy as np

from ..core.dtypes import additive_identity
from . import pool
from .gather_view import OffsetHelper
from .shape import prod
from .threads import num_threads, run_parallel

#: A block moves at most this many elements and this many rows: big enough
#: that Python's per-block cost vanishes, small enough that its row numbers
#: stay a small temporary.
BLOCK_ELEMENTS = 1 << 21
MAX_BLOCK_ROWS = 1 << 16
#: A row block goes to another thread only above this many bytes per thread:
#: below it, waking a thread (late, on a busy machine) costs more than it saves.
#: (Larger than :data:`kernels.funcs.threads.MIN_BYTES_PER_THREAD`, which
#: splits one numpy call rather than Python-driven blocks.)
ROW_BYTES_PER_THREAD = 8 << 20


def row_items(a, inner):
    """A contiguous array as a 1-D array of rows: one void item of ``inner`` elements each."""
    return a.reshape(-1, inner).view(np.dtype((np.void, inner * a.itemsize))).reshape(-1)


def lanes(nbytes):
    """Threads worth using on ``nbytes`` of work."""
    return max(1, min(num_threads(), nbytes // ROW_BYTES_PER_THREAD))


def step(n_items, per_item, n_lanes):
    """Items per block: at most a block's worth, and a few blocks per lane when threaded."""
    cap = max(1, min(MAX_BLOCK_ROWS, BLOCK_ELEMENTS // max(per_item, 1)))
    return max(1, min(cap, -(-n_items // (1 if n_lanes == 1 else 4 * n_lanes))))


def rectangles(n_rows, n_cols, per):
    """Rectangles ``(r0, r1, c0, c1)`` of about ``per`` cells covering an ``n_rows x n_cols`` grid.

    They run in C order, and one spans several grid rows only when it spans
    whole grid rows, so the cells of each are contiguous in C order.

    Examples
    --------
    >>> rectangles(2, 5, 3)
    [(0, 1, 0, 3), (0, 1, 3, 5), (1, 2, 0, 3), (1, 2, 3, 5)]
    >>> rectangles(3, 2, 4)
    [(0, 2, 0, 2), (2, 3, 0, 2)]
    """
    c_step = max(1, min(n_cols, per))
    r_step = max(1, per // c_step)
    return [(r0, min(r0 + r_step, n_rows), c0, min(c0 + c_step, n_cols))
            for r0 in range(0, n_rows, r_step) for c0 in range(0, n_cols, c_step)]


def in_parallel(fn, blocks, n_lanes):
    """Call ``fn(*block)`` for every block, on up to ``n_lanes`` threads.

    Threads take the next block from a shared queue, so when a thread starts
    late (a busy machine) the others do its share instead of waiting for it.
    """
    todo, lock = iter(blocks), threading.Lock()

    def run(_):
        while True:
            with lock:
                block = next(todo, None)
            if block is None:
                return
            fn(*block)

    run_parallel(run, [None] * max(1, min(len(blocks), n_lanes)))


def zeros(shape, dtype):
    """Zeros: from calloc when the output is not pooled, else a pooled block
    cleared as bytes, one large memset per thread.

    ``fill(0)`` on bytes is a memset, several times faster than on floats,
    and one large enough (tens of MB) uses non-temporal stores, which skip
    reading the memory first; block-by-block fills would not.
    """
    nbytes = prod(shape) * np.dtype(dtype).itemsize
    if not pool.MIN_BYTES <= nbytes <= pool.pool_limit():
        return np.zeros(shape, dtype)  # calloc: pages never written are never faulted
    out = pool.empty(shape, dtype)
    raw = out.reshape(-1).view(np.uint8)
    n = lanes(raw.size)
    part = -(-raw.size // n)
    in_parallel(lambda lo: raw[lo:lo + part].fill(0), [(lo,) for lo in range(0, raw.size, part)],
                n)
    return out


class RowMap:
    """The gather primitive on rows: output row ``(b, o, p)`` reads x row ``(b, o, local[b, p])``.

    Rows are flat numbers: output rows of ``[batch * outer, per_batch]``
    and x rows of ``[batch * outer, size]``.  ``local`` is the index as
    ``[batch, per_batch]`` int64 positions in x's slice of the gathered axis
    (outside ``[0, size)`` where the slice does not hold them).
    """

    def __init__(self, view, local):
        self.view, self.local = view, local
        self.groups = view.batch * view.outer
        self._batch_of = OffsetHelper(view.batch, view.outer)
        self._x_rows = OffsetHelper(self.groups, view.size)

    def blocks(self, n_lanes):
        """Rectangles ``(q0, q1, p0, p1)`` of (group, position) covering all output rows.

        Each holds at most a block of rows, and there are a few per lane
        when threaded; one spans several groups only when it spans whole
        groups, so its output rows are contiguous.
        """
        per_batch = self.view.per_batch
        per = step(self.groups * per_batch, self.view.inner, n_lanes)
        return rectangles(self.groups, per_batch, per)

    def rows(self, q0, q1, p0, p1):
        """``(out_rows, x_rows, idx)`` of one block.

        ``out_rows`` is the slice of output rows, ``x_rows`` the x row each
        reads, ``(groups, positions)`` (out of range where the index is
        outside the local slice), and ``idx`` the local index values, which
        broadcast to that shape.
        """
        q = np.arange(q0, q1)
        b0, b1 = self._batch_of.to_nd(q0)[0], self._batch_of.to_nd(q1 - 1)[0] + 1
        if b1 - b0 == 1 or self.view.outer == 1:  # one batch, or one group per batch: a view
            idx = self.local[b0:b1, p0:p1]
        else:
            idx = self.local[self._batch_of.to_nd(q)[0], p0:p1]
        per_batch = self.view.per_batch
        return (slice(q0 * per_batch + p0, (q1 - 1) * per_batch + p1),
                self._x_rows.to_offset(q[:, None], idx), idx)

    def outside(self, idx, shape):
        """Flat mask of the index values outside the local slice, broadcast to ``shape``."""
        return np.broadcast_to((idx < 0) | (idx >= self.view.size), shape).reshape(-1)


def take_rows(x, view, local, split):
    """The gather forward: a new array of ``view.out_shape`` from whole x rows.

    ``split`` says x holds only part of the gathered axis: output rows whose
    index lies outside it are filled with the dtype's additive identity (-0.0
    for floats), as this rank's addend of a partial_sum.
    """
    out = pool.empty(view.out_shape, x.dtype)
    zero = additive_identity(x.dtype)
    if out.size == 0:
        return out
    if view.size == 0:
        out[...] = zero
        return out
    xv = row_items(np.ascontiguousarray(x), view.inner)
    outv, outr = row_items(out, view.inner), out.reshape(-1, view.inner)
    row_map = RowMap(view, local)

    def block(*rect):
        out_rows, x_rows, idx = row_map.rows(*rect)
        np.take(xv, x_rows.reshape(-1), out=outv[out_rows], mode="clip")
        if split:
            outr[out_rows][row_map.outside(idx, x_rows.shape)] = zero

    n = lanes(out.nbytes)
    in_parallel(block, row_map.blocks(n), n)
    return out
