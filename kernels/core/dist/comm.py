"""MPI through mpi4py, imported lazily: placements and the collectives boxing uses.

A plain ``python`` run is a one-rank world and needs no mpi4py; under
``mpiexec -n N`` each process is one rank of ``COMM_WORLD``.  Every collective
here is one MPI call that reads the input and writes a new result array in
place: blocks that are strided there (a split on an axis after the first)
travel as MPI derived datatypes, or are packed by numpy where their runs are
short.  Moves go as bytes, so they are exact for every dtype; sums go typed.
Results come from :mod:`kernels.funcs.pool`, so a result dropped before the
next one reuses its pages.  CuPy arrays travel through the host.
"""
import numbers
import sys
from typing import Any

import numpy as np

from ...funcs import pool
from ...funcs.shape import prod
from ..xp import place_of, to_place
from . import traffic

_WORLD = []
_SUBCOMMS = {}


class Group:
    """A communicator (an mpi4py ``Comm``, or None for the one-rank world) and our rank in it."""

    def __init__(self, mpi):
        self.mpi = mpi
        self.size = 1 if mpi is None else mpi.Get_size()
        self.rank = 0 if mpi is None else mpi.Get_rank()


def world():
    """The world group: ``COMM_WORLD`` if mpi4py is installed, else one rank."""
    if not _WORLD:
        try:
            from mpi4py import MPI
        except ImportError:
            _WORLD.append(Group(None))
        else:
            _WORLD.append(Group(MPI.COMM_WORLD))
            if MPI.COMM_WORLD.Get_size() > 1:
                _install_abort_hook(MPI.COMM_WORLD)
    return _WORLD[0]


def _install_abort_hook(comm):
    """An uncaught exception on one rank aborts the job instead of hanging the others."""
    previous = sys.excepthook

    def hook(kind, value, tb):
        previous(kind, value, tb)
        sys.stderr.flush()
        comm.Abort(1)
    sys.excepthook = hook


class Placement:
    """The ranks a global tensor lives on: a 1-D set of ranks of an MPI communicator.

    Build one with :func:`placement`.  ``group`` is the communicator over exactly
    these ranks (None on a rank outside them); ``rank`` and ``size`` are this
    process's rank in it and its size.
    """

    def __init__(self, ranks, parent, group):
        self._ranks = ranks
        self._parent = parent
        self.group = group

    @property
    def ranks(self):
        """The ranks of the parent communicator, ascending, as a list."""
        return list(self._ranks)

    @property
    def size(self):
        return len(self._ranks)

    @property
    def rank(self):
        """This process's rank in the placement; ValueError outside it."""
        if self.group is None:
            raise ValueError(f"placement: this process is not one of its ranks "
                             f"{self.ranks}; it has no rank there (see is_member)")
        return self.group.rank

    @property
    def is_member(self):
        """True if this process holds shards of tensors on this placement."""
        return self.group is not None

    def __eq__(self, other):
        return (isinstance(other, Placement) and self._ranks == other._ranks
                and self._parent is other._parent)

    def __hash__(self):
        return hash(self._ranks)

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        """The same placement: it names communicators, which a copy cannot duplicate."""
        return self

    def __reduce__(self):
        """Pickled as its ranks of COMM_WORLD, rebuilt there by :func:`placement` (for a
        subset of the ranks not built yet in the unpickling process, a collective over
        its members, as building it is); a placement on another communicator cannot be
        named in a pickle (TypeError)."""
        if self._parent.mpi is not world().mpi:
            raise TypeError("placement: only a placement on COMM_WORLD can be pickled; this "
                            "one is on another communicator")
        return placement, (list(self._ranks),)

    def __repr__(self):
        return f"placement(ranks={self.ranks})"


def placement(ranks: Any = None, comm: Any = None) -> Placement:
    """The placement over ``ranks`` of ``comm`` (default: every rank of ``COMM_WORLD``).

    Only the member ranks take part in building its sub-communicator, and a
    placement with the same ranks reuses it.

    Parameters
    ----------
    ranks : list of int, optional
        Ranks of ``comm``; None means all of them.
    comm : mpi4py.MPI.Comm, optional
        The parent communicator; None means ``COMM_WORLD``.

    Examples
    --------
    >>> import dense
    >>> dense.placement()          # a plain python run is a one-rank world
    placement(ranks=[0])
    """
    parent = world() if comm is None else Group(_check_comm(comm))
    everyone = tuple(range(parent.size))
    ranks = everyone if ranks is None else _check_ranks(ranks, parent.size)
    key = (id(parent.mpi), ranks)
    if key not in _SUBCOMMS:
        _SUBCOMMS[key] = (parent, _subgroup(parent, ranks, everyone))
    parent, group = _SUBCOMMS[key]
    return Placement(ranks, parent, group)


