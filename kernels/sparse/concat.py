"""Sparse concat and stack over lists of COO or CSR tensors, with backward.

concat: COO tensors are first brought to one sparse_dim by folding dense
dims (:func:`kernels.sparse.data.fold_dense`): to the largest input's, and
through ``axis`` when ``axis`` is a dense dim; then the index matrices and
values are joined, the concat axis' coordinates shifted by the sizes before
them.  CSR tensors (all 2-D or all batched 3-D) are joined row by row: each
output row is a run of one input row's entries along the batch or row axis,
or the runs of every input's row along the col axis (their cols shifted);
joining along axis 0 is a plain concatenation of the buffers.

stack: each input gets a new size-1 dim at ``axis`` (a sparse dim when it
lands among the sparse dims; a 2-D CSR becomes a batched 3-D CSR), then the
inputs are concatenated along it.

Index dtypes: numpy's promotion of the inputs' (int32 with int32 stays
int32), widened to int64 only when the output shape or nnz needs it.
Values take numpy's promotion of the value dtypes.  Each input's gradient
is the upstream values at its entries' images, on its own pattern.
"""
import numpy as np

from ..core.dtypes import ALL
from ..core.registry import register_kernel
from ..core.xp import xp_of
from ..funcs.join import join, joins
from ..funcs.restride import index_dtype
from ..funcs.shape import normalize_axis
from ..funcs.sum_to_shape import grad_in_dtype
from ..infermeta.structure import concat_sparse_dim
from .convert import unpermute
from .data import CooData, CsrData, csr_coords, fold_dense
from .segments import crows_of_lengths, expand_ranges, group_by_key, row_ranges

COO, CSR = "sparse_coo", "sparse_csr"


def _join_shape(xs, axis):
    shape = list(xs[0].shape)
    shape[axis] = sum(x.shape[axis] for x in xs)
    return tuple(shape)


def _index_dtype(arrays, shape, extent, xp):
    return index_dtype(shape, np.result_type(*[a.dtype for a in arrays]), extent=extent, xp=xp)


def _value_dtype(xs):
    return np.result_type(*[x.values.dtype for x in xs])


# ---------------------------------------------------------------- COO
def coo_concat_inputs(xs, axis):
    """The inputs folded to the common sparse_dim of :func:`concat_sparse_dim`."""
    sd = concat_sparse_dim([x.sparse_dim for x in xs], axis)
    return [fold_dense(x, sd - x.sparse_dim) for x in xs]


def concat_coo_folded(xs, axis):
    """Concatenate COO tensors that share their sparse_dim (``axis`` a sparse dim)."""
    xp = xp_of(xs[0].indices)
    shape = _join_shape(xs, axis)
    sd = xs[0].sparse_dim
    nnz = sum(x.nnz for x in xs)
    indices = xp.empty((sd, nnz), dtype=_index_dtype([x.indices for x in xs], shape[:sd], 0, xp))
    pos = off = 0
    for x in xs:
        part = indices[:, pos:pos + x.nnz]
        part[...] = x.indices
        if off:
            part[axis] += off
        pos, off = pos + x.nnz, off + x.shape[axis]
    values = join([x.values for x in xs], _value_dtype(xs))
    coalesced = axis == 0 and all(x.coalesced for x in xs)
    unique = all(x.coalesced or x.unique for x in xs)    # the inputs own disjoint ranges
    return CooData(indices, values, shape, coalesced, unique=unique)


@register_kernel("concat_coo", layout=COO, backends=("cpu", "gpu"), dtypes=ALL)
def concat_coo(xs, axis=0):
    """xs joined along ``axis``; see the module docstring."""
    axis = normalize_axis(axis, len(xs[0].shape), "concat")
    return concat_coo_folded(coo_concat_inputs(xs, axis), axis)


def split_values(xs, values):
    """``values`` cut into consecutive runs of each x's nnz, in x's value dtype."""
    out, pos = [], 0
    for x in xs:
        out.append(grad_in_dtype(values[pos:pos + x.nnz], x.values.dtype))
        pos += x.nnz
    return out


