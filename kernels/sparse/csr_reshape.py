"""CSR reshape (2-D and batched 3-D): forward and backward kernels.

As the Paddle RFC says, via COO: the entries' (batch, row, col) coordinates
are restrided to the new shape, then grouped back into rows.  A C-order
reshape keeps the entries in order, so the values are shared, where the rows'
columns ascend or each new row joins whole old rows; otherwise the entries are
stably sorted by row.
"""
import numpy as np

from ..core.dtypes import ALL
from ..core.owned import recall, remember
from ..core.registry import register_kernel
from ..core.xp import xp_of
from ..funcs import pool
from ..funcs.restride import index_dtype, restride
from ..funcs.shape import prod
from ..funcs.threads import run_parallel, split_index
from .convert import unpermute
from .data import CsrData, coo_to_csr_parts, csr_coords, csr_from_keys, csr_row_ids
from .merge import is_canonical
from .segments import crows_of_bounds, row_ranges


def csr_reshape_parts(x, new, order):
    """crows, cols and the entry permutation of CSR x reshaped to ``new``.

    In C order a (batch, row) pair is one global row of a (batch * rows,
    cols) matrix with the same flat offsets, so restriding global rows
    straight to ``(new batch * new rows, new cols)`` yields each entry's sort
    key and col at once.
    """
    xp = xp_of(x.cols)
    dtype = index_dtype(new, x.cols.dtype, extent=x.nnz, xp=xp)
    if order == "F":
        indices = restride(csr_coords(x), x.shape, new, order, dtype)
        return coo_to_csr_parts(indices, new, dtype)
    rows = prod(new[:-1])
    moved_none = _split_columns(x, new, dtype) or _merge_rows(x, new, dtype)
    if moved_none is not None:
        return moved_none
    keys = xp.empty(x.nnz, dtype=index_dtype((rows,), dtype, xp=xp))
    cols = xp.empty(x.nnz, dtype=dtype)
    restride([csr_row_ids(x), x.cols], (prod(x.shape[:-1]), x.shape[-1]), (rows, new[-1]),
             out=(keys, cols))
    return csr_from_keys(keys, cols, new, dtype, rows_sorted=_rows_stay_in_order(x, new))


def _rows_stay_in_order(x, new):
    """Whether a C-order reshape keeps the entries' rows ascending whatever the order of
    the columns in a row: each new row joins whole old rows (so no look at the data,
    which on a GPU is a read-back)."""
    return x.shape[-1] > 0 and new[-1] % x.shape[-1] == 0


def _split_columns(x, new, dtype):
    """(crows, cols, None) of a C-order reshape that cuts every global row of x into
    ``q`` rows of ``new[-1]`` columns (x's last dim is ``q * new[-1]``), on the CPU, where
    each row's columns ascend (a compiled walk checks once per tensor); else None.

    No entry moves: the new rows of an old row are its runs of columns below
    ``new[-1]``, below ``2 * new[-1]``, ..., found by binary searches inside the row
    (:func:`_run_starts`), and a column is its old one modulo ``new[-1]``.  That is
    one pass over the columns where the general path computes and checks every
    entry's flat offset: 20000² to 40000 x 10000 at nnz 1e7 took 10 ms against 42.
    """
    n_old, n_new = x.shape[-1], new[-1]
    if xp_of(x.cols) is not np or n_new == 0 or n_old % n_new or not x.nnz:
        return None
    q = n_old // n_new
    batch, rows = (x.shape[0] if len(x.shape) == 3 else 1), x.shape[-2]
    if batch * rows * (q - 1) > x.nnz or not _rows_ascend(x, batch, rows):
        return None
    starts, lengths = row_ranges(x.crows, batch, rows)
    bounds = _run_starts(x.cols, starts, starts + lengths, q, n_new)
    crows = crows_of_bounds(np.append(bounds.reshape(-1), x.nnz), new).astype(dtype)
    cols = x.cols.astype(dtype, copy=False) if q == 1 else _modulo(x.cols, n_new, dtype)
    return crows, cols, None


