"""Sparse add, subtract, multiply and divide with numpy broadcasting, and their gradients.

Sparse with sparse (one layout) works on the logical values: each operand is
*aligned* to the broadcast shape (:mod:`kernels.sparse.align`), as sorted
unique flat keys.  add, subtract and divide merge the keys (union; divide
gives numpy's value at each coordinate, so ``x/0`` is ±inf and ``0/y`` is 0),
multiply intersects them.  The result is coalesced.  On the CPU, operands of
one shape and sparse structure whose rows are sorted and unique take the
compiled merge instead (:mod:`kernels.sparse.merge`), forward and backward.

Sparse times (or divided by) dense keeps the sparse operand's entries, one
for one, when the broadcast adds no sparse dim; otherwise it goes through the
aligned form.  Sparse plus or minus dense is dense.

A gradient is computed at the output's entries and reduced back to each
operand: over the output entries its coordinates were broadcast to, over
broadcast dense dims, and from the summed coordinate to every stored entry
(duplicates included).  A backward computes only the gradients its
``grad_mask`` asks for (``optional_grads``).  All kernels are xp-generic
('cpu' and 'gpu').
"""
from functools import partial
from typing import NamedTuple

import numpy as np

from ..core.dtypes import ALL
from ..core.registry import register_kernel
from ..core.xp import add_at, place_of, xp_of
from ..core.owned import lock, recall, remember
from ..funcs import pool
from ..funcs.restride import index_dtype
from ..funcs.shape import INT64_LIMIT, prod
from ..funcs.sum_to_shape import grad_in_dtype, sum_to_shape
from ..funcs.threads import run_parallel
from ..funcs.elementwise import BINARY, BOTH, quiet, result_dtype
from ..infermeta.elementwise import broadcast_shape
from . import merge
from .align import Aligned, align, coords, flatten, reduce_to, to_grid, unflatten
from .data import CooData, CsrData, crows_from_keys, index_rows, row_ids
from .segments import crows_of_bounds

COO, CSR, DENSE = "sparse_coo", "sparse_csr", "dense"
BACKENDS = ("cpu", "gpu")


# ---------------------------------------------------------------- combining
def _dtype(t):
    return t.values.dtype if isinstance(t, (CooData, CsrData)) else t.dtype


def _meta(op, x, y):
    """The broadcast shape and numpy's result dtype of ``x op y``."""
    out_shape = broadcast_shape(op, tuple(x.shape), tuple(y.shape))
    return out_shape, result_dtype(op, BINARY[op], _dtype(x), _dtype(y))


# Merging two sorted unique key arrays.  numpy: a stable sort of their concatenation,
# which its timsort does as one merge of the two runs.  A GPU (cupy's sort is a radix sort
# of all 2n keys): each key's slot is its own index plus the number of the other array's
# keys below it, by binary search.  At two runs of 1e7 keys the binary search took 0.65 s
# (union) and 0.30 s (intersect) on the CPU against the sort's 0.28 and 0.18; on an H200
# it made a COO add of 1e7 + 1e7 entries 4.38 -> 3.14 ms (2026-11-28).
def _sorted_concatenation(a, b):
    """(keys, perm): a then b, stably sorted, and the sorting permutation."""
    perm = np.argsort(np.concatenate([a, b]), kind="stable")
    return np.concatenate([a, b])[perm], perm


def union(a, b, xp):
    """Merge two sorted unique key arrays: (keys, positions of a's, positions of b's)."""
    na, nb = a.shape[0], b.shape[0]
    if xp is np:
        keys, perm = _sorted_concatenation(a, b)
    else:
        pa = xp.arange(na) + xp.searchsorted(b, a, side="left")
        pb = xp.arange(nb) + xp.searchsorted(a, b, side="right")
        keys = xp.empty(na + nb, dtype=np.result_type(a.dtype, b.dtype))
        keys[pa] = a
        keys[pb] = b
    new = xp.ones(keys.shape[0], dtype=bool)
    new[1:] = keys[1:] != keys[:-1]
    slot = xp.cumsum(new) - 1
    if xp is np:
        out = np.empty(na + nb, dtype=slot.dtype)
        out[perm] = slot
        return keys[new], out[:na], out[na:]
    return keys[new], slot[pa], slot[pb]