def _check_comm(comm):
    """``comm`` if it is an mpi4py communicator, else TypeError naming placement."""
    try:
        from mpi4py import MPI
    except ImportError:
        MPI = None
    if MPI is None or not isinstance(comm, MPI.Comm):
        raise TypeError(f"placement: comm must be an mpi4py communicator (mpi4py.MPI.Comm) "
                        f"or None, got {comm!r} of type {type(comm).__name__}")
    if comm == MPI.COMM_NULL:
        raise ValueError("placement: comm is MPI.COMM_NULL (or a freed communicator); "
                         "expected a live intracommunicator")
    if comm.Is_inter():
        raise TypeError("placement: comm is an intercommunicator; expected an "
                        "intracommunicator (its collectives reach the other group)")
    return comm


def _check_ranks(ranks, size):
    given = ranks
    try:
        ranks = [None] if isinstance(ranks, (str, bytes)) else list(ranks)
    except TypeError:                   # not iterable (an int, a 0-d array)
        ranks = [None]
    if any(isinstance(r, (bool, np.bool_)) or not isinstance(r, numbers.Integral) for r in ranks):
        raise TypeError(f"placement: ranks must be a list of ints, got {given!r}")
    out = tuple(sorted({int(r) for r in ranks}))
    if not out or out[0] < 0 or out[-1] >= size:
        raise ValueError(f"placement: ranks {list(ranks)} must be a non-empty subset of "
                         f"[0, {size}) (the communicator has {size} ranks)")
    return out


def _subgroup(parent, ranks, everyone):
    if ranks == everyone:
        return parent
    if parent.rank not in ranks:
        return None
    mpi = parent.mpi
    return Group(mpi.Create_group(mpi.Get_group().Incl(list(ranks))))


# ---------------------------------------------------------------- collectives
#: Strided blocks whose contiguous runs are shorter than this many bytes are
#: packed by numpy: MPICH moves short strided runs several times slower than
#: numpy copies them, and longer runs faster than a pack and unpack would.
RUN_BYTES = 2048


def host(a):
    """``a`` as a C-contiguous host numpy array of its shape (a copy only when it must)."""
    a = np.asarray(to_place(a, "cpu"))
    return a if a.flags.c_contiguous else np.ascontiguousarray(a).reshape(a.shape)


def like(array, reference):
    """``array`` moved to ``reference``'s place (host results back to the GPU)."""
    return to_place(array, place_of(reference))


def allreduce_like(group, a):
    """:func:`allreduce` of ``a``, on ``a``'s place."""
    return like(allreduce(group, a), a)


def _bytes(a):
    return a.reshape(-1).view(np.uint8)


def _spans(sizes):
    """(start, size) of consecutive blocks of ``sizes``."""
    out, at = [], 0
    for s in sizes:
        out.append((at, int(s)))
        at += int(s)
    return out


def _geometry(shape, axis, itemsize):
    """(slabs before ``axis``, length of ``axis``, bytes per index of ``axis``)."""
    return prod(shape[:axis]), int(shape[axis]), prod(shape[axis + 1:]) * itemsize


def _block(a, axis, lo, size):
    return a[(slice(None),) * axis + (slice(lo, lo + size),)]


def _short_runs(a, axis, spans):
    """True if some block of ``spans`` is strided with runs shorter than RUN_BYTES."""
    outer, n, row = _geometry(a.shape, axis, a.itemsize)
    return outer > 1 and any(0 < size * row < RUN_BYTES and size < n for _, size in spans)


