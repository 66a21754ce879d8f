"""Sparse operands in a broadcast shape: flat keys, and alignment for binary ops.

An operand is *aligned* to the broadcast shape of a binary op
(:mod:`kernels.sparse.binary`): its rank padded with size-1 sparse dims, the
leading dense dims of the operand with fewer sparse dims folded, duplicates
summed, and entries repeated along broadcast sparse dims, as sorted unique
C-order flat keys over the output's sparse shape.  The gradient helpers map
values at the output's entries back to an aligned operand's stored entries,
or into a dense grid.  Keys are int64 and xp-generic (numpy or cupy).
"""
from typing import NamedTuple

import numpy as np

from ..core.size import check_bytes
from ..core.xp import add_at, xp_of
from ..funcs.shape import INT64_LIMIT, c_strides, prod
from ..funcs.sum_to_shape import sum_to_shape
from .data import CsrData, csr_coords, fold_dense, index_rows, sum_by_key


# ---------------------------------------------------------------- keys
def flatten(rows, shape, xp):
    """C-order int64 flat keys of coordinate ``rows`` in ``shape`` (size-1 dims skipped)."""
    keys = None
    for r, s in zip(rows, shape):
        if s == 1:
            keys = None if keys is None else keys * 1
            continue
        r = r.astype(xp.int64, copy=False)
        keys = r if keys is None else keys * s + r
    n = rows[0].shape[0] if rows else 0
    return xp.zeros(n, dtype=xp.int64) if keys is None else keys


def unflatten(keys, shape, xp, dtype=np.int64):
    """Coordinate rows of C-order flat ``keys`` in ``shape``."""
    rows = [None] * len(shape)
    for d in range(len(shape) - 1, -1, -1):
        if d == 0:
            rows[d] = keys.astype(dtype, copy=False)
        else:
            q = keys // shape[d]            # // and a product: far faster than divmod
            rows[d] = (keys - q * shape[d]).astype(dtype, copy=False)
            keys = q
    return rows


# ---------------------------------------------------------------- aligned operands
class Aligned(NamedTuple):
    """A sparse operand in the broadcast shape's sparse dims, duplicates summed.

    ``keys`` (sorted, unique, over the output's sparse shape) and ``values``
    ``[n, *dense]`` are what the forward combines.  ``ukeys`` are the summed
    coordinates over ``ashape`` (the operand's own sizes, 1 where padded),
    ``group`` maps each stored (folded) entry to its summed coordinate (None:
    one to one), ``src`` each key to its summed coordinate (None: one to one);
    ``dshape`` is the operand's dense shape after folding.
    """

    keys: object
    values: object
    ukeys: object
    group: object
    src: object
    ashape: tuple
    dshape: tuple


def coords(x):
    """Coordinate rows of a sparse operand's entries (a CSR's without a stacked copy)."""
    return csr_coords(x) if isinstance(x, CsrData) else index_rows(x.indices)


def check_offsets(op, rows, own, shape):
    """ValueError naming ``op`` when entries with coordinate ``rows`` reach a C-order flat
    offset of 2**63 in ``shape``: the int64 keys the kernels order and match entries by
    would wrap.  ``own`` are the operand's dims, 1 (or a None row) where it broadcasts
    over the whole dim.  Sparse dims that large are fine while the entries stay below;
    smaller ones are not read at all."""
    if prod(shape) < INT64_LIMIT:
        return
    maxima = [s - 1 if r is None or o != s else (int(r.max()) if r.shape[0] else 0)
              for r, o, s in zip(rows, own, shape)]
    reach = sum(m * s for m, s in zip(maxima, c_strides(shape)))
    if reach >= INT64_LIMIT:
        raise ValueError(f"{op}: the entries reach flat offset {reach} in the sparse dims "
                         f"{list(shape)}, past the 2**63 an int64 offset can address")