def intersect(a, b, xp):
    """Keys in both sorted unique arrays: (positions in a, positions in b)."""
    if xp is np:
        keys, perm = _sorted_concatenation(a, b)
        both = np.flatnonzero(keys[1:] == keys[:-1])     # a's copy sorts first (stable)
        return perm[both], perm[both + 1] - a.shape[0]
    if b.shape[0] == 0:
        return xp.zeros(0, dtype=xp.int64), xp.zeros(0, dtype=xp.int64)
    at = xp.searchsorted(b, a, side="left")
    hit = b[xp.minimum(at, b.shape[0] - 1)] == a
    return xp.flatnonzero(hit), at[hit]


def _full(n, dense, dtype, pos, values, xp):
    out = xp.zeros((n,) + tuple(dense), dtype=dtype)
    out[pos] = values
    return out


class Combined(NamedTuple):
    """Two aligned operands combined: output keys, each operand's values at them."""

    keys: object
    xv: object
    yv: object


def combine(op, a, b, dense, dtype, xp):
    """Each operand's values at the output keys (0 where it stores nothing)."""
    if op == "multiply":
        ia, ib = intersect(a.keys, b.keys, xp)
        return Combined(a.keys[ia], a.values[ia], b.values[ib])
    keys, pa, pb = union(a.keys, b.keys, xp)
    n = keys.shape[0]
    return Combined(keys, _full(n, dense, dtype, pa, a.values, xp),
                    _full(n, dense, dtype, pb, b.values, xp))


def apply(op, xv, yv, dtype):
    """The table's ``op`` on values, in ``dtype``, with numpy's inf and nan for a zero divisor."""
    xp = xp_of(xv)
    with quiet(xp, divide="ignore", invalid="ignore"):
        return BINARY[op].fn(xp, xv, yv).astype(dtype, copy=False)


def partials(op, g, xv, yv, dtype, need=BOTH):
    """The table's derivative: the output gradient ``g`` pulled back to x and y
    (only to those ``need`` marks; None for the other)."""
    xp = xp_of(g)
    out = apply(op, xv, yv, dtype) if op == "divide" and need[1] else None
    with quiet(xp, divide="ignore", invalid="ignore"):
        return BINARY[op].grad(xp, xv, yv, out, g, need)


# ---------------------------------------------------------------- outputs
def _index_dtype(shape, *indices):
    both32 = all(i.dtype == np.int32 for i in indices)
    return index_dtype(shape, np.int32) if both32 else np.int64


def coo_out(keys, values, out_shape, k, idt, xp):
    """A coalesced COO result from sorted unique flat keys over the first k dims."""
    rows = unflatten(keys, out_shape[:k], xp, idt)
    idx = xp.stack(rows) if rows else xp.zeros((0, keys.shape[0]), dtype=idt)
    return CooData(idx, values, tuple(out_shape), True)


def csr_out(keys, values, out_shape, idt, xp):
    """A CSR result from sorted unique flat keys over its 2-D or 3-D shape."""
    ncols = out_shape[-1]
    rowkeys = keys // ncols if ncols else keys
    cols = keys - rowkeys * ncols
    idt = index_dtype(out_shape, idt, extent=keys.shape[0], xp=xp)
    return CsrData(crows_from_keys(rowkeys, out_shape, idt), cols.astype(idt), values,
                   tuple(out_shape))


def _indices(x):
    return x.crows if isinstance(x, CsrData) else x.indices


def _sparse_dim(s):
    return len(s.shape) if isinstance(s, CsrData) else s.sparse_dim


def _k(x, y, out_shape):
    """The result's sparse dims: the larger of the sparse operands' placed in ``out_shape``."""
    n = len(out_shape)
    return max(n - len(s.shape) + _sparse_dim(s) for s in (x, y)
               if isinstance(s, (CooData, CsrData)))


# ---------------------------------------------------------------- same shape on the CPU
def _coo_rows(s):
    """(row pointers, columns) of COO s seen as one CSR matrix over its sparse dims, or
    None when its rows are out of order."""
    k = s.sparse_dim
    n_rows = prod(s.shape[:k - 1])
    keys = flatten(index_rows(s.indices)[:k - 1], s.shape[:k - 1], np) if k > 1 \
        else np.zeros(s.nnz, np.int64)
    if not s.coalesced and keys.shape[0] > 1 and bool(np.any(keys[1:] < keys[:-1])):
        return None                 # rows out of order (the walk checks each row's columns)
    return crows_from_keys(keys, (n_rows, 1), s.indices.dtype), s.indices[k - 1]