def _merge_rows(x, new, dtype):
    """(crows, cols, None) of a C-order reshape that joins every ``q`` consecutive global
    rows of x into one row of ``new[-1] = q * x.shape[-1]`` columns, on the CPU; else
    None.  Rows stay in order, so no entry moves whatever the order of the columns: a
    new row starts where every ``q``-th old one did, and a column gains its old row's
    place in its group times x's last dim, repeated over the row's entries (numpy's
    ``repeat`` by counts: 9 ms for 1e7 entries, where gathering the shift by each
    entry's row took 20)."""
    n_old, n_new = x.shape[-1], new[-1]
    if xp_of(x.cols) is not np or n_old == 0 or n_new == n_old or n_new % n_old or not x.nnz:
        return None
    q = n_new // n_old
    batch, rows = (x.shape[0] if len(x.shape) == 3 else 1), x.shape[-2]
    starts, lengths = row_ranges(x.crows, batch, rows)
    dtype_cols = np.result_type(x.cols.dtype, dtype)
    shift = (np.arange(batch * rows, dtype=dtype_cols) % q) * dtype_cols.type(n_old)
    cols = np.repeat(shift, lengths)
    np.add(cols, x.cols, out=cols)
    bounds = np.append(starts, x.nnz)
    return crows_of_bounds(bounds[::q], new).astype(dtype), cols.astype(dtype, copy=False), None


def _rows_ascend(x, batch, rows):
    """True if every row's columns strictly ascend (scipy's canonical format): for a 2-D
    CSR :func:`is_canonical`; a batched one is walked as its global rows once, and the
    answer remembered for its locked buffers."""
    if batch == 1:
        return is_canonical(x.crows, x.cols)
    if recall((x.cols, x.crows), "rows ascend") is True:
        return True
    starts, lengths = row_ranges(x.crows, batch, rows)
    if not is_canonical(np.append(starts, x.nnz), x.cols):
        return False
    return remember((x.cols, x.crows), "rows ascend", True)


def _run_starts(cols, starts, ends, q, width):
    """``[R, q]`` int64: where each row's run of columns from ``j * width`` begins (its
    first column at or above it): run 0 at the row's start, the others by a binary
    search in every row at once over the ascending columns of ``[starts, ends)``."""
    lo = np.repeat(starts[:, None], q, axis=1)
    hi = np.repeat(ends[:, None], q - 1, axis=1)
    limit = np.arange(1, q, dtype=np.int64) * width
    last = cols.shape[0] - 1
    found = lo[:, 1:]
    while True:
        open_ = found < hi
        if not open_.any():
            return lo
        mid = (found + hi) >> 1
        below = open_ & (cols[np.minimum(mid, last)] < limit)
        found[...] = np.where(below, mid + 1, found)
        hi = np.where(open_ & ~below, mid, hi)


def _modulo(cols, width, dtype):
    """``cols % width`` in ``dtype`` on threads, as ``cols - width * (cols // width)``
    (numpy divides by a constant with libdivide but not for ``%``: 6.6 against 19 ms
    for 1e7 int64 columns)."""
    out = pool.empty(cols.shape, np.result_type(cols.dtype, dtype))

    def piece(part):
        c, o = cols[part], out[part]
        np.floor_divide(c, width, out=o)
        np.multiply(o, width, out=o)
        np.subtract(c, o, out=o)
    run_parallel(piece, split_index(cols.shape, 2 * cols.nbytes))
    return out.astype(dtype, copy=False)


@register_kernel("reshape_csr", layout="sparse_csr", backends=("cpu", "gpu"), dtypes=ALL)
def reshape_csr(x, shape, order="C"):
    """x reshaped to the 2-D or 3-D ``shape`` (resolved by the infer-meta), reading in
    ``order``; same shape: x itself."""
    new = tuple(shape)
    if new == tuple(x.shape):
        return x
    crows, cols, perm = csr_reshape_parts(x, new, order)
    return CsrData(crows, cols, x.values if perm is None else x.values[perm], new)


@register_kernel("reshape_csr_grad", layout="sparse_csr", backends=("cpu", "gpu"), dtypes=ALL)
def reshape_csr_grad(x, out_grad, order="C"):
    """reshape(out_grad, x.shape) on x's pattern: the forward's entry order undone."""
    new = tuple(out_grad.shape)
    perm = None if new == tuple(x.shape) else csr_reshape_parts(x, new, order)[2]
    return x._replace(values=unpermute(out_grad.values, perm))
