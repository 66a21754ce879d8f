"""Boxing: change a shard's sbp with one MPI collective (or a local step).

======================  ==========================  ==========================
src -> dst              dense                        sparse COO (by nonzeros)
======================  ==========================  ==========================
split -> broadcast      all-gather(v)               all-gather(v) of nonzeros
partial -> broadcast    all-reduce                  all-gather(v) (COO sums
                                                     duplicates)
partial -> split        reduce-scatter              all-to-all(v), by owner
split(i) -> split(j)    all-to-all(v)               all-to-all(v), by owner
broadcast -> split      local slice                 local filter
broadcast -> partial    rank 0 keeps, others zero   rank 0 keeps, others empty
split -> partial        local zero-pad              local (shift coordinates)
======================  ==========================  ==========================

Functions take and return this rank's physical data (an array, or a COO
``(indices, values)`` pair) given the logical shape; sizes are exchanged
where shard sizes differ (sparse nonzero counts).
"""
import numpy as np

from ..xp import to_numpy, xp_of
from . import comm
from .sbp import shard_sizes, shard_start

# Relative cost per logical byte of each change, for signature selection.
# Local steps cost (almost) nothing; a dense split -> partial zero-pad is
# discouraged because it makes full-size addends that must be reduced later.
_COST = {("S", "B"): 1.0, ("P", "B"): 2.0, ("P", "S"): 1.0, ("S", "S"): 1.0,
         ("B", "S"): 0.01, ("B", "P"): 0.01, ("S", "P"): 3.0}
_SPARSE_COST = {**_COST, ("S", "P"): 0.0}


def cost(src, dst, nbytes, sparse=False):
    """Relative cost of boxing ``nbytes`` of logical data from ``src`` to ``dst``."""
    if src == dst:
        return 0.0
    return (_SPARSE_COST if sparse else _COST)[(src.kind, dst.kind)] * max(nbytes, 1)


# ---------------------------------------------------------------- dense
def box_dense(a, shape, src, dst, group):
    """This rank's shard of the dense logical tensor after boxing ``src`` -> ``dst``."""
    if src == dst:
        return a
    if dst.kind == "P":
        return _to_partial(a, shape, src, group)
    if src.kind == "B":
        return _slice(a, dst.axis, group)
    if dst.kind == "B":
        if src.kind == "P":
            return comm.like(comm.allreduce(group, a), a)
        return _allgather(a, shape, src.axis, group)
    if src.kind == "P":
        return _reduce_scatter(a, shape, dst.axis, group)
    return _all_to_all(a, shape, src.axis, dst.axis, group)


def _slice(a, axis, group):
    n = a.shape[axis]
    lo = shard_start(n, group.size, group.rank)
    hi = lo + shard_sizes(n, group.size)[group.rank]
    return a[(slice(None),) * axis + (slice(lo, hi),)]


def _to_partial(a, shape, src, group):
    xp = xp_of(a)
    if src.kind == "B":
        return a if group.rank == 0 else xp.zeros(shape, a.dtype)
    out = xp.zeros(shape, a.dtype)
    lo = shard_start(shape[src.axis], group.size, group.rank)
    out[(slice(None),) * src.axis + (slice(lo, lo + a.shape[src.axis]),)] = a
    return out


def _front(a, axis):
    """Host ``a`` with ``axis`` moved first, C-contiguous: its slices are flat runs."""
    return np.ascontiguousarray(np.moveaxis(comm.host(a), axis, 0))


def _inner(shape, axis):
    n = 1
    for i, s in enumerate(shape):
        n *= s if i != axis else 1
    return n


def _allgather(a, shape, axis, group):
    counts = [s * _inner(shape, axis) for s in shard_sizes(shape[axis], group.size)]
    flat = comm.allgatherv(group, _front(a, axis), counts)
    rest = tuple(s for i, s in enumerate(shape) if i != axis)
    return comm.like(np.moveaxis(flat.reshape((shape[axis],) + rest), 0, axis), a)


def _reduce_scatter(a, shape, axis, group):
    sizes = shard_sizes(shape[axis], group.size)
    counts = [s * _inner(shape, axis) for s in sizes]
    flat = comm.reduce_scatter(group, _front(a, axis), counts)
    rest = tuple(s for i, s in enumerate(shape) if i != axis)
    return comm.like(np.moveaxis(flat.reshape((sizes[group.rank],) + rest), 0, axis), a)