def _as_rows(s):
    """(row pointers, columns) of s seen as one CSR matrix over its sparse dims, or None;
    a COO's row pointers are remembered for its (locked) index matrix, so that operands
    used again (a loop's weight, a gradient on x's pattern) skip the search."""
    if isinstance(s, CsrData):
        return _global_indptr(s), s.cols
    key = ("rows", s.shape[:s.sparse_dim - 1])
    indptr = recall((s.indices,), key)
    if indptr is None:
        rows = _coo_rows(s)
        if rows is None:
            return None
        indptr = remember((s.indices,), key, lock(rows[0]))
    return indptr, s.indices[s.sparse_dim - 1]


def _global_indptr(x):
    """One row-pointer array over a (batched) CSR tensor's ``batch * rows`` rows."""
    if len(x.shape) == 2:
        return x.crows
    c2 = x.crows.reshape(x.batch, x.shape[1] + 1)
    base = np.cumsum(c2[:, -1]) - c2[:, -1]               # entries before each batch
    return np.concatenate([np.zeros(1, c2.dtype),
                           (c2[:, 1:] + base[:, None]).astype(c2.dtype).reshape(-1)])


def _eligible(x, y):
    """True for a CPU pair of one layout, shape and sparse structure that the walk can take."""
    if type(x) is not type(y) or tuple(x.shape) != tuple(y.shape) or not merge.usable(
            x.nnz, y.nnz, prod(x.shape[:_sparse_dim(x) - 1])):
        return False
    if place_of(x.values) != "cpu" or place_of(y.values) != "cpu":
        return False
    return isinstance(x, CsrData) or x.sparse_dim == y.sparse_dim


def provenance(op, x, y, forward=False):
    """x and y merged by :func:`kernels.sparse.merge.merge` (multiply: the intersection), or
    None (other operands take :func:`pair`).  A forward add, subtract or multiply of values
    of one dtype may have the walk compute the values too (:func:`merge.computes`)."""
    if not _eligible(x, y):
        return None
    rx, ry = _as_rows(x), _as_rows(y)
    if rx is None or ry is None:
        return None
    (ap, aj), (bp, bj) = rx, ry
    known = (_known_canonical(x), _known_canonical(y))
    if {ap.dtype, bp.dtype, bj.dtype} != {aj.dtype} or aj.dtype not in (np.int32, np.int64):
        ap, aj, bp, bj = (a.astype(np.int64) for a in (ap, aj, bp, bj))
    computed = forward and merge.computes(op, x.values, y.values)
    mg = merge.merge(ap, aj, bp, bj, union=op != "multiply",
                     values=(op, x.values, y.values) if computed else None, known=known)
    if mg is not None:
        for s, was_known in zip((x, y), known):
            if isinstance(s, CsrData) and not was_known:
                merge.remember_canonical(s.crows, s.cols)
    return mg


def _known_canonical(s):
    """True if s's rows are known sorted and free of duplicates: a coalesced COO, or a CSR
    whose buffers an earlier walk checked."""
    if isinstance(s, CooData):
        return bool(s.coalesced)
    return merge.known_canonical(s.crows, s.cols)


def _from_rows(like, mg, values, shape, idt):
    """A coalesced result of ``like``'s layout from the merge's rows and columns."""
    n = mg.cols.shape[0]
    if isinstance(like, CsrData):
        idt = index_dtype(shape, idt, extent=n, xp=np)
        return CsrData(crows_of_bounds(mg.indptr, shape).astype(idt, copy=False),
                       mg.cols.astype(idt, copy=False), values, tuple(shape))
    k = like.sparse_dim
    indices = pool.empty((k, n), idt)          # written once, no fresh pages
    np.copyto(indices[k - 1], mg.cols, casting="unsafe")
    if k == 2:
        row_ids(mg.indptr, indices[0])
    elif k > 2:
        rows = unflatten(row_ids(mg.indptr, np.empty(n, np.int64)), shape[:k - 1], np, idt)
        for d, row in enumerate(rows):
            indices[d] = row
    return CooData(indices, values, tuple(shape), True)


