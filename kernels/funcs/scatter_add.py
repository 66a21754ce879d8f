"""Scatter-add of whole rows: the gradient of the gather primitive on the CPU.

x_grad starts as zeros, every out_grad row is stored at its x row by a
fancy-index store (of rows hitting the same x row one wins; ``np.put``
would first copy a read-only source such as a tensor's array), then each x
row hit more than once is overwritten by the sum of its rows (see
:class:`_Duplicates`).  Rows of one element skip all that for one weighted
``np.bincount``.  Index values outside x's slice of the gathered axis
contribute nothing.  Work runs in threaded blocks of rows
(:mod:`kernels.funcs.row_blocks`).
"""
import numpy as np
from scipy.sparse import csr_array

from ..core.owned import readable
from .row_blocks import RowMap, in_parallel, lanes, rectangles, row_items, step, zeros
from .shape import prod

#: Ranks of repeated rows summed by numpy passes; higher ranks go through one
#: sparse product (see :class:`_Duplicates`).
NUMPY_RANKS = 4
#: Summing a repeated row moves it about this many times (takes, adds, a
#: store), against once for a plain row store: it weighs the threading choice.
SUM_COST = 4


def scatter_add_rows(view, local, out_grad, x_shape, split):
    """x_grad of ``x_shape``: out_grad's rows added at the x rows they were gathered from.

    Parameters
    ----------
    view : GatherView
        The gather folded to ``[batch, outer, size, inner]``.
    local : numpy.ndarray of int64, ``[batch, per_batch]``
        Index positions in x's slice of the gathered axis (outside
        ``[0, size)`` where the slice does not hold them).
    out_grad : numpy.ndarray of ``view.out_shape``
    split : bool
        Whether x holds only part of the gathered axis.

    Returns
    -------
    numpy.ndarray of ``x_shape`` and out_grad's dtype
    """
    if prod(x_shape) == 0 or out_grad.size == 0:
        return np.zeros(x_shape, dtype=out_grad.dtype)
    if view.inner == 1:
        return _element_grad(view, local, out_grad).reshape(x_shape)
    x_grad = zeros(x_shape, out_grad.dtype)
    xv = row_items(x_grad, view.inner)
    g2 = np.ascontiguousarray(out_grad).reshape(-1, view.inner)
    gv = row_items(g2, view.inner)
    row_map, found = RowMap(view, local), []

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

    n = lanes(out_grad.nbytes)
    in_parallel(put, [()] + row_map.blocks(n), n)
    dups = found[0]
    n = lanes(SUM_COST * dups.nbytes)
    per = step(row_map.groups, dups.rows_per_group * view.inner, n)
    in_parallel(lambda *block: dups.overwrite(xv, g2, *block),
                rectangles(view.batch, view.outer, per), n)
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
    weights = readable(np.asarray(out_grad)).reshape(-1)
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
        xv[x_rows.reshape(-1)] = row_items(sums.astype(self.dtype, copy=False), v.inner)

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
