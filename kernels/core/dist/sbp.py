"""SBP values (split, broadcast, partial_sum) and the shard arithmetic of a split.

A global tensor has one logical shape on every rank of its placement; its sbp
says how each rank's physical shard relates to it:

- ``split(axis)``: the shards are consecutive slices along ``axis``, sized by
  numpy's ``array_split`` rule (the first ``n % p`` ranks hold one extra);
- ``broadcast``: every rank holds the whole tensor;
- ``partial_sum``: every rank holds an addend of the logical shape, and the
  tensor is their sum.
"""
import numbers
from dataclasses import dataclass

import numpy as np

__all__ = ["split", "broadcast", "partial_sum", "Sbp"]


@dataclass(frozen=True)
class Sbp:
    """One sbp value: kind 'S' (with ``axis``), 'B' or 'P'."""

    kind: str
    axis: int | None = None

    def __post_init__(self):
        """A kind 'S' with an int axis, or 'B' or 'P' with none; else TypeError, so that a
        hand-built value fails alike on every rank before any collective."""
        ok = self.kind in ("B", "P") and self.axis is None or self.kind == "S" and \
            isinstance(self.axis, numbers.Integral) and not isinstance(self.axis, (bool, np.bool_))
        if not (isinstance(self.kind, str) and ok):
            raise TypeError(f"Sbp: expected kind 'S' with an int axis, or 'B' or 'P' with "
                            f"none (or use dense.sbp.split(axis), broadcast, partial_sum); "
                            f"got kind {self.kind!r}, axis {self.axis!r}")

    @property
    def is_split(self):
        return self.kind == "S"

    def dual(self):
        """The sbp of a physical gradient: broadcast <-> partial_sum, split stays."""
        return {"B": partial_sum, "P": broadcast}.get(self.kind, self)

    def __repr__(self):
        if self.is_split:
            return f"sbp.split(axis={self.axis})"
        return "sbp.broadcast" if self.kind == "B" else "sbp.partial_sum"


def split(axis):
    """The sbp of a tensor cut along ``axis`` into ``array_split`` slices, one a rank.

    Examples
    --------
    >>> import dense
    >>> dense.sbp.split(0)
    sbp.split(axis=0)

    A negative axis counts from the end; a tensor given it holds it
    normalised (``split(-1)`` on a 2-D tensor is ``split(1)``).
    """
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, numbers.Integral):
        raise TypeError(f"sbp.split: axis must be an int, got {axis!r} of type "
                        f"{type(axis).__name__}")
    axis = int(axis)
    return Sbp("S", axis)


broadcast = Sbp("B")
partial_sum = Sbp("P")


def shard_sizes(n, parts):
    """Sizes of numpy's ``array_split`` of ``n`` items into ``parts`` pieces."""
    base, extra = divmod(int(n), parts)
    return [base + (r < extra) for r in range(parts)]


def shard_start(n, parts, rank):
    """Index of the first item of piece ``rank`` in an ``array_split`` of ``n``."""
    base, extra = divmod(int(n), parts)
    return rank * base + min(rank, extra)


def shard_shape(shape, sbp, parts, rank):
    """The physical shape on ``rank`` of a logical ``shape`` under ``sbp``."""
    if not sbp.is_split:
        return tuple(shape)
    out = list(shape)
    out[sbp.axis] = shard_sizes(shape[sbp.axis], parts)[rank]
    return tuple(out)


def check_sbp(sbp, ndim, what):
    """``sbp`` for a tensor of rank ``ndim``, a negative split axis normalised.

    Raises TypeError if it is not an sbp value and ValueError if its axis is
    outside ``[-ndim, ndim)``.
    """
    if not isinstance(sbp, Sbp):
        raise TypeError(f"{what}: sbp must be dense.sbp.split(axis), dense.sbp.broadcast "
                        f"or dense.sbp.partial_sum, got {sbp!r}")
    if not sbp.is_split:
        return sbp
    if not -ndim <= sbp.axis < ndim:
        raise ValueError(f"{what}: {sbp!r} is out of range for a tensor of rank {ndim}; "
                         f"expected an axis in [{-ndim}, {ndim})")
    return sbp if sbp.axis >= 0 else Sbp("S", sbp.axis + ndim)