def same_shape(op, mg, x, y):
    """x op y from their merge, block by block on threads (x and y have one shape)."""
    values, out_shape = mg.values, tuple(x.shape)
    if values is None:
        dtype = _meta(op, x, y)[1]
        values = np.empty(mg.cols.shape + x.values.shape[1:], dtype)

        def fill(p):
            xv, yv = merge.at(x.values, p, "a", mg.union), merge.at(y.values, p, "b", mg.union)
            values[p.s:p.e] = apply(op, xv, yv, dtype)

        run_parallel(fill, mg.parts)
    return _from_rows(x, mg, values, out_shape, _index_dtype(out_shape, _indices(x),
                                                              _indices(y)))


def same_shape_grad(op, mg, x, y, out_grad, grad_mask=BOTH):
    """The gradients ``grad_mask`` asks for, from the merge, each on its operand's
    entries, block by block."""
    _, dtype = _meta(op, x, y)
    new = np.empty if mg.union else np.zeros        # a union writes every entry
    gx = new(x.values.shape, x.values.dtype) if grad_mask[0] else None
    gy = new(y.values.shape, y.values.dtype) if grad_mask[1] else None
    g = out_grad.values

    reads = BINARY[op].reads_operands

    def fill(p):
        xv = merge.at(x.values, p, "a", mg.union) if reads else None
        yv = merge.at(y.values, p, "b", mg.union) if reads else None
        tx, ty = partials(op, g[p.s:p.e], xv, yv, dtype, grad_mask)
        if tx is not None:
            merge.back(grad_in_dtype(tx, gx.dtype), p, "a", mg.union, gx)
        if ty is not None:
            merge.back(grad_in_dtype(ty, gy.dtype), p, "b", mg.union, gy)

    run_parallel(fill, mg.parts)
    return (None if gx is None else x._replace(values=gx),
            None if gy is None else y._replace(values=gy))


# ---------------------------------------------------------------- sparse with sparse
class Pair(NamedTuple):
    """Two sparse operands aligned and combined (what forward and backward share)."""

    out_shape: tuple
    dtype: object
    k: int
    a: Aligned
    b: Aligned
    c: Combined


def pair(op, x, y):
    """Align sparse x and y to the broadcast shape and combine their keys."""
    out_shape, dtype = _meta(op, x, y)
    k = _k(x, y, out_shape)
    a, b = align(x, out_shape, k, op), align(y, out_shape, k, op)
    return Pair(out_shape, dtype, k, a, b,
                combine(op, a, b, out_shape[k:], dtype, xp_of(x.values)))


def sparse_sparse(op, x, y):
    """x op y for two sparse operands of one layout: union or intersection, coalesced."""
    mg = provenance(op, x, y, forward=True)
    if mg is not None:
        return same_shape(op, mg, x, y)
    p = pair(op, x, y)
    xp = xp_of(p.c.keys)
    values = apply(op, p.c.xv, p.c.yv, p.dtype)
    idt = _index_dtype(p.out_shape, _indices(x), _indices(y))
    if isinstance(x, CsrData):
        return csr_out(p.c.keys, values, p.out_shape, idt, xp)
    return coo_out(p.c.keys, values, p.out_shape, p.k, idt, xp)


def sparse_sparse_grad(op, x, y, out_grad, grad_mask=BOTH):
    """The operands' gradients ``grad_mask`` asks for, each on its own pattern, entry
    for entry."""
    mg = provenance(op, x, y)
    if mg is not None:
        return same_shape_grad(op, mg, x, y, out_grad, grad_mask)
    p = pair(op, x, y)
    tx, ty = partials(op, out_grad.values, p.c.xv, p.c.yv, p.dtype, grad_mask)
    sshape = p.out_shape[:p.k]
    return (_reduced(x, p.a, p.c.keys, sshape, tx), _reduced(y, p.b, p.c.keys, sshape, ty))


def _reduced(s, a, keys, sshape, t):
    """Sparse operand s with gradient ``t`` (None: not asked for) reduced to its entries."""
    if t is None:
        return None
    g = reduce_to(a, keys, sshape, t, s.values.shape)
    return s._replace(values=grad_in_dtype(g, s.values.dtype))


# ---------------------------------------------------------------- sparse with dense
class OnPattern(NamedTuple):
    """A sparse operand's entries in the broadcast shape and the dense operand read there."""

    rows: list      # coordinate rows of the output's sparse dims
    sv: object      # the sparse operand's values at them
    dv: object      # the dense operand's values at them
    a: object       # the Aligned operand, or None when the entries are x's own
    k: int