@register_kernel("concat_coo_grad", layout=COO, backends=("cpu", "gpu"), dtypes=ALL)
def concat_coo_grad(xs, out_grad, axis=0):
    """Each input's run of out_grad's values (its entries come out consecutively, in order)."""
    axis = normalize_axis(axis, len(xs[0].shape), "concat_grad")
    folded = coo_concat_inputs(xs, axis)
    values = out_grad.values
    grads, pos = [], 0
    for x, f in zip(xs, folded):
        g = grad_in_dtype(values[pos:pos + f.nnz].reshape(x.values.shape), x.values.dtype)
        grads.append(x._replace(values=g))
        pos += f.nnz
    return grads


# ---------------------------------------------------------------- CSR
def csr_concat_parts(xs, axis):
    """Row lengths and sources of CSR xs joined along ``axis``, over their concatenated entries.

    Returns
    -------
    lengths, src
        Each output row's entry count; the position, among all inputs'
        entries laid end to end, of every output entry.  Along axis 0 the
        order is unchanged: (None, a slice).
    """
    xp = xp_of(xs[0].cols)
    nd = len(xs[0].shape)
    if axis == 0:
        return None, slice(0, sum(x.nnz for x in xs))
    starts, lengths, pos = [], [], 0
    for x in xs:
        s, n = row_ranges(x.crows, x.batch, x.shape[-2])
        starts.append(s + pos)
        lengths.append(n)
        pos += x.nnz
    if axis == nd - 1:
        s, n = xp.stack(starts, axis=1).reshape(-1), xp.stack(lengths, axis=1)
        return n.sum(axis=1), expand_ranges(s, n.reshape(-1))
    batch = xs[0].batch            # explicit row counts: a batch of 0 has no -1 to infer
    s = xp.concatenate([a.reshape(batch, x.shape[1]) for a, x in zip(starts, xs)], axis=1)
    n = xp.concatenate([a.reshape(batch, x.shape[1]) for a, x in zip(lengths, xs)], axis=1)
    s, n = s.reshape(-1), n.reshape(-1)
    return n, expand_ranges(s, n)


@register_kernel("concat_csr", layout=CSR, backends=("cpu", "gpu"), dtypes=ALL)
def concat_csr(xs, axis=0):
    """xs (all 2-D or all 3-D) joined along ``axis``, as CSR; see the module docstring."""
    xp = xp_of(xs[0].cols)
    nd = len(xs[0].shape)
    axis = normalize_axis(axis, nd, "concat")
    shape = _join_shape(xs, axis)
    total = sum(x.nnz for x in xs)
    dtype = _index_dtype([x.cols for x in xs] + [x.crows for x in xs], shape, total, xp)
    offs = np.cumsum([0] + [x.shape[-1] for x in xs])[:-1].tolist() if axis == nd - 1 else None
    groups = [([x.cols for x in xs], dtype, offs), ([x.values for x in xs], _value_dtype(xs),
                                                     None)]
    if axis == 0:
        cols, values, crows = joins(groups + [_crows_group(xs, dtype)])
        return CsrData(crows, cols, values, shape)
    cols, values = joins(groups)
    lengths, src = csr_concat_parts(xs, axis)
    crows = crows_of_lengths(lengths.astype(dtype), shape[0] if nd == 3 else 1, shape[-2], dtype)
    return CsrData(crows, cols[src], values[src], shape)


def _crows_group(xs, dtype):
    """The :func:`kernels.funcs.join.joins` group of the crows of CSR xs joined along axis 0:
    batches (3-D) follow each other as they are; 2-D rows continue each from the entries
    before them."""
    if len(xs[0].shape) == 3:
        return [x.crows for x in xs], dtype, None
    ends = np.cumsum([x.nnz for x in xs]).tolist()
    return [xs[0].crows] + [x.crows[1:] for x in xs[1:]], dtype, [0] + ends[:-1]


@register_kernel("concat_csr_grad", layout=CSR, backends=("cpu", "gpu"), dtypes=ALL)
def concat_csr_grad(xs, out_grad, axis=0):
    """out_grad's values put back in the inputs' entry order, then cut per input."""
    axis = normalize_axis(axis, len(xs[0].shape), "concat_grad")
    src = csr_concat_parts(xs, axis)[1]
    values = out_grad.values if isinstance(src, slice) else unpermute(out_grad.values, src)
    return [x._replace(values=g) for x, g in zip(xs, split_values(xs, values))]


