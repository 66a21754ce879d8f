"""Layout conversions (dense, COO, CSR) and coalesce, with their backward kernels.

Every backward keeps its input's sparsity pattern: a sparse ``x_grad`` has x's
indices (or crows and cols) and one gradient per stored entry, duplicates
included; a dense ``x_grad`` is the gradient densified.

The kernels are xp-generic and registered for 'cpu' and 'gpu', except
csr_to_coo, coo_to_csr and coo_to_csr_grad, whose 'gpu' kernels (below
each 'cpu' one) run ``csr_coo.cu`` through :mod:`kernels.gpu.csr_coo`.  Scatter-add (``add.at``),
sorting and segmented sums (``add.reduceat``) are not array-API operations:
numpy runs them here on the CPU and cupy's versions of the same calls on a GPU.
"""
from ..core.dtypes import ALL
from ..core.registry import register_kernel
from ..core.xp import add_at, xp_of
from ..funcs.restride import index_dtype
from ..funcs.shape import INT64_LIMIT, prod
from ..gpu import csr_coo as cuda
from ..gpu.backend import device
from .data import (CooData, CsrData, coo_to_csr_parts, csr_coords, csr_indices_cuda, flat_keys,
                   fold_dense, keep_negative_zeros, row_keys, row_order)

COO, CSR, DENSE = "sparse_coo", "sparse_csr", "dense"


# ---------------------------------------------------------------- shared steps
def coo_of_csr(x):
    """A CSR tensor as COO (all dims sparse), entries in storage order, values shared."""
    xp = xp_of(x.cols)
    return CooData(xp.stack(csr_coords(x)), x.values, x.shape, False)


def scatter_dense(indices, values, shape, unique, op):
    """A dense array of ``shape`` holding ``values`` at ``indices`` (duplicates summed)."""
    xp = xp_of(values)
    sd = indices.shape[0]
    out = xp.zeros(shape, dtype=values.dtype)
    if values.shape[0] == 0:
        return out
    flat = flat_keys(indices, shape[:sd], op)
    view = out.reshape((prod(shape[:sd]),) + tuple(shape[sd:]))
    if unique:
        view[flat] = values
    else:
        add_at(view, flat, values)
        keep_negative_zeros(view, flat, values)
    return out


def gather_dense(g, indices, op):
    """The entries of dense ``g`` at the sparse coordinates ``indices``: [nnz, *dense]."""
    sd = indices.shape[0]
    flat = flat_keys(indices, g.shape[:sd], op)
    return g.reshape((prod(g.shape[:sd]),) + tuple(g.shape[sd:]))[flat]


def coalesce_parts(x, op="coalesce"):
    """Sort a COO tensor's entries and find its unique coordinates.

    Returns
    -------
    perm, starts, group
        The stable sorting permutation, the sorted positions where a new
        coordinate starts, and each original entry's unique-coordinate number;
        all None when the entries already are unique and sorted.
    """
    xp = xp_of(x.indices)
    if prod(x.shape[:x.sparse_dim]) >= INT64_LIMIT:     # no int64 offsets: sort the rows
        perm, new = _lexicographic(x.indices)
        if perm is None:
            return None, None, None
    else:
        keys = flat_keys(x.indices, x.shape[:x.sparse_dim], op)
        if not bool(xp.any(keys[1:] <= keys[:-1])):
            return None, None, None
        perm = xp.argsort(keys, kind="stable")
        keys = keys[perm]
        new = xp.concatenate([xp.ones(1, dtype=bool), keys[1:] != keys[:-1]])
    group = xp.empty(x.nnz, dtype=xp.int64)
    group[perm] = xp.cumsum(new) - 1
    return perm, xp.flatnonzero(new), group


def _lexicographic(indices):
    """(stable sorting permutation, where a new coordinate starts in the sorted order) of
    the coordinates as tuples, for sparse dims of 2**63 elements or more, which have no
    int64 offset (scipy's ``sum_duplicates`` sorts such coordinates this way too); (None,
    None) when they already are sorted and unique."""
    xp = xp_of(indices)
    perm = xp.lexsort(indices[::-1])          # lexsort's last key is the primary one
    rows = indices[:, perm]
    new = xp.concatenate([xp.ones(min(1, perm.shape[0]), dtype=bool),
                          xp.any(rows[:, 1:] != rows[:, :-1], axis=0)])
    if bool(xp.all(new)) and bool(xp.all(perm == xp.arange(perm.shape[0]))):
        return None, None
    return perm, new


# ---------------------------------------------------------------- to_dense
@register_kernel("coo_to_dense", layout=COO, backends=("cpu", "gpu"), dtypes=ALL)
def coo_to_dense(x):
    """Densify a COO tensor; duplicate coordinates are summed."""
    return scatter_dense(x.indices, x.values, x.shape, x.coalesced, "to_dense")


