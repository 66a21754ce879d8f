"""MPI through mpi4py, imported lazily: placements and the collectives boxing uses.

A plain ``python`` run is a one-rank world and needs no mpi4py; under
``mpiexec -n N`` each process is one rank of ``COMM_WORLD``.  Every collective
here is one MPI call on a contiguous buffer (moves go as bytes, so they are
exact for every dtype; sums go typed).  CuPy arrays travel through the host.
"""
import sys

import numpy as np

from ..xp import place_of, to_place

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
        self.ranks = ranks
        self._parent = parent
        self.group = group

    @property
    def size(self):
        return len(self.ranks)

    @property
    def rank(self):
        return self.group.rank

    @property
    def is_member(self):
        """True if this process holds shards of tensors on this placement."""
        return self.group is not None

    def __eq__(self, other):
        return (isinstance(other, Placement) and self.ranks == other.ranks
                and self._parent is other._parent)

    def __hash__(self):
        return hash(self.ranks)

    def __repr__(self):
        return f"placement(ranks={list(self.ranks)})"


def placement(ranks=None, comm=None):
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
    parent = world() if comm is None else Group(comm)
    everyone = tuple(range(parent.size))
    ranks = everyone if ranks is None else _check_ranks(ranks, parent.size)
    key = (id(parent.mpi), ranks)
    if key not in _SUBCOMMS:
        _SUBCOMMS[key] = (parent, _subgroup(parent, ranks, everyone))
    parent, group = _SUBCOMMS[key]
    return Placement(ranks, parent, group)


def _check_ranks(ranks, size):
    try:
        out = tuple(sorted({int(r) for r in ranks}))
    except (TypeError, ValueError):
        raise TypeError(f"placement: ranks must be a list of ints, got {ranks!r}") from None
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
def host(a):
    """``a`` as a C-contiguous host numpy array of its shape (a copy only when it must)."""
    a = np.asarray(to_place(a, "cpu"))
    return a if a.flags.c_contiguous else np.ascontiguousarray(a).reshape(a.shape)


def _bytes(a):
    return host(a).reshape(-1).view(np.uint8)


def _vector(buf, counts):
    """mpi4py's ``[buffer, (counts, displacements)]`` for consecutive pieces."""
    counts = [int(c) for c in counts]
    displs = [0]
    for c in counts[:-1]:
        displs.append(displs[-1] + c)
    return [buf, (counts, displs)]


def allgather_ints(group, values):
    """Every rank's 1-D int64 ``values`` (same length everywhere), as a (size, n) array."""
    mine = np.asarray(values, dtype=np.int64).reshape(-1)
    if group.size == 1:
        return mine.reshape(1, -1).copy()
    out = np.empty((group.size, mine.size), np.int64)
    group.mpi.Allgather(mine, out)
    return out


def allgatherv(group, a, counts):
    """All ranks' 1-D arrays of ``a.dtype`` concatenated; ``counts`` are their lengths."""
    if group.size == 1:
        return np.array(host(a).reshape(-1), copy=True)
    item = np.dtype(a.dtype).itemsize
    nbytes = np.asarray(counts, np.int64) * item
    out = np.empty(int(nbytes.sum()), np.uint8)
    group.mpi.Allgatherv(_bytes(a), _vector(out, nbytes))
    return out.view(a.dtype)


def allreduce(group, a):
    """The elementwise sum of every rank's ``a`` (same shape everywhere)."""
    src = host(a)
    if group.size == 1:
        return src.copy()
    out = np.empty_like(src)
    group.mpi.Allreduce(src, out)
    return out


def reduce_scatter(group, a, counts):
    """Sum every rank's flat ``a``, then keep this rank's ``counts[rank]`` elements."""
    src = host(a).reshape(-1)
    if group.size == 1:
        return src.copy()
    out = np.empty(int(counts[group.rank]), src.dtype)
    group.mpi.Reduce_scatter(src, out, [int(c) for c in counts])
    return out


def alltoallv(group, a, send_counts, recv_counts):
    """Send ``send_counts[q]`` consecutive items of flat ``a`` to rank q; receive likewise."""
    if group.size == 1:
        return np.array(host(a).reshape(-1), copy=True)
    item = np.dtype(a.dtype).itemsize
    sb = np.asarray(send_counts, np.int64) * item
    rb = np.asarray(recv_counts, np.int64) * item
    out = np.empty(int(rb.sum()), np.uint8)
    group.mpi.Alltoallv(_vector(_bytes(a), sb), _vector(out, rb))
    return out.view(a.dtype)


def like(array, reference):
    """``array`` moved to ``reference``'s place (host results back to the GPU)."""
    return to_place(array, place_of(reference))
