"""Sparse sum over any mix of sparse and dense dims, and its gradient (paddle.sparse.sum).

The summed dense dims are summed inside the values; the summed sparse dims
are dropped from the coordinates (or set to 0 with ``keepdim``) and entries
that then share a coordinate are added (:func:`kernels.sparse.data.sum_by_key`),
so the result is coalesced.  Summing dense dims only keeps x's indices and
coalesced flag.  When every sparse dim is summed but dense dims remain (no
``keepdim``), the first remaining dim becomes the sparse dim with an entry at
each of its positions (none when x has no entries): stored entries are not
dropped for their values, as elsewhere in the library.  The gradient of each
stored entry is the output gradient at the coordinate it was summed into,
broadcast over the summed dense dims.
See :mod:`kernels.infermeta.sparse_reduce` for the result's shape.
"""
import numpy as np

from ..core.dtypes import ALL
from ..core.registry import register_kernel
from ..core.xp import xp_of
from ..funcs.shape import prod
from ..funcs.sum_to_shape import grad_in_dtype, sum_leading
from ..infermeta.sparse_reduce import sparse_sum_dtype, sum_plan
from .align import check_offsets, flatten, unflatten
from .binary import csr_out, stores_each_once
from .convert import coalesce_coo, coalesce_parts, coo_of_csr
from .data import CooData, CsrData, index_rows, sum_by_key

COO, CSR = "sparse_coo", "sparse_csr"
BOTH = ("cpu", "gpu")


def _free(x, plan):
    """The kept sparse dims that were not summed, and their sizes."""
    free = [d for d in plan.kept if d not in plan.axes]
    return free, tuple(x.shape[d] for d in free)


def _sum(x, plan, dtype):
    """(keys or None, values summed, group, free dims, their shape) of COO x under ``plan``.

    Summing every sparse dim adds all entries up (threaded, no keys compared)
    and gives a None group: each entry's gradient is the one output entry's.
    """
    xp = xp_of(x.values)
    values = xp.sum(x.values, axis=plan.value_axes, dtype=dtype, keepdims=True) \
        if plan.value_axes else x.values.astype(dtype, copy=False)
    if plan.kept == tuple(range(x.sparse_dim)) and not any(a < x.sparse_dim for a in plan.axes):
        return None, values, None, None, None
    free, shape = _free(x, plan)
    if not free:
        n = min(values.shape[0], 1)
        return xp.zeros(n, dtype=xp.int64), sum_leading(values, dtype)[:n], None, free, shape
    rows = [x.indices[d] for d in free]
    check_offsets("sum", rows, shape, shape)
    keys = flatten(rows, shape, xp)
    ukeys, sums, group = sum_by_key(keys, values, prod(shape))
    return ukeys, sums, group, free, shape


def _entrywise(x, dst):
    """Whether summing in ``dst`` may cast each stored entry of x before duplicates are
    added: not for bool values (duplicates are or-ed, not counted), nor for a cast that
    truncates (float to int or bool: 0.6 and 0.7 at one coordinate are 1.3, which sums as
    1 in int64, not 0 + 0), nor for any other cast where x may store a coordinate twice
    (int8 duplicates 100 and 100 are -56 in int8, so the sum is -56, not 200)."""
    src = x.values.dtype
    if src == np.bool_ or (src.kind in "fc" and dst.kind in "iub"):
        return False
    return src == dst or stores_each_once(x)


def _squeeze(values, plan, keepdim):
    if keepdim or not plan.value_axes:
        return values
    return values.reshape((values.shape[0],) + plan.shape[len(plan.kept):])


def sum_coo(x, axis, dtype, keepdim):
    """Sum COO x over ``axis`` (None: all), in ``dtype`` (None: numpy's sum dtype)."""
    plan = sum_plan(x.shape, x.sparse_dim, axis, keepdim)
    dtype = sparse_sum_dtype(x.values.dtype, dtype)
    if not _entrywise(x, dtype):
        x = coalesce_coo(x)
    elif len(plan.axes) == len(x.shape) == x.sparse_dim:
        return _total(x, plan, dtype)
    ukeys, values, _, free, fshape = _sum(x, plan, dtype)
    values = _squeeze(values, plan, keepdim)
    if ukeys is None:
        return CooData(x.indices, values, plan.shape, x.coalesced)
    xp = xp_of(values)
    if not plan.kept:
        return _promoted(values, plan, x.indices.dtype, xp)
    rows = dict(zip(free, unflatten(ukeys, fshape, xp, x.indices.dtype)))
    zeros = xp.zeros(ukeys.shape[0], dtype=x.indices.dtype)
    indices = xp.stack([rows.get(d, zeros) for d in plan.kept])
    return CooData(indices, values, plan.shape, True)


def _total(x, plan, dtype):
    """The sum of every entry of x (no dense dims): one entry at 0 of each kept dim (none
    for nnz 0), as :func:`_sum` gives, without its key work (a per-call path)."""
    xp = xp_of(x.values)
    n = min(x.values.shape[0], 1)
    values = sum_leading(x.values.astype(dtype, copy=False), dtype)[:n]
    return CooData(xp.zeros((len(plan.kept), n), x.indices.dtype), values, plan.shape, True)


