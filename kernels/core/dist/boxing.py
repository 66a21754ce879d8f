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
where shard sizes differ (sparse nonzero counts).  A collective writes its
result straight into a new array that is returned as is; shards split on a
later axis travel as strided MPI datatypes, not moved axes (see :mod:`.comm`).
"""
import numpy as np

from ...funcs.shape import prod
from ..xp import xp_of
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
    """This rank's shard of the dense logical tensor after boxing ``src`` -> ``dst``.

    On one rank every sbp's shard is the whole tensor, so ``a`` comes back as
    is.  Collectives write a new array that is returned without further copies.
    """
    if src == dst or group.size == 1:
        return a
    if dst.kind == "P":
        return _to_partial(a, shape, src, group)
    if src.kind == "B":
        return _slice(a, dst.axis, group)
    if dst.kind == "B" and src.kind == "P":
        out = comm.allreduce(group, a)
    elif dst.kind == "B":
        out = comm.allgather(group, a, src.axis, _sizes(shape, src.axis, group))
    elif src.kind == "P":
        out = comm.reduce_scatter(group, a, dst.axis, _sizes(shape, dst.axis, group))
    else:                     # split(i) -> split(j): rank q gets our block of its j slice
        out = comm.alltoall(group, a, dst.axis, _sizes(shape, dst.axis, group),
                            src.axis, _sizes(shape, src.axis, group))
    return comm.like(out, a)


def _sizes(shape, axis, group):
    return shard_sizes(shape[axis], group.size)


def _slice(a, axis, group):
    n = a.shape[axis]
    lo = shard_start(n, group.size, group.rank)
    hi = lo + shard_sizes(n, group.size)[group.rank]
    return a[(slice(None),) * axis + (slice(lo, hi),)]


def _to_partial(a, shape, src, group):
    xp = xp_of(a)
    if src.kind == "B":              # the other ranks' addends: a read-only zero view
        return a if group.rank == 0 else xp.broadcast_to(xp.zeros((), a.dtype), shape)
    out = xp.zeros(shape, a.dtype)
    lo = shard_start(shape[src.axis], group.size, group.rank)
    out[(slice(None),) * src.axis + (slice(lo, lo + a.shape[src.axis]),)] = a
    return out


# ---------------------------------------------------------------- sparse COO
def box_coo(indices, values, shape, src, dst, group):
    """(indices, values) of this rank's COO shard after boxing ``src`` -> ``dst``.

    Split axes must be sparse dims.  Every change goes through partial_sum,
    which for COO is free: a nonzero lives on one rank, and COO sums duplicates.
    """
    if src == dst or group.size == 1:
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


def _exchange(group, records, indices, values, send_counts):
    """All-to-all(v) of packed nonzero records (grouped by destination), after an
    all-to-all of the counts: O(P) integers per rank, never a P x P matrix."""
    recv = comm.alltoall_ints(group, send_counts)
    return _unpack(comm.alltoall(group, records, 0, send_counts, 0, recv), indices, values)


def _coo_allgather(indices, values, group):
    counts = comm.allgather_ints(group, [values.shape[0]])[:, 0]
    return _unpack(comm.allgather(group, _pack(indices, values), 0, counts), indices, values)


def _pack(indices, values):
    """The nonzeros as rows of bytes, one per nonzero (its coordinates, then its
    value), so one collective moves indices and values together."""
    idx, val = comm.host(indices), comm.host(values)
    n, ib = val.shape[0], idx.shape[0] * idx.itemsize
    rows = np.empty((n, ib + val.itemsize * prod(val.shape[1:])), np.uint8)
    rows[:, :ib].view(idx.dtype)[...] = idx.T
    rows[:, ib:].view(val.dtype).reshape(val.shape)[...] = val
    return rows


def _unpack(rows, indices, values):
    """(indices, values) from :func:`_pack`'s rows, like the originals in dtype and place."""
    sd, n = indices.shape[0], rows.shape[0]
    ib = sd * indices.dtype.itemsize
    idx = np.ascontiguousarray(rows[:, :ib].view(indices.dtype).T)
    val = np.ascontiguousarray(rows[:, ib:]).view(values.dtype).reshape((n,) + values.shape[1:])
    return comm.like(idx, indices), comm.like(val, values)


def _coo_route(indices, values, shape, axis, group):
    """Send each nonzero to the rank whose split(axis) slice holds it.

    The owner comes from arithmetic on the ``array_split`` sizes, and the
    records are grouped by owner with one stable counting sort (numpy's radix
    sort on 16-bit keys) applied once to the packed records.
    """
    owner = owner_of(comm.host(indices[axis]), shape[axis], group.size)
    order = np.argsort(owner, kind="stable")
    send = np.bincount(owner, minlength=group.size).tolist()
    rows = _pack(indices, values)
    rows = rows.view(np.dtype((np.void, rows.shape[1])))[order].view(np.uint8)
    idx, val = _exchange(group, rows, indices, values, send)
    return _coo_shift(idx, shape, axis, group, -1), val


def owner_of(coords, n, size):
    """The rank holding each coordinate of an axis of length ``n`` split ``size`` ways
    (``numpy.array_split`` sizes: the first ``n % size`` ranks hold one more)."""
    base, extra = divmod(n, size)
    big = (base + 1) * extra               # coordinates held by the larger shards
    coords = coords.astype(np.int64, copy=False)
    low = coords // (base + 1)
    high = extra + (coords - big) // max(base, 1)
    dtype = np.uint16 if size <= 2**16 else np.int64
    return np.where(coords < big, low, high).astype(dtype)
