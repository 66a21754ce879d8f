"""Dense gather and batch_gather: the Gather primitive of
OneFlow's gather-primitive article and its scatter-add gradient.

Both ops fold their shapes into the ``[batch, outer, size, inner]`` view of
:mod:`kernels.funcs.gather_view` and move whole rows of ``inner`` elements
(numpy sees each row as one void item): output row ``(b, o, p)`` is x row
``(b, o, index[b, p])``.  The forward is ``np.take`` of rows, the gradient a
memset, a fancy-index store of rows and a sum over the rows hit more than
once (rows of one element: one weighted ``np.bincount``).  Work runs in
blocks of rows, over threads when it is large
(:mod:`kernels.funcs.threads`), and large outputs come from the output pool
(:mod:`kernels.funcs.pool`), which spares them fresh page faults.

The primitive also takes the article's ``offset``: x may hold only the slice
``[offset, offset + x.shape[axis])`` of a gathered axis of logical length
``size``.  Indices are checked against ``size``; one outside the local slice
gives a zero row (forward) or contributes nothing (gradient), so the results
of all slices sum to the full gather (a partial sum).
"""
import threading

import numpy as np
from scipy.sparse import csr_array

from ..core.dtypes import ALL, COMPLEX, FLOATS
from ..core.registry import register_kernel
from ..funcs import pool
from ..funcs.gather_view import OffsetHelper, gather_view
from ..funcs.shape import prod
from ..funcs.threads import num_threads, run_parallel

#: A block moves at most this many elements and this many rows: big enough
#: that Python's per-block cost vanishes, small enough that its row numbers
#: stay a small temporary.
BLOCK_ELEMENTS = 1 << 21
MAX_BLOCK_ROWS = 1 << 16
#: Threads split work only above this many bytes each: below it, waking a
#: thread (late, on a busy machine) costs more than it saves.
MIN_BYTES_PER_THREAD = 8 << 20
#: Ranks of repeated rows summed by numpy passes; higher ranks go through one
#: sparse product (see :class:`_Duplicates`).
NUMPY_RANKS = 4
#: Summing a repeated row moves it about this many times (takes, adds, a
#: store), against once for a plain row store: it weighs the threading choice.
SUM_COST = 4


def checked_index(index, size, axis, op="gather"):
    """``index`` as int64 in ``[0, size)``, negatives wrapped as numpy does.

    A min/max pre-pass runs before anything is written; only on failure is
    the first bad position looked up, for the message.

    Raises
    ------
    IndexError
        Naming the first value outside ``[-size, size)`` and its position.

    Examples
    --------
    >>> checked_index(np.array([0, -1]), 3, axis=0)
    array([0, 2])
    >>> checked_index(np.array([[0, 1], [5, 0]]), 3, axis=1)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    IndexError: gather: index 5 at position (1, 0) is out of range for axis 1 of size 3; ...
    """
    idx = np.asarray(index).astype(np.int64, copy=False)
    if idx.size == 0:
        return idx
    low, high = int(idx.min()), int(idx.max())
    if low < -size or high >= size:
        flat = int(np.flatnonzero((idx < -size) | (idx >= size))[0])
        where = tuple(int(c) for c in OffsetHelper(*idx.shape).to_nd(flat))
        raise IndexError(f"{op}: index {idx.reshape(-1)[flat]} at position {where} is out "
                         f"of range for axis {axis} of size {size}; expected values in "
                         f"[{-size}, {size})")
    return np.where(idx < 0, idx + size, idx) if low < 0 else idx


def _local_index(view, index, offset, size, op):
    """Checked index as ``[batch, per_batch]`` positions in the local slice."""
    n = view.size if size is None else int(size)
    local = checked_index(index, n, view.axis, op).reshape(view.index_dims)
    return local - offset if offset else local


def _is_split(view, offset, size):
    """True when x holds only part of the gathered axis (zero-fill may happen)."""
    return offset != 0 or (size is not None and size != view.size)


def _row_items(a, inner):
    """A contiguous array as a 1-D array of rows: one void item of ``inner`` elements each."""
    return a.reshape(-1, inner).view(np.dtype((np.void, inner * a.itemsize))).reshape(-1)


