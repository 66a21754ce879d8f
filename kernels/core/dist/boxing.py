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
from ..dtypes import additive_identity
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
    """This rank's addend: the other ranks' zeros are -0.0 where that is a float's
    additive identity, so a logical -0.0 survives the sum."""
    xp = xp_of(a)
    zero = additive_identity(a.dtype)
    if src.kind == "B":              # the other ranks' addends: a read-only zero view
        return a if group.rank == 0 else xp.broadcast_to(xp.full((), zero, a.dtype), shape)
    out = xp.full(shape, zero, a.dtype)
    lo = shard_start(shape[src.axis], group.size, group.rank)
    out[(slice(None),) * src.axis + (slice(lo, lo + a.shape[src.axis]),)] = a
    return out


# ---------------------------------------------------------------- sparse COO
def box_coo(indices, values, shape, src, dst, group):
    """(indices, values, steps) of this rank's COO shard after boxing ``src`` -> ``dst``.

    Split axes must be sparse dims.  Every change goes through partial_sum,
    which for COO is free: a nonzero lives on one rank, and COO sums duplicates.
    ``steps`` says where each output entry came from (a keep mask, the
    all-gather's per-rank counts, the route's order and counts), for
    :func:`coo_adjoint`.
    """
    if src == dst or group.size == 1:
        return indices, values, ()
    if src.kind == "B" and dst.kind == "S":
        keep = _owned(indices, shape, dst.axis, group)
        indices = _coo_shift(indices[:, keep], shape, dst.axis, group, -1)
        return indices, values[keep], (("keep", keep),)
    steps = []
    if src.kind == "B" and group.rank != 0:      # rank 0 keeps, the others drop all
        keep = xp_of(values).zeros(values.shape[0], bool)
        indices, values = indices[:, keep], values[keep]
        steps.append(("keep", keep))
    elif src.kind == "S" and dst.kind != "S":
        indices = _coo_shift(indices, shape, src.axis, group, +1)
    if dst.kind == "P":
        return indices, values, tuple(steps)
    if dst.kind == "B":
        counts = comm.allgather_ints(group, [values.shape[0]])[:, 0]
        steps.append(("gather", counts.tolist()))
        return (*_coo_allgather(indices, values, counts, group), tuple(steps))
    from_axis = src.axis if src.kind == "S" else None
    indices, values, grouping, send, recv = _coo_route(indices, values, shape, dst.axis,
                                                       group, from_axis)
    steps.append(("route", grouping, send, recv))
    return indices, values, tuple(steps)


def coo_adjoint(grad, steps, group):
    """The gradient at each input entry of :func:`box_coo` from ``grad`` at each
    output entry: the adjoint of its entry map, steps undone last first.

    A route goes back by the reverse all-to-all and the inverse permutation,
    an all-gather by a reduce-scatter of the entries (the sum of every rank's
    gradient for its own entries), a keep mask by a scatter into zeros, and a
    merge of duplicates (``box_local``'s, after a partial_sum source) by giving
    each merged entry the gradient of its sum.  Each costs O(entries) per
    rank, like the forward.
    """
    for step in reversed(steps):
        if step[0] == "merge":              # summed duplicates: each addend gets the sum's
            out = grad if step[1] is None else grad[step[1]]
        elif step[0] == "keep":
            out = xp_of(grad).zeros(step[1].shape + grad.shape[1:], grad.dtype)
            out[step[1]] = grad
        elif step[0] == "gather":
            out = comm.like(comm.reduce_scatter(group, comm.host(grad), 0, step[1]), grad)
        else:
            _, grouping, send, recv = step
            back = np.empty((sum(send),) + grad.shape[1:], grad.dtype)
            comm.alltoall_fields(group, [grad], [back], recv, send)
            out = back if grouping is None else _scatter(back, _runs(grouping, group.size), send)
            out = comm.like(out, grad)
        grad = out
    return grad


def _coo_shift(indices, shape, axis, group, sign):
    xp = xp_of(indices)
    lo = shard_start(shape[axis], group.size, group.rank)
    if lo == 0:
        return indices
    out = xp.array(indices, copy=True)
    out[axis] += sign * lo
    return out


def _owned(indices, shape, axis, group):
    """Which entries lie in this rank's split(axis) slice."""
    lo = shard_start(shape[axis], group.size, group.rank)
    hi = lo + shard_sizes(shape[axis], group.size)[group.rank]
    return (indices[axis] >= lo) & (indices[axis] < hi)


def _coo_allgather(indices, values, counts, group):
    return _unpack(comm.allgather(group, _pack(indices, values), 0, counts), indices, values)


