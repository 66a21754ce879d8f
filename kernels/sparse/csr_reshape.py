"""CSR reshape (2-D and batched 3-D): forward and backward kernels.

As the Paddle RFC says, via COO: the entries' (batch, row, col) coordinates
are restrided to the new shape, then grouped back into rows.  A C-order
reshape of rows with sorted columns keeps the entries in order, so the values
are shared; otherwise the entries are stably sorted by row.
"""
from ..core.dtypes import ALL
from ..core.registry import register_kernel
from ..core.xp import xp_of
from ..funcs.restride import index_dtype, restride
from ..funcs.shape import prod
from .convert import unpermute
from .data import CsrData, coo_to_csr_parts, csr_coords, csr_from_keys, csr_row_ids


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
    keys = xp.empty(x.nnz, dtype=index_dtype((rows,), dtype, xp=xp))
    cols = xp.empty(x.nnz, dtype=dtype)
    restride([csr_row_ids(x), x.cols], (prod(x.shape[:-1]), x.shape[-1]), (rows, new[-1]),
             out=(keys, cols))
    return csr_from_keys(keys, cols, new, dtype)


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