# ---------------------------------------------------------------- stack
def unsqueeze_coo(x, axis):
    """COO x with a size-1 dim at ``axis`` (a zero index row, or a size-1 dense dim), and None:
    the entry order is kept."""
    xp = xp_of(x.indices)
    shape = tuple(x.shape[:axis]) + (1,) + tuple(x.shape[axis:])
    sd = x.sparse_dim
    if axis > sd:
        d = axis - sd + 1
        values = x.values.reshape(x.values.shape[:d] + (1,) + x.values.shape[d:])
        return CooData(x.indices, values, shape, x.coalesced, unique=x.unique), None
    indices = xp.zeros((sd + 1, x.nnz), dtype=x.indices.dtype)
    indices[:axis] = x.indices[:axis]
    indices[axis + 1:] = x.indices[axis:]
    return CooData(indices, x.values, shape, x.coalesced, unique=x.unique), None


def unsqueeze_csr(x, axis):
    """2-D CSR x as a batched 3-D CSR with a size-1 dim at ``axis``, and the entry order used.

    Axis 0: one batch.  Axis 1: every row is a batch of one row.  Axis 2:
    entry (r, c) becomes row c of batch r, col 0; entries are regrouped by
    (r, c) (a stable counting sort), and the order is returned (else None).
    """
    xp = xp_of(x.cols)
    rows, cols = x.shape
    shape = tuple(x.shape[:axis]) + (1,) + tuple(x.shape[axis:])
    if axis == 0:
        return CsrData(x.crows, x.cols, x.values, shape), None
    starts, lengths = row_ranges(x.crows, 1, rows)
    if axis == 1:
        return CsrData(crows_of_lengths(lengths.astype(x.crows.dtype), rows, 1, x.crows.dtype),
                       x.cols, x.values, shape), None
    row, col = csr_coords(x)
    keys = row.astype(xp.int64) * cols + col
    row_starts = xp.concatenate([starts, xp.asarray([x.nnz], dtype=starts.dtype)])
    bounds, _, order = group_by_key(row_starts, keys, rows * cols, xp.arange(x.nnz))
    crows = crows_of_lengths(xp.diff(bounds).astype(x.crows.dtype), rows, cols, x.crows.dtype)
    return CsrData(crows, xp.zeros(x.nnz, dtype=x.cols.dtype), x.values[order], shape), order


def stack_by(unsqueeze, concat, xs, axis):
    """xs stacked along a new dim ``axis``: each unsqueezed there, then concatenated."""
    axis = normalize_axis(axis, len(xs[0].shape) + 1, "stack")
    return concat([unsqueeze(x, axis)[0] for x in xs], axis)


def stack_grad_by(unsqueeze, concat_grad, xs, out_grad, axis):
    """Each input's gradient: the concat gradient of the unsqueezed inputs, the new dim
    removed (and the entry order :func:`unsqueeze_csr` used undone)."""
    axis = normalize_axis(axis, len(xs[0].shape) + 1, "stack")
    parts = [unsqueeze(x, axis) for x in xs]
    grads = concat_grad([p for p, _ in parts], out_grad, axis)
    return [x._replace(values=unpermute(g.values, order).reshape(x.values.shape))
            for x, g, (_, order) in zip(xs, grads, parts)]


@register_kernel("stack_coo", layout=COO, backends=("cpu", "gpu"), dtypes=ALL)
def stack_coo(xs, axis=0):
    """COO xs of one shape stacked along a new dim ``axis``; see the module docstring."""
    return stack_by(unsqueeze_coo, concat_coo, xs, axis)


@register_kernel("stack_coo_grad", layout=COO, backends=("cpu", "gpu"), dtypes=ALL)
def stack_coo_grad(xs, out_grad, axis=0):
    """Each input's gradient on its own pattern."""
    return stack_grad_by(unsqueeze_coo, concat_coo_grad, xs, out_grad, axis)


@register_kernel("stack_csr", layout=CSR, backends=("cpu", "gpu"), dtypes=ALL)
def stack_csr(xs, axis=0):
    """2-D CSR xs of one shape stacked into a batched 3-D CSR along ``axis``."""
    return stack_by(unsqueeze_csr, concat_csr, xs, axis)


@register_kernel("stack_csr_grad", layout=CSR, backends=("cpu", "gpu"), dtypes=ALL)
def stack_csr_grad(xs, out_grad, axis=0):
    """Each input's gradient on its own pattern."""
    return stack_grad_by(unsqueeze_csr, concat_csr_grad, xs, out_grad, axis)