def _pack(indices, values):
    """The nonzeros as rows of bytes, one per nonzero (its coordinates, then its
    value), so one collective moves indices and values together."""
    idx, val = comm.host(indices), comm.host(values)
    rows = np.empty((val.shape[0], _record_bytes(idx, val)), np.uint8)
    cols, vals = _fields(rows, idx.shape[0], idx.dtype, val.dtype, val.shape[1:])
    for k, col in enumerate(cols):
        col[...] = idx[k]
    vals[...] = val
    return rows


def _record_bytes(idx, val):
    return idx.shape[0] * idx.itemsize + val.itemsize * prod(val.shape[1:])


def _fields(rows, sd, idx_dtype, val_dtype, dense_shape):
    """Views of ``rows``: one column per coordinate, and the values."""
    w = np.dtype(idx_dtype).itemsize
    cols = [rows[:, k * w:(k + 1) * w].view(idx_dtype)[:, 0] for k in range(sd)]
    vals = rows[:, sd * w:].view(val_dtype).reshape((rows.shape[0],) + tuple(dense_shape))
    return cols, vals


def _unpack(rows, indices, values):
    """(indices, values) from :func:`_pack`'s rows, like the originals in dtype and place:
    one contiguous copy per field."""
    sd, n = indices.shape[0], rows.shape[0]
    cols, vals = _fields(rows, sd, indices.dtype, values.dtype, values.shape[1:])
    idx = np.empty((sd, n), indices.dtype)
    for k, col in enumerate(cols):
        np.copyto(idx[k], col)
    val = np.empty(vals.shape, values.dtype)
    np.copyto(val, vals)
    return comm.like(idx, indices), comm.like(val, values)


def _coo_route(indices, values, shape, axis, group, from_axis=None):
    """Send each nonzero to the rank whose split(axis) slice holds it.

    :func:`_group` finds each nonzero's owner.  Of each field (each coordinate
    row, then the values), our entries are gathered straight into the result
    and the other ranks' into a send buffer, grouped by owner, that one
    all-to-all per field moves into the result (fields already grouped by
    owner go as they are).  The coordinates are then made local in place:
    our slice's start is subtracted along ``axis``, and along ``from_axis``
    (they came split there) each sender's slice start is added to its run.
    Returns the grouping (see :func:`_runs`) and the send and receive counts
    too (the route back).
    """
    idx, val = comm.host(indices), comm.host(values)
    grouping, send = _group(idx[axis], shape[axis], group.size)
    recv = comm.alltoall_ints(group, send).tolist()
    out_idx = np.empty((idx.shape[0], sum(recv)), idx.dtype)
    out_val = np.empty((sum(recv),) + val.shape[1:], val.dtype)
    fields, outs = list(idx) + [val], list(out_idx) + [out_val]
    if grouping is None:
        comm.alltoall_fields(group, fields, outs, send, recv)
    else:
        _send_grouped(group, fields, outs, grouping, send, recv)
    _add_starts(out_idx[axis], [-shard_start(shape[axis], group.size, group.rank)], [sum(recv)])
    if from_axis is not None:
        _add_starts(out_idx[from_axis], [shard_start(shape[from_axis], group.size, q)
                                         for q in range(group.size)], recv)
    return comm.like(out_idx, indices), comm.like(out_val, values), grouping, send, recv


def _send_grouped(group, fields, outs, grouping, send, recv):
    """:func:`.comm.alltoall_fields` of each field's entries owned by rank q to rank q."""
    me = group.rank
    theirs = sum(send) - send[me]
    mine = slice(sum(recv[:me]), sum(recv[:me + 1]))
    bufs = [np.empty((theirs,) + f.shape[1:], f.dtype) for f in fields]
    _gather(fields, _runs(grouping, group.size), me, [o[mine] for o in outs], bufs, send)
    comm.alltoall_fields(group, bufs, outs, send, recv, own=False)


def _gather(fields, runs, me, mine, theirs, send):
    """Rank ``me``'s entries of each of ``fields`` into ``mine``, the others'
    into ``theirs`` (one array per field), grouped by owner (rank q's
    ``send[q]`` entries after those of the ranks before it), each owner's in
    entry order."""
    at = _prefix([c * (q != me) for q, c in enumerate(send)])
    at[me] = 0
    for lo, part, q in runs:
        k = part.shape[0]
        for f, out in zip(fields, mine if q == me else theirs):
            np.take(f[lo:], part, axis=0, out=out[at[q]:at[q] + k], mode="clip")
        at[q] += k


def _scatter(grouped, runs, send):
    """The inverse of the grouping: ``grouped`` (rank q's ``send[q]`` entries
    after those of the ranks before it) back in entry order."""
    out = np.empty_like(grouped)
    at = _prefix(send)
    for lo, part, q in runs:
        out[lo:][part] = grouped[at[q]:at[q] + part.shape[0]]
        at[q] += part.shape[0]
    return out