def _layout(a, axis, spans):
    """Alltoallw's ``(counts, byte displacements, datatypes)`` for blocks of rows of ``axis``.

    Block q is rows ``spans[q] = (lo, size)`` of ``axis`` in C-contiguous ``a``:
    a byte run where it is contiguous or empty (MPICH crashed on empty strided
    datatypes), else one strided datatype (a run in every slab before
    ``axis``) from :func:`_vector`.  Either way its bytes go in C order, so a
    strided block matches a packed or contiguous one elsewhere.
    """
    from mpi4py import MPI
    outer, n, row = _geometry(a.shape, axis, a.itemsize)
    counts, displs, types = [], [], []
    for lo, size in spans:
        if outer * size * row == 0 or outer == 1 or size == n:
            counts.append(outer * size * row)
            types.append(MPI.BYTE)
        else:
            counts.append(1)
            types.append(_vector(outer, size * row, n * row))
        displs.append(lo * row)
    check_counts(counts, displs)
    return counts, displs, types


#: Committed strided datatypes by (slabs, run bytes, stride bytes): a repeated
#: boxing of the same shapes builds none (at most ``_MAX_TYPES`` are kept).
_TYPES = {}
_MAX_TYPES = 1024


def _vector(outer, run, stride):
    key = (outer, run, stride)
    found = _TYPES.get(key)
    if found is None:
        from mpi4py import MPI
        if len(_TYPES) >= _MAX_TYPES:
            for t in _TYPES.values():
                t.Free()
            _TYPES.clear()
        found = _TYPES[key] = MPI.BYTE.Create_hvector(outer, run, stride).Commit()
    return found


#: The largest count or displacement an MPI-3 call takes (a C int).
INT_MAX = 2**31 - 1


def check_counts(*lists):
    """Raise if a count or displacement needs MPI-4's large-count calls and the MPI
    library has none (mpi4py 4 uses them by itself on an MPI-4 library)."""
    big = max((max(v, default=0) for v in lists), default=0)
    if big > INT_MAX and large_count_version() < (4, 0):
        raise OverflowError(
            f"MPI: a block of {big} bytes needs the MPI-4 large-count calls, but the "
            f"MPI library is version {large_count_version()}; install an MPI-4 library "
            "(the 'mpi' extra's mpich wheel is one) or use more ranks")


def large_count_version():
    """The MPI standard version of the loaded library, as a tuple."""
    from mpi4py import MPI
    return tuple(MPI.Get_version())


def _blocks(a, axis, spans):
    return [_block(a, axis, lo, size) for lo, size in spans]


def _packed(a, axis, spans):
    """The same blocks packed one after another, each in C order, into a new flat
    array: its ``(array, axis, spans)``."""
    blocks = _blocks(a, axis, spans)
    flat_spans = _spans(b.size for b in blocks)
    flat = pool.empty((sum(b.size for b in blocks),), a.dtype)
    for block, (at, n) in zip(blocks, flat_spans):
        np.copyto(flat[at:at + n].reshape(block.shape), block)
    return flat, 0, flat_spans


def _unpack(flat, flat_spans, out, axis, spans):
    for block, (at, n) in zip(_blocks(out, axis, spans), flat_spans):
        np.copyto(block, flat[at:at + n].reshape(block.shape))


def _alltoallw(group, src, src_axis, src_spans, out, out_axis, out_spans):
    """One Alltoallw: rows ``src_spans[q]`` of ``src`` go to rank q, and rank q's
    rows land in rows ``out_spans[q]`` of ``out`` (blocks with short runs packed).

    Our own block is copied by numpy: MPICH copies it through its
    shared-memory path, which made the whole exchange ~40% slower.
    """
    send = (src, src_axis, src_spans)
    if _short_runs(*send):
        send = _packed(*send)
    recv = (out, out_axis, out_spans)
    if _short_runs(*recv):
        recv = (pool.empty((out.size,), out.dtype), 0,
                _spans(b.size for b in _blocks(*recv)))
    s_counts, s_displs, s_types = _layout(*send)
    r_counts, r_displs, r_types = _layout(*recv)
    s_counts[group.rank] = r_counts[group.rank] = 0
    group.mpi.Alltoallw([send[0], (s_counts, s_displs), s_types],
                        [recv[0], (r_counts, r_displs), r_types])
    _count_blocks(group, "alltoallw", _block_bytes(*send), _block_bytes(*recv))
    if recv[0] is not out:
        _unpack(recv[0], recv[2], out, out_axis, out_spans)
    np.copyto(_block(out, out_axis, *out_spans[group.rank]),
              _block(src, src_axis, *src_spans[group.rank]))
    return out