def align(x, out_shape, k, op):
    """Sparse ``x`` as an :class:`Aligned` operand with ``k`` sparse dims of ``out_shape``
    (``op`` names the caller in :func:`check_offsets`'s error)."""
    xp = xp_of(x.values)
    pad = len(out_shape) - len(x.shape)
    xf = x if isinstance(x, CsrData) else fold_dense(x, k - pad - x.sparse_dim)
    ashape = (1,) * pad + tuple(xf.shape[:len(xf.shape) - xf.values.ndim + 1])
    rows = coords(xf)
    check_offsets(op, [None] * pad + list(rows), ashape, out_shape[:k])
    keys = flatten(rows, ashape[pad:], xp)
    if getattr(xf, "coalesced", False):
        values, group = xf.values, None
    else:
        keys, values, group = sum_by_key(keys, xf.values, prod(ashape))
    ukeys, src = keys, None
    sshape = tuple(out_shape[:k])
    if ashape != sshape:
        _check_expansion(op, ukeys.shape[0], ashape, sshape, values)
        keys, src = _expand(ukeys, ashape, sshape, xp)
        values = values[src]
    return Aligned(keys, values, ukeys, group, src, ashape,
                   tuple(xf.shape[len(ashape) - pad:]))


def _check_expansion(op, n, ashape, sshape, values):
    """ValueError naming ``op``, before any work, if repeating ``n`` entries along the
    broadcast sparse dims would not fit in memory (coordinate rows, keys, sort order and
    source index, int64 each, and the values)."""
    factor = prod(s for a, s in zip(ashape, sshape) if a != s)
    per_entry = 8 * (len(sshape) + 4) + values.itemsize * prod(values.shape[1:])
    check_bytes(op, f"broadcasting a sparse operand's {n} entries from sparse dims "
                f"{list(ashape)} to {list(sshape)} repeats each {factor} times and",
                n * factor * per_entry, "of coordinates and values")


def _expand(ukeys, ashape, sshape, xp):
    """Repeat coordinates along the dims where ``ashape`` is 1 and ``sshape`` is not.

    Returns the sorted keys over ``sshape`` and, for each, its index in ``ukeys``.
    """
    rows = unflatten(ukeys, ashape, xp)
    src = xp.arange(ukeys.shape[0])
    for d, (a, s) in enumerate(zip(ashape, sshape)):
        if a == s:
            continue
        n = src.shape[0]
        rows = [xp.repeat(r, s) for r in rows]
        rows[d] = xp.tile(xp.arange(s, dtype=xp.int64), n)
        src = xp.repeat(src, s)
    keys = flatten(rows, sshape, xp)
    perm = xp.argsort(keys, kind="stable")
    return keys[perm], src[perm]


def project(keys, sshape, ashape, xp):
    """Output keys mapped to an operand's aligned keys (its size-1 dims dropped)."""
    if tuple(ashape) == tuple(sshape):
        return keys
    return flatten(unflatten(keys, sshape, xp), ashape, xp)


def reduce_to(a, out_keys, sshape, t, x_values_shape):
    """Gradient ``t`` at the output's entries reduced to an aligned operand's stored entries."""
    xp = xp_of(t)
    pk = project(out_keys, sshape, a.ashape, xp)
    n = a.ukeys.shape[0]
    acc = xp.zeros((n,) + tuple(t.shape[1:]), dtype=t.dtype)
    if n and pk.shape[0]:
        pos = xp.minimum(xp.searchsorted(a.ukeys, pk), n - 1)
        found = a.ukeys[pos] == pk
        if a.src is None and bool(xp.all(found)):
            acc[pos] = t
        else:
            add_at(acc, pos[found], t[found])
    dense_shape = (n,) + tuple(a.dshape)
    if tuple(acc.shape) != dense_shape:
        acc = sum_to_shape(acc, dense_shape)
    out = acc if a.group is None else acc[a.group]
    return out.reshape(x_values_shape)


def to_grid(rows, t, out_shape, k, shape):
    """Gradient ``t`` at output entries (coordinate ``rows``) summed into a dense ``shape``."""
    xp = xp_of(t)
    tp = (1,) * (len(out_shape) - len(shape)) + tuple(shape)
    t = sum_to_shape(t, (t.shape[0],) + tp[k:])
    keys = flatten(rows, tp[:k], xp)
    grid = xp.zeros((int(np.prod(tp[:k])),) + tp[k:], dtype=t.dtype)
    add_at(grid, keys, t)
    return grid.reshape(shape)