def _promoted(values, plan, index_dtype, xp):
    """The one summed entry ([0 or 1, *plan.shape]) as entries along plan.shape[0]."""
    n = plan.shape[0] if values.shape[0] else 0
    return CooData(xp.arange(n, dtype=index_dtype)[None], values.reshape((n,) + plan.shape[1:]),
                   plan.shape, True)


def sum_coo_grad(x, out_grad, axis, dtype, keepdim):
    """Each entry gets the output gradient at its summed coordinate."""
    plan = sum_plan(x.shape, x.sparse_dim, axis, keepdim)
    xp = xp_of(x.values)
    g = out_grad.values
    _, _, group, free, _ = _sum(x, plan, x.values.dtype)
    if free is not None and group is not None:
        g = g[group]
    elif free is None and plan.kept and not x.coalesced \
            and not _entrywise(x, sparse_sum_dtype(x.values.dtype, dtype)):
        group = coalesce_parts(x, "sum_grad")[2]       # the forward coalesced x first:
        g = g if group is None else g[group]            # out holds x's unique coordinates
    lead = g.shape[0] if plan.kept else min(x.values.shape[0], 1)   # promoted: one entry
    keep = (lead,) + tuple(1 if a - x.sparse_dim + 1 in plan.value_axes else s
                           for a, s in enumerate(x.shape) if a >= x.sparse_dim)
    g = xp.broadcast_to(g.reshape(keep), x.values.shape)
    return x._replace(values=grad_in_dtype(g, x.values.dtype, copy=True))


def sum_csr(x, axis, dtype, keepdim):
    """Sum CSR x; the result is CSR of x's rank (numpy's keepdims shape).

    The full sum and the sum of each row (the last axis) read only the
    values and crows; other axes go through COO.
    """
    plan = sum_plan(x.shape, len(x.shape), axis, keepdim, csr=True)
    dtype = sparse_sum_dtype(x.values.dtype, dtype)
    entrywise = _entrywise(x, dtype)
    if entrywise and len(plan.axes) == len(x.shape):
        return _csr_total(x, plan.shape, dtype)
    if entrywise and plan.axes == (len(x.shape) - 1,):
        return _row_sums(x, plan, dtype)
    out = sum_coo(coo_of_csr(x), axis, dtype, True)
    xp = xp_of(out.values)
    keys = flatten(index_rows(out.indices), out.shape, xp)
    return csr_out(keys, out.values, plan.shape, x.crows.dtype, xp)


def _csr_total(x, shape, dtype):
    """The sum of every entry of CSR x as a CSR of all-ones ``shape``: one entry (none for
    nnz 0) in its one row, without :func:`csr_out`'s key work (a per-call path)."""
    xp = xp_of(x.values)
    n = min(x.nnz, 1)
    crows = xp.zeros(2, dtype=x.crows.dtype)
    crows[1] = n
    return CsrData(crows, xp.zeros(n, dtype=x.crows.dtype),
                   sum_leading(x.values, dtype)[:n], tuple(shape))


def _row_sums(x, plan, dtype):
    """Each row's sum by one segmented pass over the values (rows with no entries stay empty;
    the row starts in int64, which reduceat takes whatever the index dtype: uint8 crows
    sum to uint64)."""
    xp = xp_of(x.values)
    rows = x.shape[-2]
    c2 = x.crows.reshape(x.batch, rows + 1)
    counts = (c2[:, 1:] - c2[:, :-1]).reshape(-1)
    offsets = xp.repeat(xp.concatenate([xp.zeros(1, c2.dtype), xp.cumsum(c2[:, -1])])[:-1],
                        rows)
    starts = (c2[:, :-1].reshape(-1) + offsets)[counts > 0].astype(xp.int64, copy=False)
    values = x.values.astype(dtype, copy=False)
    sums = xp.add.reduceat(values, starts) if starts.shape[0] else values[:0]
    filled = (counts > 0).reshape(-1)
    keys = xp.flatnonzero(filled)
    return csr_out(keys, sums.astype(dtype, copy=False), plan.shape, x.crows.dtype, xp)


def sum_csr_grad(x, out_grad, axis, dtype, keepdim):
    """Each entry gets the output gradient at its summed coordinate."""
    xc = coo_of_csr(x)
    g = sum_coo_grad(xc, CooData(None, out_grad.values, None), axis, dtype, True)
    return x._replace(values=g.values)


register_kernel("sum_coo", layout=COO, backends=BOTH, dtypes=ALL)(sum_coo)
register_kernel("sum_csr", layout=CSR, backends=BOTH, dtypes=ALL)(sum_csr)
register_kernel("sum_coo_grad", layout=COO, backends=BOTH, dtypes=ALL)(sum_coo_grad)
register_kernel("sum_csr_grad", layout=CSR, backends=BOTH, dtypes=ALL)(sum_csr_grad)