def _prefix(counts):
    """Where each of ``counts``' consecutive blocks starts."""
    out = [0]
    for c in counts[:-1]:
        out.append(out[-1] + c)
    return out


def _runs(grouping, size):
    """(lo, entries, q): the entries (offsets from ``lo``) that rank q owns, run
    after run; each rank's runs come in entry order.

    ``grouping`` is each entry's owner (few ranks: :data:`_CHUNK` entries at a
    time, one ``flatnonzero`` per owner, so the index arrays stay small and are
    recomputed rather than kept), or one index array per owner (many ranks).
    """
    if isinstance(grouping, list):
        for q, part in enumerate(grouping):
            yield 0, part, q
        return
    for lo in range(0, grouping.shape[0], _CHUNK):
        chunk = grouping[lo:lo + _CHUNK]
        for q in range(size):
            yield lo, np.flatnonzero(chunk == q), q


def _group(coords, n, size):
    """(grouping, counts): each entry's owner by ``coords`` (see :func:`_runs`;
    None when the entries are already grouped by owner), and how many each
    rank owns.

    Coordinates in ascending order (a coalesced shard split on a later axis)
    are grouped already: binary searches for the shard starts count them.
    Otherwise the owners (8- or 16-bit) are found :data:`_CHUNK` entries at a
    time.  Up to :data:`_FEW` ranks they are the grouping (one pass per owner,
    O(nnz P)); past that, numpy's stable radix sort of them (one counting
    pass per byte), split by owner.
    """
    if _ascending(coords):
        starts = [shard_start(n, size, q) for q in range(1, size)]
        return None, _run_lengths(np.searchsorted(coords, starts).tolist(), coords.shape[0])
    owner = np.empty(coords.shape[0], _owner_dtype(size))
    for lo in range(0, coords.shape[0], _CHUNK):
        owner[lo:lo + _CHUNK] = owner_of(coords[lo:lo + _CHUNK], n, size)
    if _ascending(owner):
        cuts = np.searchsorted(owner, np.arange(1, size, dtype=owner.dtype)).tolist()
        return None, _run_lengths(cuts, owner.shape[0])
    if size <= _FEW:
        return owner, [int(np.count_nonzero(owner == q)) for q in range(size)]
    counts = np.bincount(owner, minlength=size)
    return np.split(np.argsort(owner, kind="stable"), np.cumsum(counts)[:-1]), counts.tolist()


def _ascending(a):
    """Whether ``a`` never decreases, checked :data:`_CHUNK` entries at a time (an
    array in no order is usually refused on its first chunk)."""
    for lo in range(0, a.shape[0], _CHUNK):
        part = a[max(lo - 1, 0):lo + _CHUNK]
        if not bool((part[1:] >= part[:-1]).all()):
            return False
    return True


def _run_lengths(cuts, n):
    """The lengths of the runs of ``n`` entries that end at each of ``cuts``, then at n."""
    return [hi - lo for lo, hi in zip([0] + cuts, cuts + [n])]


_FEW = 8            # ranks up to which per-owner passes beat numpy's radix argsort
_CHUNK = 1 << 16    # entries per grouping pass: its temporaries stay small and reused
_COMPARE = 8        # ranks up to which comparisons with the shard starts find owners


def _add_starts(row, starts, counts):
    """Add ``starts[q]`` in place to the q-th run (of ``counts[q]`` entries) of ``row``."""
    at = 0
    for start, c in zip(starts, counts):
        if start and c:
            row[at:at + c] += start
        at += c


def owner_of(coords, n, size):
    """The rank holding each coordinate of an axis of length ``n`` split ``size`` ways
    (``numpy.array_split`` sizes: the first ``n % size`` ranks hold one more).

    Up to :data:`_COMPARE` ranks, the owner is the number of later shards'
    starts at or below the coordinate (a comparison per rank costs less than
    one 64-bit division); past that, arithmetic on the shard sizes.
    """
    if size <= _COMPARE:
        owner = np.zeros(coords.shape[0], _owner_dtype(size))
        for q in range(1, size):
            owner += coords >= shard_start(n, size, q)
        return owner
    base, extra = divmod(n, size)
    dtype = _owner_dtype(size)
    if extra == 0:                         # an even split: one division
        return (coords // max(base, 1)).astype(dtype)
    # Past the larger shards, c // (base + 1) falls short and (c - extra) // base
    # is right; before them, (c - extra) // base falls short: the larger is right.
    coords = coords.astype(np.int64, copy=False)
    high = coords - extra
    high //= max(base, 1)
    return np.maximum(coords // (base + 1), high, out=high).astype(dtype)


def _owner_dtype(size):
    return np.uint8 if size <= 2**8 else np.uint16 if size <= 2**16 else np.int64
