"""Sparse softmax over each slice's stored entries, and its gradient.

As ``paddle.sparse.nn.functional.softmax``: implicit zeros take no part, so
a slice's stored values v get ``exp(v - max) / sum(exp(v - max))`` and empty
slices stay empty.  The slices along a sparse axis are the entries sharing
every other sparse coordinate: they are grouped by that key (sorted once,
unless the entries already come slice by slice: a CSR's rows, a coalesced COO
along its last sparse dim), then reduced by segment max and ``reduceat`` sums
(cupy's max scatters, see :func:`kernels.core.xp.segment_max`).  Along a dense axis of a COO
tensor it is an ordinary softmax of each entry's values.  The gradient is
``y * (g - sum(g * y))`` over the same slices.
"""
from typing import NamedTuple

import numpy as np

from ..core.dtypes import FLOATS
from ..core.registry import register_kernel
from ..core.xp import segment_max, xp_of
from .align import check_offsets, flatten
from .convert import coo_of_csr

COO, CSR = "sparse_coo", "sparse_csr"
BOTH = ("cpu", "gpu")


class Slices(NamedTuple):
    """Entries grouped into slices: sorting permutation (None where the entries already
    come slice by slice) and segment starts."""

    perm: object
    starts: object
    group: object


def slices(x, axis, ordered=False):
    """The slices of COO x along sparse ``axis``: entries sharing the other coordinates.
    ``ordered``: the entries already come slice by slice (a CSR's rows, or a coalesced COO
    along its last sparse dim), so nothing is sorted."""
    xp = xp_of(x.indices)
    dims = [d for d in range(x.sparse_dim) if d != axis]
    shape = [x.shape[d] for d in dims]
    rows = [x.indices[d] for d in dims]
    check_offsets("softmax", rows, shape, shape)
    keys = flatten(rows, shape, xp) if dims \
        else xp.zeros(x.nnz, dtype=xp.int64)
    perm = None if ordered else xp.argsort(keys, kind="stable")
    sk = keys if ordered else keys[perm]
    new = xp.concatenate([xp.ones(min(1, sk.shape[0]), dtype=bool), sk[1:] != sk[:-1]])
    return Slices(perm, xp.flatnonzero(new), xp.cumsum(new) - 1)


def _sorted(v, s):
    return v if s.perm is None else v[s.perm]


def _segment(reduce, v, s):
    """``reduce(sorted values, starts)`` over each slice, read back at every entry (in
    sorted order)."""
    return reduce(_sorted(v, s), s.starts)[s.group]


def _segment_sum(v, starts):
    return xp_of(v).add.reduceat(v, starts, axis=0)


def _unsort(xp, sorted_values, s):
    if s.perm is None:
        return sorted_values
    out = xp.empty_like(sorted_values)
    out[s.perm] = sorted_values
    return out


def _ordered(x, axis, csr):
    """Whether x's entries come slice by slice along ``axis``: a CSR's (its rows, the
    only slices it takes), or a coalesced COO's along its last sparse dim."""
    return csr or (x.coalesced and axis == x.sparse_dim - 1)


def softmax_values(x, axis, csr=False):
    """The softmax of COO x's values along ``axis`` (``csr``: x is a CSR's entries).  A
    slice holding +inf is NaN throughout, as torch's, without numpy's warning for it."""
    with np.errstate(invalid="ignore"):
        return _softmax_values(x, axis, csr)


def _softmax_values(x, axis, csr):
    xp = xp_of(x.values)
    axis %= len(x.shape)
    if x.values.size == 0:          # no entries, or a dense dim of size 0: nothing to reduce
        return x.values
    if axis >= x.sparse_dim:
        v = x.values
        e = xp.exp(v - xp.max(v, axis=axis - x.sparse_dim + 1, keepdims=True))
        return e / xp.sum(e, axis=axis - x.sparse_dim + 1, keepdims=True)
    s = slices(x, axis, _ordered(x, axis, csr))
    v = _sorted(x.values, s)
    e = xp.exp(v - _segment(segment_max, x.values, s))
    return _unsort(xp, e / xp.add.reduceat(e, s.starts, axis=0)[s.group], s)


def softmax_grad_values(x, y, g, axis, csr=False):
    """``y * (g - sum(g * y))`` over the slices along ``axis``."""
    xp = xp_of(y)
    axis %= len(x.shape)
    if y.size == 0:
        return g
    if axis >= x.sparse_dim:
        return y * (g - xp.sum(g * y, axis=axis - x.sparse_dim + 1, keepdims=True))
    s = slices(x, axis, _ordered(x, axis, csr))
    return y * (g - _unsort(xp, _segment(_segment_sum, g * y, s), s))


@register_kernel("softmax_coo", layout=COO, backends=BOTH, dtypes=FLOATS)
def softmax_coo(x, axis):
    """Softmax of COO x's stored entries along ``axis``; x's pattern is kept."""
    return x._replace(values=softmax_values(x, axis))


@register_kernel("softmax_csr", layout=CSR, backends=BOTH, dtypes=FLOATS)
def softmax_csr(x, axis):
    """Softmax of each row's stored entries; x's crows and cols are kept."""
    return x._replace(values=softmax_values(coo_of_csr(x), axis, csr=True))


@register_kernel("softmax_coo_grad", layout=COO, backends=BOTH, dtypes=FLOATS)
def softmax_coo_grad(x, out, out_grad, axis):
    """The gradient on x's pattern."""
    return x._replace(values=softmax_grad_values(x, out.values, out_grad.values, axis))


@register_kernel("softmax_csr_grad", layout=CSR, backends=BOTH, dtypes=FLOATS)
def softmax_csr_grad(x, out, out_grad, axis):
    """The gradient on x's pattern."""
    return x._replace(values=softmax_grad_values(coo_of_csr(x), out.values, out_grad.values,
                                                 axis, csr=True))