def alltoall_fields(group, fields, outs, send_counts, recv_counts, own=True):
    """Rank q gets entries ``[lo_q, lo_q + send_counts[q])`` of every array in
    ``fields`` (arrays sharing their leading length: a COO's coordinate rows
    and its values, grouped by destination); the entries received land rank
    by rank in the matching arrays of ``outs`` (C-contiguous), which are returned.
    With ``own=False`` the fields hold only the other ranks' entries: ours
    are already in place in ``outs``.

    One nonblocking ``Ialltoallv`` of contiguous bytes per field, straight
    from the field into its result, all in flight at once (one wait, not one
    synchronisation per field): nothing is packed or unpacked.  (One
    ``Alltoallw`` of per-peer struct datatypes moved the same bytes 3x slower
    through MPICH's datatype engine than these contiguous runs.)
    """
    from mpi4py import MPI
    fields = [host(f) for f in fields]
    me, requests = group.rank, []
    for f, o in zip(fields, outs):
        w = f.itemsize * prod(f.shape[1:])
        s_counts, r_counts = [c * w for c in send_counts], [c * w for c in recv_counts]
        if not own:
            s_counts[me] = 0
        s_displs, r_displs = _offsets(s_counts), _offsets(r_counts)
        _bytes(o)[r_displs[me]:r_displs[me] + s_counts[me]] = \
            _bytes(f)[s_displs[me]:s_displs[me] + s_counts[me]]      # our own: a local copy
        s_counts[me] = r_counts[me] = 0
        check_counts(s_counts, s_displs, r_counts, r_displs)
        requests.append(group.mpi.Ialltoallv([_bytes(f), (s_counts, s_displs), MPI.BYTE],
                                             [_bytes(o), (r_counts, r_displs), MPI.BYTE]))
        _count_blocks(group, "alltoall_fields", s_counts, r_counts)
    MPI.Request.Waitall(requests)
    return outs


def _offsets(counts):
    out, at = [], 0
    for c in counts:
        out.append(at)
        at += c
    return out


def _block_bytes(a, axis, spans):
    outer, _, row = _geometry(a.shape, axis, a.itemsize)
    return [outer * size * row for _, size in spans]


def _count_blocks(group, name, sent, received):
    """Record the bytes and messages this rank exchanged with its peers."""
    peers = [q for q in range(group.size) if q != group.rank]
    traffic.count(name, sum(sent[q] for q in peers), sum(received[q] for q in peers),
                  sum(1 for q in peers if sent[q]) + sum(1 for q in peers if received[q]))


def _ints(values):
    return np.asarray(values, dtype=np.int64).reshape(-1)


def allgather_ints(group, values):
    """Every rank's 1-D int64 ``values`` (same length everywhere), as a (size, n) array.

    Each rank receives ``size * n`` integers: keep ``n`` small and fixed (a
    P x P matrix on every rank is what :func:`alltoall_ints` avoids).
    """
    mine = _ints(values)
    if group.size == 1:
        return mine.reshape(1, -1).copy()
    out = np.empty((group.size, mine.size), np.int64)
    group.mpi.Allgather(mine, out)
    traffic.count("allgather_ints", out.nbytes - mine.nbytes, out.nbytes - mine.nbytes,
                  _tree(group))
    return out


def alltoall_ints(group, values):
    """Rank q gets ``values[q]``; returns what every rank sent us (O(P) per rank)."""
    mine = _ints(values)
    if group.size == 1:
        return mine.copy()
    out = np.empty(group.size, np.int64)
    group.mpi.Alltoall(mine, out)
    traffic.count("alltoall_ints", mine.nbytes - 8, out.nbytes - 8, 2 * (group.size - 1))
    return out


def allreduce_ints(group, values, op="max"):
    """The elementwise max, min or sum of every rank's int64 ``values``."""
    mine = _ints(values)
    if group.size == 1:
        return mine.copy()
    from mpi4py import MPI
    out = np.empty_like(mine)
    group.mpi.Allreduce(mine, out, {"max": MPI.MAX, "min": MPI.MIN, "sum": MPI.SUM}[op])
    traffic.count("allreduce_ints", mine.nbytes, mine.nbytes, _tree(group))
    return out


def _tree(group):
    """Messages of a recursive-doubling collective: about 2 log2(P) per rank."""
    return 2 * max(1, (group.size - 1).bit_length())


#: A gather along a later axis whose result is at most this many bytes goes
#: through one contiguous Allgatherv (MPI's logarithmic algorithms for small
#: messages) and a local unpack, instead of one Alltoallw block per peer.
SMALL_GATHER_BYTES = 64 * 1024


