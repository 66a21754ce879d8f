"""Sparse transpose (COO any rank with dense dims; CSR 2-D and batched 3-D), with backward.

COO: a permutation of the sparse dims is pure index work (the index rows
are reordered, the values shared); a permutation of the dense dims among
themselves transposes the values; a permutation that mixes the two folds the
dense dims into sparse dims first (:func:`kernels.sparse.data.fold_dense`,
as reshape does), giving dense_dim 0.  Entries keep their storage order, so
the coalesced flag survives only when the sparse dims stay in place.

CSR: the output is built directly as CSR by regrouping the entries under
their new (batch, row) -- a counting sort, scipy's ``csr_tocsc`` on the CPU
(:func:`kernels.sparse.segments.group_by_key`) -- for all six permutations
of a 3-D tensor; a 2-D transpose is exactly CSR -> CSC.
"""
import numpy as np

from ..core.dtypes import ALL
from ..core.registry import register_kernel
from ..core.xp import xp_of
from ..funcs import pool
from ..funcs.permute import resolve_perm
from ..funcs.restride import index_dtype
from ..funcs.threads import run_parallel, split_index
from ..infermeta.structure import keeps_dense_dims
from .convert import unpermute
from .data import CooData, CsrData, csr_coords, fold_dense
from .segments import crows_of_lengths, group_by_key, row_ranges

COO, CSR = "sparse_coo", "sparse_csr"


# ---------------------------------------------------------------- COO
def permute_rows(indices, rows):
    """``indices[rows]`` for an index matrix, copied by threads on the CPU; on the CPU
    a reversal (every 2-D transpose) is a view, as scipy's transpose shares its
    coordinate arrays: index matrices are read-only and owned by their tensors."""
    xp = xp_of(indices)
    if xp is not np:
        return indices[list(rows)]
    if tuple(rows) == tuple(range(indices.shape[0] - 1, -1, -1)):
        return indices[::-1]
    out = pool.empty((len(rows), indices.shape[1]), indices.dtype)

    def copy(piece):
        for j, r in enumerate(rows):
            out[(j,) + piece] = indices[(r,) + piece]
    run_parallel(copy, split_index((indices.shape[1],), out.nbytes))
    return out


@register_kernel("transpose_coo", layout=COO, backends=("cpu", "gpu"), dtypes=ALL)
def transpose_coo(x, perm):
    """x with its dims permuted; see the module docstring."""
    perm = resolve_perm(perm, len(x.shape), "transpose")
    if perm == tuple(range(len(perm))):
        return x
    if not keeps_dense_dims(perm, x.sparse_dim):
        x = fold_dense(x)
    sd = x.sparse_dim
    moved = perm[:sd] != tuple(range(sd))
    indices = permute_rows(x.indices, perm[:sd]) if moved else x.indices
    values = x.values
    if perm[sd:] != tuple(range(sd, len(perm))):
        xp = xp_of(values)
        values = xp.ascontiguousarray(values.transpose((0,) + tuple(p - sd + 1 for p in perm[sd:])))
    shape = tuple(x.shape[p] for p in perm)
    return CooData(indices, values, shape, x.coalesced and not moved,
                   unique=x.coalesced or x.unique)


@register_kernel("transpose_coo_grad", layout=COO, backends=("cpu", "gpu"), dtypes=ALL)
def transpose_coo_grad(x, out_grad, perm):
    """out_grad's values on x's pattern: the dense-dim transpose undone, folds unfolded.

    out_grad has out's entries, which are x's entries in x's order (dense dims
    folded element by element when the permutation mixed them).
    """
    perm = resolve_perm(perm, len(x.shape), "transpose_grad")
    values = out_grad.values
    sd = x.sparse_dim
    if keeps_dense_dims(perm, sd) and values.ndim > 1:
        inverse = np.argsort([0] + [p - sd + 1 for p in perm[sd:]])
        values = xp_of(values).ascontiguousarray(values.transpose(tuple(inverse)))
    return x._replace(values=values.reshape(x.values.shape))


# ---------------------------------------------------------------- CSR
def csr_transpose_parts(x, perm, payload):
    """crows, cols and ``payload`` regrouped for CSR x transposed by ``perm``.

    The entries' (batch, row, col) coordinates are permuted; each entry's new
    global row is its key, and :func:`group_by_key` regroups the entries
    stably.  In 2-D the key is the col and the regrouped rows are the new
    cols: one CSR -> CSC conversion carries ``payload`` along.
    """
    xp = xp_of(x.cols)
    shape = tuple(x.shape[p] for p in perm)
    dtype = index_dtype(shape, x.cols.dtype, extent=x.nnz, xp=xp)
    if len(shape) == 2:
        bounds, cols, payload = group_by_key(x.crows, x.cols, shape[0], payload)
        return bounds.astype(dtype, copy=False), cols.astype(dtype, copy=False), payload
    starts = row_ranges(x.crows, x.batch, x.shape[-2])[0]
    row_starts = xp.concatenate([starts, xp.asarray([x.nnz], dtype=starts.dtype)])
    coords = csr_coords(x)
    new = [coords[p] for p in perm]
    keys = new[0].astype(xp.int64) * shape[1] + new[1]
    bounds, _, order = group_by_key(row_starts, keys, shape[0] * shape[1],
                                    xp.arange(x.nnz, dtype=xp.int64))
    crows = crows_of_lengths(xp.diff(bounds), shape[0], shape[1], dtype)
    return crows, new[2][order].astype(dtype, copy=False), payload[order]


@register_kernel("transpose_csr", layout=CSR, backends=("cpu", "gpu"), dtypes=ALL)
def transpose_csr(x, perm):
    """x with its 2 or 3 dims permuted, as CSR; see the module docstring."""
    perm = resolve_perm(perm, len(x.shape), "transpose")
    if perm == tuple(range(len(perm))):
        return x
    crows, cols, values = csr_transpose_parts(x, perm, x.values)
    return CsrData(crows, cols, values, tuple(x.shape[p] for p in perm))


@register_kernel("transpose_csr_grad", layout=CSR, backends=("cpu", "gpu"), dtypes=ALL)
def transpose_csr_grad(x, out_grad, perm):
    """out_grad's values put back in x's entry order (the forward's regrouping undone)."""
    perm = resolve_perm(perm, len(x.shape), "transpose_grad")
    if perm == tuple(range(len(perm))):
        return x._replace(values=out_grad.values)
    xp = xp_of(x.cols)
    order = csr_transpose_parts(x, perm, xp.arange(x.nnz, dtype=xp.int64))[2]
    return x._replace(values=unpermute(out_grad.values, order))
