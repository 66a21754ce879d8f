"""Sparse data bundles (what sparse kernels take and return) and their index math.

A COO tensor is ``CooData(indices, values, shape, coalesced)``: ``indices`` is
``[sparse_dim, nnz]``, ``values`` is ``[nnz, *dense_dims]`` and ``shape`` is
the sparse dims followed by the dense dims.  Coalesced means unique
coordinates sorted in C order.

A CSR tensor is ``CsrData(crows, cols, values, shape)``, 2-D ``[rows, cols]``
or batched 3-D ``[batch, rows, cols]`` as Paddle lays it out: ``crows`` holds
``batch * (rows + 1)`` entries and restarts from 0 in every batch, while
``cols`` and ``values`` run over all batches in order.  Columns within a row
need not be sorted.

The helpers here are xp-generic (numpy or cupy) and never write into their
inputs: arrays inside tensors are read-only.
"""
from typing import NamedTuple

import numpy as np
from scipy.sparse import _sparsetools

from ..core.owned import readable
from ..core.xp import add_at, place_of, xp_of
from ..funcs import pool
from ..funcs.restride import index_dtype, restride
from ..funcs.shape import INT64_LIMIT, prod
from ..gpu.backend import device
from ..gpu.csr_coo import csr_to_coo_indices


class CooData(NamedTuple):
    """The buffers of a COO tensor.  ``coalesced``: each coordinate once, in C order;
    ``unique``: each coordinate once, in any order (what a kernel knows of its output:
    a matmul's, a transpose's of a coalesced x), which boxing a partial_sum needs."""

    indices: object
    values: object
    shape: tuple
    coalesced: bool = False
    unique: bool = False

    @property
    def sparse_dim(self):
        return self.indices.shape[0]

    @property
    def dense_dim(self):
        return self.values.ndim - 1

    @property
    def nnz(self):
        return self.indices.shape[1]


class CsrData(NamedTuple):
    """The buffers of a 2-D or batched 3-D CSR tensor."""

    crows: object
    cols: object
    values: object
    shape: tuple

    @property
    def batch(self):
        return self.shape[0] if len(self.shape) == 3 else 1

    @property
    def nnz(self):
        return self.cols.shape[0]


def index_rows(indices):
    """The rows of an index matrix as a list of 1-D views."""
    return [indices[d] for d in range(indices.shape[0])]


def csr_row_ids(x):
    """Each CSR entry's global row, ``batch * rows + row``, in storage order."""
    xp = xp_of(x.cols)
    rows = x.shape[-2]
    dtype = index_dtype((x.batch * rows,), x.crows.dtype, xp=xp)
    if place_of(x.cols) == "gpu":       # cupy's repeat by counts reads them on the host
        ids = csr_indices_cuda(x)
        flat = ids[0] if len(x.shape) == 2 else ids[0].astype(dtype) * rows + ids[1]
        return flat.astype(dtype, copy=False)
    if len(x.shape) == 2 and xp is np:
        return row_ids(x.crows, pool.empty((x.nnz,), dtype))
    c2 = x.crows.reshape(x.batch, rows + 1)
    counts = (c2[:, 1:] - c2[:, :-1]).reshape(-1)
    return xp.repeat(xp.arange(x.batch * rows, dtype=dtype), counts)


def row_ids(indptr, out):
    """Write into numpy ``out`` (``indptr[-1]`` entries) the row of each entry under the
    validated row pointers ``indptr`` (1-D, from 0): scipy's compiled ``expandptr``, one
    sequential pass, where both fit one index dtype; else numpy's repeat.  Returns out.

    Examples
    --------
    >>> row_ids(np.array([0, 2, 2, 3]), np.empty(3, np.int64)).tolist()
    [0, 0, 2]
    """
    n_row = indptr.shape[0] - 1
    if out.dtype in (np.int32, np.int64) and out.flags.c_contiguous and n_row >= 0 \
            and int(indptr[0]) == 0 and int(indptr[-1]) == out.shape[0] \
            and (out.dtype == np.int64 or out.shape[0] < 1 << 31):
        _sparsetools.expandptr(n_row, indptr.astype(out.dtype, copy=False), out)
    else:
        out[...] = np.repeat(np.arange(n_row), np.diff(indptr))
    return out


def csr_coords(x):
    """COO coordinates of a CSR tensor's entries, in storage order.

    Parameters
    ----------
    x : CsrData

    Returns
    -------
    list of 1-D arrays
        ``[batch,] row, col`` ids, one array per dim, in crows' dtype (``col``
        is ``x.cols`` itself); on a GPU the rows of :func:`csr_indices_cuda`.
    """
    if place_of(x.cols) == "gpu":
        return index_rows(csr_indices_cuda(x))
    if len(x.shape) == 2:
        return [csr_row_ids(x), x.cols]
    xp = xp_of(x.cols)
    rows = x.shape[-2]
    c2 = x.crows.reshape(x.batch, rows + 1)
    counts = (c2[:, 1:] - c2[:, :-1]).reshape(-1)
    row_ids = xp.repeat(xp.tile(xp.arange(rows, dtype=x.crows.dtype), x.batch), counts)
    batch_ids = xp.repeat(xp.arange(x.batch, dtype=x.crows.dtype), c2[:, -1])
    return [batch_ids, row_ids, x.cols]