def allgather(group, a, axis, sizes):
    """Every rank's ``a`` joined along ``axis``; rank q's has ``sizes[q]`` rows there.

    The shards land straight in the new result: one ``Allgatherv`` where each
    is a contiguous run of it (nothing but size-1 axes before ``axis``), else
    one ``Alltoallw`` receiving each through a strided datatype (or, for a
    small result, an ``Allgatherv`` of the packed shards and a local unpack).
    One rank returns ``a`` itself.
    """
    if group.size == 1:
        return a
    src = host(a)
    shape = src.shape[:axis] + (int(sum(sizes)),) + src.shape[axis + 1:]
    out = pool.empty(shape, src.dtype)
    spans = _spans(sizes)
    if prod(shape[:axis]) > 1 and out.nbytes > SMALL_GATHER_BYTES:
        return _alltoallw(group, src, axis, [(0, src.shape[axis])] * group.size,
                          out, axis, spans)
    if prod(shape[:axis]) > 1:
        flat = pool.empty((out.size,), out.dtype)
        flat_spans = _spans(b.size for b in _blocks(out, axis, spans))
        _allgatherv(group, src, flat, [n * out.itemsize for _, n in flat_spans])
        _unpack(flat, flat_spans, out, axis, spans)
        return out
    _allgatherv(group, src, out, _block_bytes(out, axis, spans))
    return out


def _allgatherv(group, src, out, counts):
    """Rank q's bytes ``src`` land at its run of ``counts`` in ``out``."""
    from mpi4py import MPI
    displs = np.cumsum([0] + counts[:-1]).tolist()
    check_counts(counts, displs)
    group.mpi.Allgatherv(_bytes(src), [_bytes(out), counts, displs, MPI.BYTE])
    others = sum(counts) - src.nbytes      # ring or recursive doubling: each rank
    traffic.count("allgatherv", others, others, _tree(group))    # forwards what it gets


def allreduce(group, a):
    """The elementwise sum of every rank's ``a`` (same shape everywhere); one rank: ``a``."""
    if group.size == 1:
        return a
    src = host(a)
    out = pool.empty(src.shape, src.dtype)
    check_counts([src.size])
    group.mpi.Allreduce(src, out)
    wire = 2 * src.nbytes * (group.size - 1) // group.size    # reduce-scatter + all-gather
    traffic.count("allreduce", wire, wire, _tree(group))
    return out


def reduce_scatter(group, a, axis, sizes):
    """The sum of every rank's ``a``, cut along ``axis`` into pieces of ``sizes``: ours.

    One typed ``Reduce_scatter``; the pieces are packed into consecutive runs
    first unless they already are (nothing but size-1 axes before ``axis``).
    One rank returns ``a`` itself.
    """
    if group.size == 1:
        return a
    src = host(a)
    blocks = (src, axis, _spans(sizes))
    if prod(src.shape[:axis]) > 1:
        blocks = _packed(*blocks)
    shape = src.shape[:axis] + (int(sizes[group.rank]),) + src.shape[axis + 1:]
    out = pool.empty(shape, src.dtype)
    counts = [b.size for b in _blocks(*blocks)]
    check_counts(counts, [src.size])
    group.mpi.Reduce_scatter(blocks[0], out, counts)
    wire = src.nbytes * (group.size - 1) // group.size
    traffic.count("reduce_scatter", wire, wire, 2 * (group.size - 1))
    return out


def alltoall(group, a, send_axis, send_sizes, recv_axis, recv_sizes):
    """Rank q gets block q of ``a`` along ``send_axis`` (``send_sizes[q]`` rows);
    the blocks received are joined along ``recv_axis`` (``recv_sizes[q]`` rows from q).

    One ``Alltoallw`` with a strided datatype per block on both sides, so
    nothing is moved or packed around it unless runs are short.  One rank
    returns ``a`` itself.
    """
    if group.size == 1:
        return a
    src = host(a)
    shape = list(src.shape)
    shape[send_axis] = int(send_sizes[group.rank])
    shape[recv_axis] = int(sum(recv_sizes))
    out = pool.empty(tuple(shape), src.dtype)
    return _alltoallw(group, src, send_axis, _spans(send_sizes),
                      out, recv_axis, _spans(recv_sizes))