@register_kernel("csr_to_dense", layout=CSR, backends=("cpu", "gpu"), dtypes=ALL)
def csr_to_dense(x):
    """Densify a CSR tensor; duplicate (row, col) entries are summed."""
    return coo_to_dense(coo_of_csr(x))


@register_kernel("coo_to_dense_grad", layout=COO, backends=("cpu", "gpu"), dtypes=ALL)
def coo_to_dense_grad(x, out_grad):
    """out_grad at each of x's stored coordinates, on x's pattern."""
    return x._replace(values=gather_dense(out_grad, x.indices, "to_dense_grad"))


@register_kernel("csr_to_dense_grad", layout=CSR, backends=("cpu", "gpu"), dtypes=ALL)
def csr_to_dense_grad(x, out_grad):
    """out_grad at each of x's stored (batch, row, col) entries, on x's pattern."""
    xp = xp_of(x.cols)
    return x._replace(values=gather_dense(out_grad, xp.stack(csr_coords(x)), "to_dense_grad"))


# ---------------------------------------------------------------- to_sparse_coo
@register_kernel("dense_to_coo", layout=DENSE, backends=("cpu", "gpu"), dtypes=ALL)
def dense_to_coo(x, sparse_dim):
    """The nonzero blocks of dense x as a coalesced COO tensor with int64 indices."""
    xp = xp_of(x)
    mask = x != 0
    if sparse_dim < x.ndim:
        mask = xp.any(mask, axis=tuple(range(sparse_dim, x.ndim)))
    coords = xp.nonzero(mask)       # the mask picks the values: numpy takes 63 index arrays
    return CooData(xp.stack(coords).astype(xp.int64, copy=False), x[mask], tuple(x.shape), True)


@register_kernel("dense_to_coo_grad", layout=DENSE, backends=("cpu", "gpu"), dtypes=ALL)
def dense_to_coo_grad(x, out_grad):
    """out_grad densified: a gradient on the output's pattern is zero elsewhere."""
    return coo_to_dense(out_grad)


@register_kernel("dense_to_sparse_grad", layout=DENSE, backends=("cpu", "gpu"), dtypes=ALL)
def dense_to_sparse_grad(x, out_grad):
    """A dense gradient passes whole: dense -> sparse is the identity on the logical tensor.

    This is the kernel a ``backward(G)`` seed reaches when the converted
    tensor is the root (Paddle's rule; see ``_SparseTensor._root_grad``).
    """
    return out_grad


@register_kernel("csr_to_coo", layout=CSR, dtypes=ALL)
def csr_to_coo(x, sparse_dim):
    """A CSR tensor as COO; entries keep their storage order and values are shared."""
    return coo_of_csr(x)


@register_kernel("csr_to_coo", layout=CSR, backends=("gpu",), dtypes=ALL)
def csr_to_coo_gpu(x, sparse_dim):
    """A CSR tensor as COO in storage order; ``csr_coo.cu`` finds each entry's row."""
    return CooData(csr_indices_cuda(x), x.values, x.shape, False)


@register_kernel("csr_to_coo_grad", layout=CSR, backends=("cpu", "gpu"), dtypes=ALL)
def csr_to_coo_grad(x, out_grad):
    """The COO gradient's values on x's crows and cols (same entry order)."""
    return x._replace(values=out_grad.values)


@register_kernel("coo_to_coo", layout=COO, backends=("cpu", "gpu"), dtypes=ALL)
def coo_to_coo(x, sparse_dim):
    """Fold the leading dense dims until x has ``sparse_dim`` sparse dims."""
    return fold_dense(x, sparse_dim - x.sparse_dim)


@register_kernel("coo_to_coo_grad", layout=COO, backends=("cpu", "gpu"), dtypes=ALL)
def coo_to_coo_grad(x, out_grad):
    """The folded gradient's values, unfolded onto x's pattern."""
    return x._replace(values=out_grad.values.reshape(x.values.shape))


# ---------------------------------------------------------------- to_sparse_csr
@register_kernel("dense_to_csr", layout=DENSE, backends=("cpu", "gpu"), dtypes=ALL)
def dense_to_csr(x):
    """The nonzeros of a 2-D or 3-D dense x as CSR with int64 crows and cols."""
    return coo_to_csr(dense_to_coo(x, x.ndim))


@register_kernel("dense_to_csr_grad", layout=DENSE, backends=("cpu", "gpu"), dtypes=ALL)
def dense_to_csr_grad(x, out_grad):
    """out_grad densified."""
    return csr_to_dense(out_grad)


def _csr_parts(x):
    """(crows, cols, perm) of COO x converted to CSR, dense dims folded first."""
    x = fold_dense(x)
    dtype = index_dtype(x.shape, x.indices.dtype, extent=x.nnz, xp=xp_of(x.indices))
    return coo_to_csr_parts(x.indices, x.shape, dtype, x.coalesced)


@register_kernel("coo_to_csr", layout=COO, dtypes=ALL)
def coo_to_csr(x):
    """COO to CSR: dense dims folded, entries stably sorted by row where needed.

    Duplicates are kept, so every COO entry is one CSR entry.
    """
    crows, cols, perm = _csr_parts(x)
    values = x.values.reshape(-1)
    return CsrData(crows, cols, values if perm is None else values[perm], tuple(x.shape))