def _all_to_all(a, shape, src_axis, dst_axis, group):
    """split(src_axis) -> split(dst_axis): rank q gets our block of its dst slice."""
    si = shard_sizes(shape[src_axis], group.size)
    sj = shard_sizes(shape[dst_axis], group.size)
    me = group.rank
    inner = _inner(a.shape, dst_axis)               # elements per dst-axis index, ours
    send = [s * inner for s in sj]
    block = [list(a.shape) for _ in range(group.size)]
    for q in range(group.size):
        block[q][src_axis], block[q][dst_axis] = si[q], sj[me]
    recv = [int(np.prod(b)) for b in block]
    flat = comm.alltoallv(group, _front(a, dst_axis), send, recv)
    parts, at = [], 0
    for b, n in zip(block, recv):
        moved = [b[dst_axis]] + [s for i, s in enumerate(b) if i != dst_axis]
        parts.append(np.moveaxis(flat[at:at + n].reshape(moved), 0, dst_axis))
        at += n
    return comm.like(np.concatenate(parts, axis=src_axis), a)


# ---------------------------------------------------------------- sparse COO
def box_coo(indices, values, shape, src, dst, group):
    """(indices, values) of this rank's COO shard after boxing ``src`` -> ``dst``.

    Split axes must be sparse dims.  Every change goes through partial_sum,
    which for COO is free: a nonzero lives on one rank, and COO sums duplicates.
    """
    if src == dst:
        return indices, values
    if src.kind == "B" and dst.kind == "S":
        return _coo_filter(indices, values, shape, dst.axis, group)
    if src.kind == "B":
        indices, values = _coo_rank0(indices, values, group)
    elif src.kind == "S":
        indices = _coo_shift(indices, shape, src.axis, group, +1)
    if dst.kind == "P":
        return indices, values
    if dst.kind == "B":
        return _coo_allgather(indices, values, group)
    return _coo_route(indices, values, shape, dst.axis, group)


def _coo_rank0(indices, values, group):
    if group.rank == 0:
        return indices, values
    return indices[:, :0], values[:0]


def _coo_shift(indices, shape, axis, group, sign):
    xp = xp_of(indices)
    lo = shard_start(shape[axis], group.size, group.rank)
    if lo == 0:
        return indices
    out = xp.array(indices, copy=True)
    out[axis] += sign * lo
    return out


def _coo_filter(indices, values, shape, axis, group):
    lo = shard_start(shape[axis], group.size, group.rank)
    hi = lo + shard_sizes(shape[axis], group.size)[group.rank]
    keep = (indices[axis] >= lo) & (indices[axis] < hi)
    return _coo_shift(indices[:, keep], shape, axis, group, -1), values[keep]


def _exchange(group, indices, values, send_counts):
    """All-to-all(v) of nonzeros (columns of indices, rows of values), counts exchanged."""
    counts = comm.allgather_ints(group, send_counts)
    recv = counts[:, group.rank]
    width = int(np.prod(values.shape[1:]))
    idx = comm.alltoallv(group, indices.T, [c * indices.shape[0] for c in send_counts],
                         [c * indices.shape[0] for c in recv])
    val = comm.alltoallv(group, values, [c * width for c in send_counts],
                         [c * width for c in recv])
    nnz = int(recv.sum())
    return (comm.like(idx.reshape(nnz, indices.shape[0]).T, indices),
            comm.like(val.reshape((nnz,) + values.shape[1:]), values))


def _coo_allgather(indices, values, group):
    counts = comm.allgather_ints(group, [values.shape[0]])[:, 0]
    width = int(np.prod(values.shape[1:]))
    idx = comm.allgatherv(group, indices.T, [c * indices.shape[0] for c in counts])
    val = comm.allgatherv(group, values, [c * width for c in counts])
    nnz = int(counts.sum())
    return (comm.like(idx.reshape(nnz, indices.shape[0]).T, indices),
            comm.like(val.reshape((nnz,) + values.shape[1:]), values))


def _coo_route(indices, values, shape, axis, group):
    """Send each nonzero to the rank whose split(axis) slice holds it."""
    xp = xp_of(indices)
    starts = xp.asarray([shard_start(shape[axis], group.size, r) for r in range(group.size)])
    owner = xp.searchsorted(starts, indices[axis], side="right") - 1
    order = xp.argsort(owner, kind="stable")
    send = [int(c) for c in to_numpy(xp.bincount(owner, minlength=group.size))]
    idx, val = _exchange(group, indices[:, order], values[order], send)
    return _coo_shift(idx, shape, axis, group, -1), val
