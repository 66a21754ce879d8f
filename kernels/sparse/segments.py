"""Entry bookkeeping shared by the sparse structure ops (transpose, slice, index_select).

The structure ops move stored entries without computing on them: each
output entry is one input entry (its *source*).  These helpers find the
sources: runs of consecutive entries (CSR rows), entries grouped by a key
(a counting sort), and entries repeated once per index that selects them.
Their gradients send each output entry's value back to its source, summing
where an entry was repeated.  All are xp-generic (numpy or cupy) except
:func:`group_by_key`, which runs scipy's compiled counting sort on the CPU.
"""
import numpy as np
from scipy.sparse import _sparsetools

from ..core.owned import readable
from ..core.xp import add_at, xp_of
from ..funcs import pool
from ..funcs.threads import run_parallel
from .blas import index_arrays, row_blocks


def expand_ranges(starts, lengths):
    """The concatenation of ``arange(s, s + n)`` over ``zip(starts, lengths)``, as int64.

    Examples
    --------
    >>> expand_ranges(np.array([5, 0, 9]), np.array([2, 0, 3])).tolist()
    [5, 6, 9, 10, 11]
    """
    xp = xp_of(lengths)
    keep = lengths > 0
    starts, lengths = starts[keep].astype(xp.int64), lengths[keep].astype(xp.int64)
    ends = xp.cumsum(lengths)
    total = int(ends[-1]) if ends.shape[0] else 0
    steps = xp.ones(total, dtype=xp.int64)
    if total:
        steps[0] = starts[0]
        steps[ends[:-1]] = starts[1:] - starts[:-1] - lengths[:-1] + 1
    return xp.cumsum(steps)


def row_ranges(crows, batch, rows):
    """Global start and length of every row of a CSR (``batch * rows`` of each), int64."""
    xp = xp_of(crows)
    if batch == 1:
        c = crows.astype(xp.int64, copy=False)
        return c[:-1], c[1:] - c[:-1]
    c2 = crows.reshape(batch, rows + 1).astype(xp.int64)
    offsets = xp.cumsum(c2[:, -1]) - c2[:, -1]
    lengths = (c2[:, 1:] - c2[:, :-1]).reshape(-1)
    return (c2[:, :-1] + offsets[:, None]).reshape(-1), lengths


def crows_of_bounds(bounds, shape):
    """Paddle's crows for a 2-D or batched 3-D ``shape`` (restarting in every batch) from
    the global row pointers ``bounds`` (``batch * rows + 1`` of them), in their dtype."""
    if len(shape) == 2:
        return bounds
    xp = xp_of(bounds)
    batch, rows = shape[0], shape[1]
    at = xp.arange(batch)[:, None] * rows + xp.arange(rows + 1)[None, :]
    return (bounds[at] - bounds[at[:, :1]]).reshape(-1)


def crows_of_lengths(lengths, batch, rows, dtype):
    """Paddle's crows (restarting in every batch) from each row's entry count."""
    xp = xp_of(lengths)
    counts = lengths.reshape(batch, rows)
    crows = xp.zeros((batch, rows + 1), dtype=dtype)
    xp.cumsum(counts, axis=1, out=crows[:, 1:])
    return crows.reshape(-1)


def segment_counts(mask_or_counts, lengths):
    """Per-segment sums of ``mask_or_counts`` over consecutive segments of ``lengths``."""
    xp = xp_of(lengths)
    cs = xp.zeros(mask_or_counts.shape[0] + 1, dtype=xp.int64)
    xp.cumsum(mask_or_counts, out=cs[1:])
    ends = xp.cumsum(lengths.astype(xp.int64))
    return cs[ends] - cs[ends - lengths]


def select_expansion(coord, index, size):
    """Sources and new coordinates of the entries index_select keeps along one axis.

    Parameters
    ----------
    coord : 1-D integer array
        Each stored entry's coordinate along the selected axis.
    index : 1-D integer array
        The selection, values in ``[0, size)`` (checked by the caller).
    size : int
        The axis' length.

    Returns
    -------
    src, new
        ``src[k]`` is the stored entry that output entry ``k`` copies and
        ``new[k]`` its coordinate (a position in ``index``).  An entry is
        repeated once per position selecting its coordinate, in index order,
        and entries keep their storage order, so ``src`` is non-decreasing.

    Examples
    --------
    >>> src, new = select_expansion(np.array([2, 0, 1]), np.array([2, 2, 1]), 3)
    >>> src.tolist(), new.tolist()
    ([0, 0, 2], [0, 1, 2])
    """
    xp = xp_of(coord)
    if size > _TABLE * (coord.shape[0] + index.shape[0]) + _TABLE_MIN:
        order = xp.argsort(index, kind="stable")          # a long axis: no O(size) table
        keys = index[order]
        starts = xp.searchsorted(keys, coord, side="left")
        return _images(xp, xp.searchsorted(keys, coord, side="right") - starts, starts, order)
    hits = xp.bincount(readable(index), minlength=size)
    if index.shape[0] == 0 or int(hits.max()) <= 1:
        where = xp.full(size, -1, dtype=xp.int64)
        where[index] = xp.arange(index.shape[0])
        new = where[coord]
        src = xp.flatnonzero(new >= 0)
        return src, new[src]
    return _images(xp, hits[coord], (xp.cumsum(hits) - hits)[coord],
                   xp.argsort(index, kind="stable"))


#: An axis longer than _TABLE times (entries + index) + _TABLE_MIN is searched in the
#: sorted index instead of tabulated (bincount and a position table of its length).
_TABLE, _TABLE_MIN = 8, 1 << 16