def csr_indices_cuda(x):
    """COO indices ``[len(x.shape), nnz]`` of CSR x, by ``csr_coo.cu`` on the GPU backend.

    One thread per entry finds its batch and row by binary search in crows
    (:func:`kernels.gpu.csr_coo.csr_to_coo_indices`); the arrays are the
    backend's (cupy on a GPU).
    """
    return csr_to_coo_indices(device(), x.crows, x.cols, x.shape)


def row_keys(indices, shape):
    """Each entry's global row, ``batch * rows + row``, of a 2-D/3-D COO index matrix."""
    if len(shape) == 2:
        return indices[0]
    dtype = index_dtype((shape[0] * shape[1],), indices.dtype, xp=xp_of(indices))
    return restride([indices[0], indices[1]], shape[:2], (shape[0] * shape[1],), dtype=dtype)[0]


def crows_from_keys(keys, shape, dtype):
    """crows of entries whose global rows are ``keys`` (sorted ascending).

    With many entries per row (over :data:`SEARCH_PER_ROW`), each row's
    start is a binary search in the keys: one pass over the rows, not over
    the entries (4x faster than bincount at 1e7 entries in 65536 rows); so
    always on a GPU, where cupy's bincount reads the largest key back to size
    its output.  Otherwise each row's count (one bincount) is written behind
    each batch's leading 0 and summed along the rows in place, so the memory is the new
    crows and one count per row, whatever nnz is (a reshape to 2**31 rows
    needs no more than that).

    Parameters
    ----------
    keys : 1-D array
        ``batch * rows + row`` per entry, ascending.
    shape : tuple
        The 2-D or 3-D CSR shape.
    dtype : dtype
        The crows dtype.

    Examples
    --------
    >>> import numpy as np
    >>> crows_from_keys(np.array([0, 0, 3]), (2, 2, 3), np.int32).tolist()
    [0, 2, 2, 0, 0, 1]
    """
    xp = xp_of(keys)
    batch, rows = (shape[0] if len(shape) == 3 else 1), shape[-2]
    crows = xp.zeros((batch, rows + 1), dtype=dtype)
    if rows and (keys.shape[0] > SEARCH_PER_ROW * batch * rows or xp is not np):
        bounds = xp.searchsorted(keys, _row_numbers(xp, batch * rows + 1, keys.dtype))
        crows[:, 1:] = bounds[1:].reshape(batch, rows) - bounds[:-1:rows, None]
    elif rows and keys.shape[0]:
        crows[:, 1:] = xp.bincount(readable(keys), minlength=batch * rows).reshape(batch, rows)
        xp.cumsum(crows, axis=1, out=crows)
    return crows.reshape(-1)


#: Entries per row above which :func:`crows_from_keys` searches row starts (timed
#: here: at 1e6 entries, 65536 rows bincount won 1.3 to 2.6 ms and 20000 rows
#: searching won 0.9 to 1.6 ms).
SEARCH_PER_ROW = 32


def _row_numbers(xp, n, dtype):
    """0..n-1 in the keys' dtype where it holds n (searchsorted would otherwise copy
    the keys to a common dtype)."""
    return xp.arange(n, dtype=dtype if n <= xp.iinfo(dtype).max else xp.int64)


def coo_to_csr_parts(indices, shape, dtype, rows_sorted=False):
    """CSR crows and cols of a 2-D/3-D COO index matrix; see :func:`csr_from_keys`."""
    return csr_from_keys(row_keys(indices, shape), indices[-1], shape, dtype, rows_sorted)


def csr_from_keys(keys, cols, shape, dtype, rows_sorted=False):
    """crows and cols from each entry's global row and col, sorting rows where needed
    (never where ``rows_sorted`` says the keys already ascend).

    Parameters
    ----------
    keys, cols : 1-D arrays
        ``batch * rows + row`` and the col of each entry.
    shape : tuple
        The 2-D or 3-D CSR shape.
    dtype : dtype
        The index dtype of crows and cols.

    Returns
    -------
    crows, cols, perm
        ``perm`` is the stable permutation that orders the entries by row
        (None when they already are); values follow as ``values[perm]``.
    """
    perm = None if rows_sorted else row_order(keys)
    if perm is not None:
        keys, cols = keys[perm], cols[perm]
    return crows_from_keys(keys, shape, dtype), cols.astype(dtype, copy=False), perm


def row_order(keys):
    """The stable permutation that sorts ``keys`` ascending, or None when they already are."""
    xp = xp_of(keys)
    if keys.shape[0] > 1 and bool(xp.any(keys[1:] < keys[:-1])):
        return xp.argsort(keys, kind="stable")
    return None