@register_kernel("coo_to_csr_grad", layout=COO, dtypes=ALL)
def coo_to_csr_grad(x, out_grad):
    """The CSR gradient's values put back in x's entry order."""
    perm = _csr_parts(x)[2]
    return x._replace(values=unpermute(out_grad.values, perm).reshape(x.values.shape))


@register_kernel("coo_to_csr", layout=COO, backends=("gpu",), dtypes=ALL)
def coo_to_csr_gpu(x):
    """COO to CSR on the GPU: entries stably sorted by row where needed, then
    ``csr_coo.cu`` counts crows from the sorted rows; duplicates are kept."""
    x, perm = _by_row(x)
    dtype = index_dtype(x.shape, x.indices.dtype, extent=x.nnz, xp=xp_of(x.indices))
    indices = x.indices if perm is None else x.indices[:, perm]
    indices = indices.astype(dtype, copy=False)
    crows = cuda.coo_to_crows(device(), indices, x.shape)
    values = x.values.reshape(-1)
    return CsrData(crows, indices[-1], values if perm is None else values[perm], tuple(x.shape))


@register_kernel("coo_to_csr_grad", layout=COO, backends=("gpu",), dtypes=ALL)
def coo_to_csr_grad_gpu(x, out_grad):
    """The CSR gradient's values put back in x's entry order (the GPU's row order)."""
    perm = _by_row(x)[1]
    return x._replace(values=unpermute(out_grad.values, perm).reshape(x.values.shape))


def _by_row(x):
    """x with dense dims folded, and the stable row order of its entries (None: sorted,
    as a coalesced x's are without a look)."""
    x = fold_dense(x)
    return x, None if x.coalesced else row_order(row_keys(x.indices, x.shape))


def unpermute(values, perm):
    """``v`` with ``v[perm] = values``: undo a gather by ``perm`` (None: identity)."""
    if perm is None:
        return values
    out = xp_of(values).empty_like(values)
    out[perm] = values
    return out


# ---------------------------------------------------------------- coalesce
@register_kernel("coalesce_coo", layout=COO, backends=("cpu", "gpu"), dtypes=ALL)
def coalesce_coo(x):
    """Sum duplicate coordinates and sort them in C order; sorted unique x is shared."""
    return x if x.coalesced else coalesced_with_group(x)[0]


def coalesced_with_group(x, op="coalesce"):
    """(x coalesced, each of x's entries' position in it, or None where x already was
    sorted and unique)."""
    perm, starts, group = coalesce_parts(x, op)
    if perm is None:
        return x._replace(coalesced=True), None
    xp = xp_of(x.values)
    values = xp.add.reduceat(x.values[perm], starts, axis=0).astype(x.values.dtype, copy=False)
    return CooData(x.indices[:, perm[starts]], values, x.shape, True), group


@register_kernel("coalesce_coo_grad", layout=COO, backends=("cpu", "gpu"), dtypes=ALL)
def coalesce_coo_grad(x, out_grad):
    """Each of x's entries gets the gradient of the coordinate it was summed into."""
    group = None if x.coalesced else coalesce_parts(x, "coalesce_grad")[2]
    return x._replace(values=out_grad.values if group is None else out_grad.values[group])


# ---------------------------------------------------------------- lookup
def lookup_values(indices, shape, g, op):
    """The values of COO ``g`` (any pattern) at the coordinates ``indices``, 0 where absent.

    Duplicates in ``g`` are summed first; the result is [nnz, *dense_dims]
    with x's dense dims, as ``shape`` has them after ``indices.shape[0]``.
    """
    xp = xp_of(g.values)
    sd = indices.shape[0]
    if g.sparse_dim > sd:     # fold x's dense dims into coordinates; never densify g
        k = g.sparse_dim - sd
        block = xp.zeros((indices.shape[1],) + tuple(shape[sd:]), dtype=bool)
        folded = fold_dense(CooData(indices, block, tuple(shape)), k).indices
        got = lookup_values(folded, shape, g, op)
        return got.reshape((indices.shape[1],) + tuple(shape[sd:]))
    g = coalesce_coo(fold_dense(g, sd - g.sparse_dim))
    keys = flat_keys(indices, shape[:sd], op)
    gkeys = flat_keys(g.indices, shape[:sd], op)
    out_shape = (indices.shape[1],) + tuple(shape[sd:])
    if gkeys.shape[0] == 0:
        return xp.zeros(out_shape, dtype=g.values.dtype)
    pos = xp.minimum(xp.searchsorted(gkeys, keys), gkeys.shape[0] - 1)
    found = (gkeys[pos] == keys).reshape((-1,) + (1,) * (len(out_shape) - 1))
    return xp.where(found, g.values[pos], xp.zeros((), dtype=g.values.dtype))