def _images(xp, counts, starts, order):
    """(src, new) of :func:`select_expansion` from each entry's number of selecting
    positions, where they start among the sorted index values, and that sort."""
    src = xp.repeat(xp.arange(counts.shape[0]), counts)
    first = xp.cumsum(counts) - counts
    rank = xp.arange(src.shape[0]) - xp.repeat(first, counts)
    return src, order[xp.repeat(starts, counts) + rank]


def group_by_key(row_starts, keys, n_keys, payload):
    """Stably regroup entries by ``keys``: a counting sort (CSR to CSC).

    Entries come in rows (``row_starts``, a crows of global offsets); each has
    a key in ``[0, n_keys)`` and a payload value.  On the CPU this is scipy's
    ``csr_tocsc`` (O(nnz + rows + keys)); elsewhere a stable argsort.

    Returns
    -------
    bounds, rows, payload
        ``bounds`` (n_keys + 1, int32 or int64): where each key's entries start in the
        regrouped order; ``rows``: each regrouped entry's row; ``payload`` in
        the regrouped order.  Within a key, entries keep their storage order.
    """
    if xp_of(keys) is np:
        return _group_by_tocsc(row_starts, keys, n_keys, payload)
    return group_by_argsort(row_starts, keys, n_keys, payload)


def _group_by_tocsc(row_starts, keys, n_keys, payload):
    """:func:`group_by_key` by scipy's ``csr_tocsc``, called directly (as ``.tocsc()`` does,
    in the index dtype scipy would pick) into pooled outputs; by blocks of rows on threads
    (:func:`_tocsc_blocks`) where the entries outnumber the keys enough to pay for the join."""
    n_rows, nnz = row_starts.shape[0] - 1, keys.shape[0]
    starts, keys = index_arrays(row_starts, keys, extent=max(n_rows, n_keys, nnz))
    blocks = row_blocks(starts)
    bounds = np.empty(n_keys + 1, starts.dtype)
    rows = pool.empty((nnz,), starts.dtype)
    out = pool.empty(payload.shape, payload.dtype)
    if len(blocks) > 1 and nnz >= TOCSC_BLOCK_ENTRIES_PER_KEY * (n_keys + 1):
        _tocsc_blocks(blocks, starts, keys, n_keys, compiled_values(payload),
                      (bounds, rows, compiled_values(out)))
    else:
        _sparsetools.csr_tocsc(n_rows, n_keys, starts, keys, compiled_values(payload), bounds,
                               rows, compiled_values(out))
    return bounds, rows, out


#: Entries per key from which :func:`_tocsc_blocks` pays: its join walks every key of
#: every block.  nnz 1e6 on 2 threads (AMD EPYC VM, 2026-11-27), one call against blocks:
#: 3.4 against 3.9 ms at 20 entries a key, 3.1 against 2.4 at 50, 4.5 against 11.5 at 2.2.
TOCSC_BLOCK_ENTRIES_PER_KEY = 32


def _tocsc_blocks(blocks, starts, keys, n_keys, payload, outs):
    """``csr_tocsc`` of each block of rows on its own thread, then scipy's ``csr_hstack``
    joins the blocks key by key: each block's entries of one key follow the previous
    block's, so the order is the one-call order, bit for bit.  On an AMD EPYC VM with
    2 threads (2026-11-27, a 20000 x 20000 float32 CSR): 4.4 against 7.1 ms at nnz 1e6,
    62 against 118 at 1e7 (one block per thread; four or more were slower at 1e6)."""
    b = len(blocks)
    parts = [np.empty(b * (n_keys + 1), starts.dtype), pool.empty(keys.shape, starts.dtype),
             pool.empty(payload.shape, payload.dtype)]

    def run(i):
        r0, r1 = blocks[i]
        k0, k1 = int(starts[r0]), int(starts[r1])
        mine = [parts[0][i * (n_keys + 1):(i + 1) * (n_keys + 1)]] + [p[k0:k1] for p in parts[1:]]
        _sparsetools.csr_tocsc(r1 - r0, n_keys, starts[r0:r1 + 1] - starts[r0], keys[k0:k1],
                               payload[k0:k1], *mine)
    run_parallel(run, list(range(b)))
    widths = np.array([r1 - r0 for r0, r1 in blocks], starts.dtype)
    _sparsetools.csr_hstack(b, n_keys, widths, *parts, *outs)


def compiled_values(values):
    """``values`` as a dtype scipy's compiled routines take: float16 seen as int16 (they only
    move values), anything else as it is."""
    return values.view(np.int16) if values.dtype == np.float16 else values


def group_by_argsort(row_starts, keys, n_keys, payload):
    """:func:`group_by_key` by a stable argsort: the path for cupy (any xp)."""
    xp = xp_of(keys)
    order = xp.argsort(keys, kind="stable")
    bounds = xp.searchsorted(keys[order], xp.arange(n_keys + 1), side="left")
    rows = xp.repeat(xp.arange(row_starts.shape[0] - 1), xp.diff(row_starts))[order]
    return bounds, rows, payload[order]


def scatter_back(n, src, grad):
    """The gradient of a gather by ``src``: ``out[src] += grad`` on zeros of length ``n``.

    ``src`` may be a slice (a run of entries) or an index array; repeated
    sources are summed.
    """
    xp = xp_of(grad)
    out = xp.zeros((n,) + tuple(grad.shape[1:]), dtype=grad.dtype)
    if isinstance(src, slice):
        out[src] = grad
    else:
        add_at(out, src, grad)
    return out