def fold_dense(x, k=None):
    """Move the first ``k`` dense dims of a COO tensor into its sparse dims.

    Every value element of a folded dim becomes a stored entry (zeros
    included), in the order the values are laid out, so the folded values are
    ``x.values`` reshaped and a coalesced input stays coalesced.

    Parameters
    ----------
    x : CooData
    k : int, optional
        How many dense dims to fold; default all of them.
    """
    k = x.dense_dim if k is None else k
    if k == 0:
        return x
    xp = xp_of(x.indices)
    sd = x.sparse_dim
    block = x.shape[sd:sd + k]
    n = prod(block)
    dtype = index_dtype(block, x.indices.dtype, xp=xp)
    inner = xp.arange(n, dtype=dtype)
    inner_rows = [inner] if k == 1 else list(restride([inner], (n,), block))
    indices = xp.empty((sd + k, x.nnz * n), dtype=dtype)
    indices[:sd] = xp.repeat(x.indices, n, axis=1)
    for d, r in enumerate(inner_rows):
        indices[sd + d] = xp.tile(r, x.nnz)
    values = x.values.reshape((x.nnz * n,) + tuple(x.shape[sd + k:]))
    return CooData(indices, values, x.shape, x.coalesced, unique=x.coalesced or x.unique)


def flat_keys(indices, sparse_shape, op):
    """Each entry's C-order flat offset within the sparse dims, as int64.

    Raises ValueError naming ``op`` when the sparse dims hold 2**63 or more
    elements, where an int64 offset cannot exist.
    """
    size = prod(sparse_shape)
    if size >= INT64_LIMIT:
        raise ValueError(f"{op}: the sparse dims {list(sparse_shape)} hold {size} elements, "
                         f"more than an int64 offset can address")
    xp = xp_of(indices)
    return restride(index_rows(indices), sparse_shape, (size,), dtype=xp.int64)[0]


def sum_by_key(keys, values, size=None):
    """Sum the values of equal keys.

    Sorted keys (equal ones adjacent) are summed segment by segment without
    sorting.  Unsorted keys below ``size`` with 1-D floating values, when
    ``size`` is at most 4 * n, are counted into ``size`` buckets (two
    ``bincount`` passes, summing in float64); other unsorted keys are sorted
    first (stably).

    Parameters
    ----------
    keys : 1-D int64 array
        A key per entry (any order).
    values : array [n, ...]
    size : int, optional
        A bound on the keys.

    Returns
    -------
    ukeys, sums, group
        The sorted unique keys, the summed values (in ``values``' dtype) and
        each entry's position in ``ukeys``; ``group`` is None when the keys
        already were sorted and unique (then nothing is summed).
    """
    xp = xp_of(keys)
    if keys.shape[0] < 2:
        return keys, values, None
    step = keys[1:] - keys[:-1]
    if not bool(xp.any(step <= 0)):
        return keys, values, None
    unsorted = bool(xp.any(step < 0))
    if unsorted and size is not None and size <= 4 * keys.shape[0] and values.ndim == 1 \
            and values.dtype.kind == "f":
        return _bucket_sum(keys, values, size, xp)
    perm = None if not unsorted else xp.argsort(keys, kind="stable")
    sk = keys if perm is None else keys[perm]
    new = xp.concatenate([xp.ones(1, dtype=bool), sk[1:] != sk[:-1]])
    starts = xp.flatnonzero(new)
    rank = xp.cumsum(new) - 1
    if perm is None:
        group = rank
    else:
        group = xp.empty(keys.shape[0], dtype=xp.int64)
        group[perm] = rank
    sv = values if perm is None else values[perm]
    sums = xp.add.reduceat(sv, starts, axis=0).astype(values.dtype, copy=False)
    return sk[starts], sums, group


def _bucket_sum(keys, values, size, xp):
    """:func:`sum_by_key` by counting into ``size`` buckets (no sort)."""
    keys, values = readable(keys), readable(values)
    present = xp.bincount(keys, minlength=size) > 0
    ukeys = xp.flatnonzero(present)
    sums = xp.bincount(keys, weights=values, minlength=size)
    keep_negative_zeros(sums, keys, values)
    sums = sums[ukeys].astype(values.dtype)
    rank = xp.cumsum(present) - 1
    return ukeys, sums, rank[keys]


def keep_negative_zeros(view, flat, values):
    """-0.0 at each position of ``view`` (along its first axis, ``flat`` per entry of
    ``values``) where every entry added was -0.0: their IEEE sum, which ``add.at`` or
    ``bincount`` into zeros gives as +0.0 (a coalesced tensor's assignment keeps a stored
    -0.0); a complex tensor's real and imaginary parts each.  One pass over the
    values when none is -0.0."""
    xp = xp_of(values)
    if values.dtype.kind == "c":
        for part in ("real", "imag"):
            keep_negative_zeros(getattr(view, part), flat, getattr(values, part))
        return
    if values.dtype.kind != "f":
        return
    negative = (values == 0) & xp.signbit(values)
    if not bool(negative.any()):
        return
    counts = [xp.zeros(view.shape, xp.int64) for _ in range(2)]
    for count, which in zip(counts, (negative, ~negative)):
        add_at(count, flat, which.astype(xp.int64))
    view[(counts[0] > 0) & (counts[1] == 0)] = -0.0