def _lanes(nbytes):
    """Threads worth using on ``nbytes`` of work."""
    return max(1, min(num_threads(), nbytes // MIN_BYTES_PER_THREAD))


def _step(n_items, per_item, lanes):
    """Items per block: at most a block's worth, and a few blocks per lane when threaded."""
    cap = max(1, min(MAX_BLOCK_ROWS, BLOCK_ELEMENTS // max(per_item, 1)))
    return max(1, min(cap, -(-n_items // (1 if lanes == 1 else 4 * lanes))))


def _rectangles(n_rows, n_cols, per):
    """Rectangles ``(r0, r1, c0, c1)`` of about ``per`` cells covering an ``n_rows x n_cols`` grid.

    They run in C order, and one spans several grid rows only when it spans
    whole grid rows, so the cells of each are contiguous in C order.

    Examples
    --------
    >>> _rectangles(2, 5, 3)
    [(0, 1, 0, 3), (0, 1, 3, 5), (1, 2, 0, 3), (1, 2, 3, 5)]
    >>> _rectangles(3, 2, 4)
    [(0, 2, 0, 2), (2, 3, 0, 2)]
    """
    c_step = max(1, min(n_cols, per))
    r_step = max(1, per // c_step)
    return [(r0, min(r0 + r_step, n_rows), c0, min(c0 + c_step, n_cols))
            for r0 in range(0, n_rows, r_step) for c0 in range(0, n_cols, c_step)]


def _in_parallel(fn, blocks, lanes):
    """Call ``fn(*block)`` for every block, on up to ``lanes`` threads.

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

    run_parallel(run, [None] * max(1, min(len(blocks), lanes)))


def _zeros(shape, dtype):
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
    lanes = _lanes(raw.size)
    step = -(-raw.size // lanes)
    _in_parallel(lambda lo: raw[lo:lo + step].fill(0), [(lo,) for lo in range(0, raw.size, step)],
                 lanes)
    return out


class _RowMap:
    """The Gather primitive on rows: output row ``(b, o, p)`` reads x row ``(b, o, local[b, p])``.

    Rows are flat numbers: output rows of ``[batch * outer, per_batch]``
    and x rows of ``[batch * outer, size]``.
    """

    def __init__(self, view, local):
        self.view, self.local = view, local
        self.groups = view.batch * view.outer
        self._batch_of = OffsetHelper(view.batch, view.outer)
        self._x_rows = OffsetHelper(self.groups, view.size)

    def blocks(self, lanes):
        """Rectangles ``(q0, q1, p0, p1)`` of (group, position) covering all output rows.

        Each holds at most a block of rows, and there are a few per lane
        when threaded; one spans several groups only when it spans whole
        groups, so its output rows are contiguous.
        """
        per_batch = self.view.per_batch
        per = _step(self.groups * per_batch, self.view.inner, lanes)
        return _rectangles(self.groups, per_batch, per)

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


# ---------------------------------------------------------------- forward
def gather_local(x, index, axis=None, batch_dims=0, offset=0, size=None, op="gather"):
    """tf.gather on the slice ``[offset, offset + x.shape[axis])`` of a longer axis.

    Parameters
    ----------
    x : numpy.ndarray
        Any dtype; holds rows ``offset ...`` of the gathered axis.
    index : numpy.ndarray, int32 or int64
        Values in ``[-size, size)``, checked before anything is written.
    axis, batch_dims : int
        As in :func:`dense.gather`.
    offset : int
        Where x's slice starts on the logical axis.
    size : int, optional
        The logical axis length (default: x's own, so offset 0 is a plain gather).
    op : str
        The op named in error messages.

    Returns
    -------
    numpy.ndarray
        ``x.shape[:axis] + index.shape[batch_dims:] + x.shape[axis+1:]``;
        rows whose index falls outside the local slice are 0.
    """
    view = gather_view(x.shape, index.shape, axis, batch_dims, op)
    local = _local_index(view, index, offset, size, op)
    out = pool.empty(view.out_shape, x.dtype)
    if out.size == 0:
        return out
    if view.size == 0:
        out[...] = 0
        return out
    split = _is_split(view, offset, size)
    xv = _row_items(np.ascontiguousarray(x), view.inner)
    outv, outr = _row_items(out, view.inner), out.reshape(-1, view.inner)
    row_map = _RowMap(view, local)

    def block(*rect):
        out_rows, x_rows, idx = row_map.rows(*rect)
        np.take(xv, x_rows.reshape(-1), out=outv[out_rows], mode="clip")
        if split:
            outr[out_rows][row_map.outside(idx, x_rows.shape)] = 0

    lanes = _lanes(out.nbytes)
    _in_parallel(block, row_map.blocks(lanes), lanes)
    return out


# ---------------------------------------------------------------- gradient
def gather_grad_local(x_shape, index, out_grad, axis=None, batch_dims=0, offset=0,
                      size=None, op="gather_grad"):
    """Gradient of :func:`gather_local`: scatter-add ``out_grad`` into zeros of ``x_shape``.

    x_grad starts as zeros, every out_grad row is stored at its x row by a
    fancy-index store (of rows hitting the same x row one wins; ``np.put``
    would first copy a read-only source such as a tensor's array), then each
    x row hit more than once is overwritten by the sum of its rows (see
    :class:`_Duplicates`).  Rows of one element skip all that for one
    weighted ``np.bincount``.  Indices outside the local slice contribute
    nothing.

    Returns
    -------
    numpy.ndarray
        ``x_shape`` and ``out_grad``'s dtype.
    """
    view = gather_view(x_shape, index.shape, axis, batch_dims, op)
    if tuple(out_grad.shape) != view.out_shape:
        raise ValueError(f"{op}: out_grad shape {list(out_grad.shape)} is not the "
                         f"gather's output shape {list(view.out_shape)}")
    local = _local_index(view, index, offset, size, op)
    if prod(x_shape) == 0 or out_grad.size == 0:
        return np.zeros(x_shape, dtype=out_grad.dtype)
    if view.inner == 1:
        return _element_grad(view, local, out_grad).reshape(x_shape)
    x_grad = _zeros(x_shape, out_grad.dtype)
    split = _is_split(view, offset, size)
    xv = _row_items(x_grad, view.inner)
    g2 = np.ascontiguousarray(out_grad).reshape(-1, view.inner)
    gv = _row_items(g2, view.inner)
    row_map, found = _RowMap(view, local), []

    def put(*rect):
        if not rect:   # the one task that finds the repeated rows, beside the stores
            found.append(_Duplicates(view, local, x_grad.dtype))
            return
        out_rows, x_rows, idx = row_map.rows(*rect)
        if split:
            keep = ~row_map.outside(idx, x_rows.shape)
            xv[x_rows.reshape(-1)[keep]] = gv[out_rows][keep]
        else:
            xv[x_rows.reshape(-1)] = gv[out_rows]

    lanes = _lanes(out_grad.nbytes)
    _in_parallel(put, [()] + row_map.blocks(lanes), lanes)
    dups = found[0]
    lanes = _lanes(SUM_COST * dups.nbytes)
    per = _step(row_map.groups, dups.rows_per_group * view.inner, lanes)
    _in_parallel(lambda *block: dups.overwrite(xv, g2, *block),
                 _rectangles(view.batch, view.outer, per), lanes)
    return x_grad


def _in_runs(key):
    """Mask of the entries of sorted ``key`` equal to a neighbour (in a run of 2 or more).

    Examples
    --------
    >>> _in_runs(np.array([1, 2, 2, 3, 4, 4, 4])).astype(int)
    array([0, 1, 1, 0, 1, 1, 1])
    >>> _in_runs(np.array([], int)).size
    0
    """
    out = _repeats_before(key)
    out[:-1] |= out[1:]
    return out


def _element_grad(view, local, out_grad):
    """The gradient when every x row is one element: ``np.bincount`` of the x
    element each output element read, weighted by out_grad (summed in float64,
    rounded once; complex as two real sums).  Indices outside the local slice
    contribute nothing."""
    groups = np.arange(view.batch * view.outer).reshape(view.batch, view.outer, 1)
    keys = (groups * view.size + local[:, None, :]).reshape(-1)
    weights = np.asarray(out_grad).reshape(-1)
    keep = ((local >= 0) & (local < view.size))[:, None, :]
    if not keep.all():
        keep = np.broadcast_to(keep, (view.batch, view.outer, view.per_batch)).reshape(-1)
        keys, weights = keys[keep], weights[keep]
    n = view.batch * view.outer * view.size
    if weights.dtype.kind == "c":
        real = np.bincount(keys, weights.real, minlength=n)
        return (real + 1j * np.bincount(keys, weights.imag, minlength=n)).astype(weights.dtype)
    return np.bincount(keys, weights, minlength=n).astype(weights.dtype)


def _repeats_before(key):
    """Mask of the entries of sorted ``key`` equal to the one before (not starting a run)."""
    out = np.zeros(key.size, bool)
    out[1:] = key[1:] == key[:-1]
    return out


class _Duplicates:
    """The x rows hit more than once, and the out_grad rows that hit them.

    Entries (valid index values whose x row is hit again) are sorted by
    batch and x row, so each repeated x row owns a run of two or more
    consecutive entries; an entry's rank is its place in its run, and the
    entries of one rank hit distinct x rows.  A run's sum is its rank-0 row
    plus its rank-1 row plus, rank by rank up to :data:`NUMPY_RANKS`, the
    few rows of higher rank: numpy takes and adds, which release the GIL,
    so blocks of batches sum on several threads.  Entries of still higher
    rank (an index repeated many times) go through one one-hot sparse
    product per block: scipy's product holds the GIL, but it only sees that
    tail, and an index repeated 10**5 times costs one product, not 10**5
    passes.  For outer coordinate ``o``, an entry's out_grad row is
    ``out_base + o * per_batch`` and a run's x row ``x_base + o * size``.
    """

    def __init__(self, view, local, dtype):
        self.view, self.dtype = view, np.dtype(dtype)
        key, pos = self._repeated_entries(view, local)
        self.run_start = self.rest_start = np.zeros(view.batch + 1, np.int64)
        self.rows_per_group = self.nbytes = 0
        if key.size == 0:     # no x row is hit twice: nothing to sum
            return
        new_run = ~_repeats_before(key)
        self.first = np.flatnonzero(new_run)
        run_batch = key[self.first] // view.size
        self.out_base = (key // view.size * view.outer) * view.per_batch + pos
        self.x_base = (run_batch * view.outer) * view.size + key[self.first] % view.size
        batches = np.arange(view.batch + 1)
        self.run_start = np.searchsorted(run_batch, batches)
        run_of = np.cumsum(new_run) - 1
        rank = np.arange(key.size) - self.first[run_of]
        # ranks[k]: (runs, entries) of rank k in run order, k < NUMPY_RANKS; the
        # rest: entries of higher rank; starts: where each batch's begin
        self.ranks, self.starts = [], []
        for k in range(min(int(rank.max()) + 1, NUMPY_RANKS)):
            at = np.flatnonzero(rank == k)
            self.ranks.append((run_of[at], at))
            self.starts.append(np.searchsorted(run_batch[run_of[at]], batches))
        self.rest = np.flatnonzero(rank >= NUMPY_RANKS)
        self.rest_run = run_of[self.rest]               # ascending
        self.rest_start = np.searchsorted(run_batch[self.rest_run], batches)
        self.rows_per_group = -(-key.size // view.batch)
        self.nbytes = key.size * view.outer * view.inner * self.dtype.itemsize

    @staticmethod
    def _repeated_entries(view, local):
        """Keys ``batch * size + index`` hit more than once, with their positions, sorted.

        One in-place sort of ``key * per_batch + position`` (when that fits
        int64) yields both; full-size temporaries are kept to two, since
        each fresh one costs its page faults.
        """
        span = max(view.per_batch, 1)
        if view.batch * view.size * span >= 2**62:
            return _Duplicates._repeated_by_argsort(view, local)
        valid = (local >= 0) & (local < view.size)
        combo = np.multiply(local, span, dtype=np.int64)
        combo += (np.arange(view.batch, dtype=np.int64) * (view.size * span))[:, None]
        combo += np.arange(view.per_batch, dtype=np.int64)
        combo = combo.reshape(-1) if valid.all() else combo[valid]
        combo.sort()
        key = combo // span
        repeated = _in_runs(key)
        key, combo = key[repeated], combo[repeated]
        return key, combo - key * span

    @staticmethod
    def _repeated_by_argsort(view, local):
        """:meth:`_repeated_entries` for keys too large to pack with positions."""
        valid = (local >= 0) & (local < view.size)
        key = local + (np.arange(view.batch, dtype=np.int64) * view.size)[:, None]
        pos = np.broadcast_to(np.arange(view.per_batch, dtype=np.int64), local.shape)
        key, pos = key[valid], pos[valid]
        order = np.argsort(key, kind="stable")
        key, pos = key[order], pos[order]
        repeated = _in_runs(key)
        return key[repeated], pos[repeated]

    def overwrite(self, xv, g2, b0, b1, o0, o1):
        """Write the sums of the repeated x rows of batches ``[b0, b1)``, outer ``[o0, o1)``.

        ``g2`` is out_grad as ``[rows, inner]``.  float16 is summed in
        float32 and rounded once.
        """
        v = self.view
        r0, r1 = self.run_start[b0], self.run_start[b1]
        if r0 == r1:
            return
        o = np.arange(o0, o1)[:, None] * v.per_batch
        acc = np.float32 if self.dtype == np.float16 else self.dtype

        def rows(k):
            lo, hi = self.starts[k][b0], self.starts[k][b1]
            runs, entries = self.ranks[k][0][lo:hi], self.ranks[k][1][lo:hi]
            return runs - r0, np.take(g2, self.out_base[entries] + o, axis=0)

        sums = rows(0)[1].astype(acc, copy=False)    # every run has ranks 0 and 1
        sums += rows(1)[1]
        for k in range(2, len(self.ranks)):
            runs, more = rows(k)
            if runs.size:
                sums[:, runs] += more
        e0, e1 = self.rest_start[b0], self.rest_start[b1]
        if e1 > e0:
            runs, part = self._rest_sums(g2, e0, e1, o, acc)
            sums[:, runs - r0] += part
        x_rows = np.arange(o0, o1)[:, None] * v.size + self.x_base[r0:r1]
        xv[x_rows.reshape(-1)] = _row_items(sums.astype(self.dtype, copy=False), v.inner)

    def _rest_sums(self, g2, e0, e1, o, acc):
        """The runs with entries of rank NUMPY_RANKS or more, and those entries' sums
        per run: ``[outer, runs, inner]`` from one CSR product whose rows are
        (outer, run) pairs and whose columns are out_grad rows."""
        run = self.rest_run[e0:e1]
        starts = np.flatnonzero(~_repeats_before(run))
        n = e1 - e0
        cols = (self.out_base[self.rest[e0:e1]] + o).reshape(-1)
        indptr = np.append((starts + np.arange(o.shape[0])[:, None] * n).reshape(-1),
                           o.shape[0] * n)
        source = g2
        if g2.dtype == np.float16:       # scipy has no float16 product
            source, cols = np.take(g2, cols, axis=0).astype(acc), np.arange(cols.size)
        onehot = csr_array((np.ones(cols.size, source.dtype), cols, indptr),
                           shape=(indptr.size - 1, source.shape[0]))
        part = onehot @ source
        return run[starts], part.reshape(o.shape[0], starts.size, -1)


# ---------------------------------------------------------------- registration
GRAD_DTYPES = FLOATS + COMPLEX


@register_kernel("gather", dtypes=ALL)
def gather(x, index, axis=None, batch_dims=0):
    """tf.gather with ``batch_dims``; see :func:`gather_local`."""
    return gather_local(x, index, axis, batch_dims)


@register_kernel("gather_grad", dtypes=GRAD_DTYPES)
def gather_grad(x, index, out_grad, axis=None, batch_dims=0):
    """Scatter-add of ``out_grad``; ``x`` is metadata only (no_need_buffer)."""
    return gather_grad_local(x.shape, index, out_grad, axis, batch_dims)


@register_kernel("batch_gather", dtypes=ALL)
def batch_gather(x, index):
    """OneFlow batch_gather: gather on axis ``index.ndim - 1`` with as many batch dims."""
    bd = index.ndim - 1
    return gather_local(x, index, bd, bd, op="batch_gather")


@register_kernel("batch_gather_grad", dtypes=GRAD_DTYPES)
def batch_gather_grad(x, index, out_grad):
    """Scatter-add of ``out_grad``; ``x`` is metadata only (no_need_buffer)."""
    bd = index.ndim - 1
    return gather_grad_local(x.shape, index, out_grad, bd, bd, op="batch_gather_grad")


from ..gpu import ops as _gpu_ops  # noqa: E402,F401  (the 'gpu' kernels: kernels/gpu/ops.py)