def on_pattern(op, s, d, out_shape, coalesce):
    """Read dense ``d`` (broadcast to ``out_shape``) at sparse ``s``'s entries.

    With ``coalesce`` false and no sparse dim added or grown by the
    broadcast, the entries are s's own, in storage order; otherwise they are
    s aligned to the broadcast shape (duplicates summed, sorted).
    """
    xp = xp_of(s.values)
    sd = _sparse_dim(s)
    k = len(out_shape) - len(s.shape) + sd
    if not coalesce and tuple(out_shape[:k]) == tuple(s.shape[:sd]):
        rows, sv, a = coords(s), s.values, None
    else:
        a = align(s, out_shape, k, op)
        rows, sv = unflatten(a.keys, out_shape[:k], xp), a.values
    return OnPattern(rows, sv, _at_entries(d, rows, sv.shape[0], out_shape, k, xp), a, k)


def _at_entries(d, rows, n, out_shape, k, xp):
    """Dense ``d`` broadcast to ``out_shape``, read at the ``n`` entries whose first ``k``
    coordinates are ``rows``: d is indexed by them directly (a dim d broadcasts reads
    index 0), never broadcast to out_shape first, which may be far too large."""
    d = d.reshape((1,) * (len(out_shape) - d.ndim) + tuple(d.shape))
    at = tuple(r if d.shape[i] != 1 else 0 for i, r in enumerate(rows))
    return xp.broadcast_to(d[at], (n,) + tuple(out_shape[k:]))


def _sparse_result(s, p, values, out_shape):
    """The result on s's own entries (pattern kept; a COO whose coordinates were found
    rising is flagged coalesced, as it is) or on the aligned pattern."""
    if p.a is None:
        out = s._replace(values=values, shape=tuple(out_shape))
        if isinstance(s, CooData) and not s.coalesced and recall((s.indices,), "rising"):
            out = out._replace(coalesced=True)
        return out
    xp = xp_of(values)
    idt = _index_dtype(out_shape, _indices(s))
    if isinstance(s, CsrData):
        return csr_out(p.a.keys, values, out_shape, idt, xp)
    return coo_out(p.a.keys, values, out_shape, p.k, idt, xp)


def stores_each_once(s):
    """True if s's entries may be used one by one: each coordinate is stored once (a
    coalesced or unique COO, or CPU entries in canonical row order), so the logical values are the
    stored ones.  Otherwise duplicates are summed first: ``(2 - 1) / 0`` is inf where
    entry by entry ``2/0 + -1/0`` is nan, and bool duplicates or, they do not add.
    Sparse dims of 2**63 elements or more have no int64 offsets to sum duplicates by:
    their entries are used one by one."""
    if isinstance(s, CooData) and (s.coalesced or s.unique) \
            or prod(s.shape[:_sparse_dim(s)]) >= INT64_LIMIT:
        return True
    if s.values.dtype == np.bool_ or place_of(s.values) != "cpu":
        return False
    if isinstance(s, CsrData):
        return merge.is_canonical(_global_indptr(s), s.cols)
    known = recall((s.indices,), "rising")
    if known is None:           # flat offsets rising strictly: each coordinate once
        keys = flatten(index_rows(s.indices), s.shape[:s.sparse_dim], np)
        known = remember((s.indices,), "rising", bool(np.all(keys[1:] > keys[:-1])))
    return known


def sparse_dense(op, x, y):
    """Sparse x times or divided by dense y: a sparse result on x's pattern."""
    out_shape, dtype = _meta(op, x, y)
    p = on_pattern(op, x, y, out_shape, coalesce=not stores_each_once(x))
    return _sparse_result(x, p, apply(op, p.sv, p.dv, dtype), out_shape)


def dense_sparse(op, x, y):
    """Dense x times or divided by sparse y: a sparse result on y's (summed) pattern."""
    out_shape, dtype = _meta(op, x, y)
    p = on_pattern(op, y, x, out_shape, coalesce=op == "divide" or not stores_each_once(y))
    return _sparse_result(y, p, apply(op, p.dv, p.sv, dtype), out_shape)


def _sparse_grad(s, p, t, out_shape):
    """Gradient ``t`` at the result's entries, reduced to sparse operand s's entries
    (None when ``t`` is: a gradient not asked for)."""
    if t is None:
        return None
    shape = s.values.shape
    if p.a is None:
        g = sum_to_shape(t, shape)
    else:
        g = reduce_to(p.a, p.a.keys, out_shape[:p.k], t, shape)
    return s._replace(values=grad_in_dtype(g, s.values.dtype))


def _dense_grad(d, p, t, out_shape):
    """Gradient ``t`` at the result's entries summed into dense operand d (None: not
    asked for)."""
    if t is None:
        return None
    return grad_in_dtype(to_grid(p.rows, t, out_shape, p.k, d.shape), d.dtype)


def sparse_dense_grad(op, x, y, out_grad, grad_mask=BOTH):
    """Sparse x's gradient on its pattern and dense y's gradient, as ``grad_mask`` asks."""
    out_shape, dtype = _meta(op, x, y)
    p = on_pattern(op, x, y, out_shape, coalesce=not stores_each_once(x))
    tx, ty = partials(op, out_grad.values, p.sv, p.dv, dtype, grad_mask)
    return _sparse_grad(x, p, tx, out_shape), _dense_grad(y, p, ty, out_shape)


def dense_sparse_grad(op, x, y, out_grad, grad_mask=BOTH):
    """Dense x's gradient and sparse y's gradient on its pattern, as ``grad_mask`` asks."""
    out_shape, dtype = _meta(op, x, y)
    p = on_pattern(op, y, x, out_shape, coalesce=op == "divide" or not stores_each_once(y))
    tx, ty = partials(op, out_grad.values, p.dv, p.sv, dtype, grad_mask)
    return _dense_grad(x, p, tx, out_shape), _sparse_grad(y, p, ty, out_shape)


# ---------------------------------------------------------------- dense results
def _dense_of(s):
    """The dense form of a sparse operand (duplicates summed)."""
    xp = xp_of(s.values)
    out = xp.zeros(s.shape, dtype=s.values.dtype)
    add_at(out, tuple(coords(s)), s.values)
    return out


def mixed_dense(op, x, y):
    """Sparse plus or minus dense (either side): a dense result."""
    out_shape, dtype = _meta(op, x, y)
    xd = _dense_of(x) if isinstance(x, (CooData, CsrData)) else x
    yd = _dense_of(y) if isinstance(y, (CooData, CsrData)) else y
    return apply(op, xd, yd, dtype)


def _grad_of(t, g):
    """Dense gradient ``g`` summed to t's shape, read at t's entries when t is sparse
    (None when ``g`` is: a gradient not asked for)."""
    if g is None:
        return None
    g = sum_to_shape(g, tuple(t.shape))
    if not isinstance(t, (CooData, CsrData)):
        return grad_in_dtype(g, t.dtype)
    return t._replace(values=grad_in_dtype(g[tuple(coords(t))], t.values.dtype))


def mixed_dense_grad(op, x, y, out_grad, grad_mask=BOTH):
    """Each operand's share of the dense gradient (sparse ones read at their entries),
    for the operands ``grad_mask`` marks."""
    tx, ty = BINARY[op].grad(xp_of(out_grad), None, None, None, out_grad, grad_mask)
    return _grad_of(x, tx), _grad_of(y, ty)


# ---------------------------------------------------------------- registration
FAMILY = {(COO, COO): (sparse_sparse, sparse_sparse_grad),
          (CSR, CSR): (sparse_sparse, sparse_sparse_grad),
          (COO, DENSE): (sparse_dense, sparse_dense_grad),
          (CSR, DENSE): (sparse_dense, sparse_dense_grad),
          (DENSE, COO): (dense_sparse, dense_sparse_grad),
          (DENSE, CSR): (dense_sparse, dense_sparse_grad)}
SHORT = {COO: "coo", CSR: "csr", DENSE: "dense"}


def _register(op):
    for (lx, ly), (fwd, bwd) in FAMILY.items():
        if op in ("add", "subtract") and DENSE in (lx, ly):
            fwd, bwd = mixed_dense, mixed_dense_grad
        name = f"{op}_{SHORT[lx]}_{SHORT[ly]}"
        register_kernel(name, layout=lx, backends=BACKENDS, dtypes=ALL)(partial(fwd, op))
        register_kernel(name + "_grad", layout=lx, backends=BACKENDS, dtypes=ALL)(partial(bwd, op))


for _op in ("add", "subtract", "multiply", "divide"):
    _register(_op)
