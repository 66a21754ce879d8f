"""The gather view: x as [batch, outer, gather, inner], index as [batch, per_batch].

It is the [outer, processed, inner] view of OneFlow's gather-primitive article
("Developing the Gather Primitive in OneFlow"), with a batch dim in front.

Whatever the ranks, ``axis`` and ``batch_dims`` of a tf.gather-style call,
the kernel sees four numbers for x (``batch`` = the shared leading dims,
``outer`` = the dims between them and the gathered axis, ``size`` = the
gathered axis, ``inner`` = the dims after it), and index as ``batch`` rows
of ``per_batch`` values.  The output is ``[batch, outer, per_batch, inner]``.
:class:`OffsetHelper` (OneFlow's ``NdIndexOffsetHelper``) maps flat offsets
to coordinates of such a view and back.
"""
from dataclasses import dataclass

from .restride import namespace
from .shape import c_strides, prod

INT32_MAX = 2**31 - 1


class OffsetHelper:
    """Flat C-order offsets <-> coordinates of a fixed shape.

    Both directions work on Python ints and, elementwise, on integer arrays.

    Parameters
    ----------
    *dims : int
        The shape.

    Examples
    --------
    The worked example of OneFlow's gather-primitive article: index [2, 3]
    on axis 1 of x [2, 5, 2].  Output
    offset 18 of out [2, 6, 2] is coordinate [1, 3, 0]; index offset 3 holds
    0, so the source coordinate is [1, 0, 0], which is x offset 10.

    >>> OffsetHelper(2, 6, 2).to_nd(18)
    (1, 3, 0)
    >>> OffsetHelper(2, 5, 2).to_offset(1, 0, 0)
    10
    """

    def __init__(self, *dims):
        self.dims = tuple(int(d) for d in dims)
        self.strides = c_strides(self.dims)

    def to_nd(self, offset):
        """The coordinates of ``offset`` (int or integer array), one per dim."""
        if not self.dims:
            return ()
        coords, rest = [], offset
        for d in reversed(self.dims[1:]):
            coords.append(rest % d)
            rest = rest // d
        coords.append(rest)
        return tuple(reversed(coords))

    def to_offset(self, *coords):
        """The flat offset of ``coords`` (ints or broadcastable integer arrays)."""
        if len(coords) != len(self.dims):
            raise ValueError(f"OffsetHelper: {len(coords)} coordinates for "
                             f"{len(self.dims)} dims")
        terms = [c if s == 1 else c * s for c, s in zip(coords, self.strides)]
        offset = terms[0] if terms else 0
        for term in terms[1:]:
            offset = offset + term
        return offset


def resolve_gather_axes(x_ndim, index_ndim, axis, batch_dims, op="gather"):
    """Normalise tf.gather's ``axis`` and ``batch_dims``.

    ``batch_dims`` may be negative (counting from ``index_ndim``) and must
    end up in ``[0, index_ndim]``; ``axis`` defaults to ``batch_dims``, may
    be negative (counting from ``x_ndim``) and must end up in
    ``[batch_dims, x_ndim)``.

    Returns
    -------
    (int, int)
        The non-negative ``axis`` and ``batch_dims``.

    Raises
    ------
    ValueError
        Naming ``op``, the values given and the range expected.

    Examples
    --------
    >>> resolve_gather_axes(4, 3, 3, -1)
    (3, 2)
    >>> resolve_gather_axes(2, 1, None, 0)
    (0, 0)
    """
    bd = batch_dims + index_ndim if batch_dims < 0 else batch_dims
    if not 0 <= bd <= index_ndim:
        raise ValueError(f"{op}: batch_dims {batch_dims} is out of range for an index of "
                         f"rank {index_ndim}; expected a value in [{-index_ndim}, "
                         f"{index_ndim}]")
    ax = bd if axis is None else (axis + x_ndim if axis < 0 else axis)
    if not bd <= ax < x_ndim:
        given = "the default axis" if axis is None else f"axis {axis}"
        raise ValueError(f"{op}: {given} is out of range for x of rank {x_ndim} with "
                         f"batch_dims {bd}; expected an axis in [{bd}, {x_ndim}) "
                         f"(negative values count from the end)")
    return ax, bd


@dataclass(frozen=True)
class GatherView:
    """A gather folded to four numbers (see the module docstring)."""

    batch: int
    outer: int
    size: int
    inner: int
    per_batch: int
    axis: int
    batch_dims: int
    out_shape: tuple

    @property
    def x_dims(self):
        """x as ``(batch, outer, size, inner)``."""
        return (self.batch, self.outer, self.size, self.inner)

    @property
    def out_dims(self):
        """The output as ``(batch, outer, per_batch, inner)``."""
        return (self.batch, self.outer, self.per_batch, self.inner)

    @property
    def index_dims(self):
        """The index as ``(batch, per_batch)``."""
        return (self.batch, self.per_batch)


def gather_view(x_shape, index_shape, axis=None, batch_dims=0, op="gather"):
    """Check a tf.gather call's shapes and fold them into a :class:`GatherView`.

    Parameters
    ----------
    x_shape, index_shape : sequence of int
    axis : int, optional
        Defaults to ``batch_dims``; see :func:`resolve_gather_axes`.
    batch_dims : int
    op : str
        The op named in error messages.

    Raises
    ------
    ValueError
        A bad ``axis``/``batch_dims``, or batch prefixes of x and index that differ.

    Examples
    --------
    The batch-gather example of OneFlow's gather-primitive article: x
    [4, 2, 3, 2], index [4, 2, 5], axis 3,
    batch_dims 2.

    >>> v = gather_view((4, 2, 3, 2), (4, 2, 5), axis=3, batch_dims=2)
    >>> v.x_dims, v.per_batch, v.out_shape
    ((8, 3, 2, 1), 5, (4, 2, 3, 5))
    """
    x_shape, index_shape = tuple(x_shape), tuple(index_shape)
    ax, bd = resolve_gather_axes(len(x_shape), len(index_shape), axis, batch_dims, op)
    check_batch_prefix(x_shape, index_shape, bd, op)
    return GatherView(batch=prod(x_shape[:bd]), outer=prod(x_shape[bd:ax]),
                      size=x_shape[ax], inner=prod(x_shape[ax + 1:]),
                      per_batch=prod(index_shape[bd:]), axis=ax, batch_dims=bd,
                      out_shape=x_shape[:ax] + index_shape[bd:] + x_shape[ax + 1:])


def check_batch_prefix(x_shape, index_shape, batch_dims, op="gather"):
    """Raise ValueError unless x and index share their first ``batch_dims`` dims."""
    if tuple(x_shape[:batch_dims]) != tuple(index_shape[:batch_dims]):
        raise ValueError(f"{op}: the batch dims of x {list(x_shape[:batch_dims])} and of "
                         f"index {list(index_shape[:batch_dims])} differ; the first "
                         f"batch_dims={batch_dims} dims of x {list(x_shape)} and index "
                         f"{list(index_shape)} must match")


def checked_index(index, bound, axis, op="gather"):
    """The bounds check of every gather kernel: ``index`` with negatives wrapped into ``[0, bound)``.

    A min/max pre-pass (one reduction each on a GPU) decides before anything
    is written; only on failure is the first bad position looked up, for the
    message.  Array-API portable, so one body serves numpy and cupy.

    Parameters
    ----------
    index : array of int32 or int64
    bound : int
        The logical length of the gathered axis.
    axis : int
        The gathered axis, for the message.

    Returns
    -------
    array
        ``index`` itself when no value is negative, else a wrapped copy
        (int64 when int32 could not hold ``bound``).

    Raises
    ------
    IndexError
        Naming the first value outside ``[-bound, bound)`` and its position.

    Examples
    --------
    >>> import numpy as np
    >>> checked_index(np.array([0, -1]), 3, axis=0)
    array([0, 2])
    >>> checked_index(np.array([[0, 1], [5, 0]]), 3, axis=1)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    IndexError: gather: index 5 at position (1, 0) is out of range for axis 1 of size 3; ...
    """
    if prod(index.shape) == 0:
        return index
    low, high = _extremes(index)
    if low < -bound or high >= bound:
        xp = namespace(index)
        flat = xp.reshape(index, (-1,))
        at = int(xp.argmax(xp.astype((flat < -bound) | (flat >= bound), xp.int8)))
        where = tuple(int(c) for c in OffsetHelper(*index.shape).to_nd(at))
        raise IndexError(f"{op}: index {int(flat[at])} at position {where} is out of range "
                         f"for axis {axis} of size {bound}; expected values in "
                         f"[{-bound}, {bound})")
    if low >= 0:
        return index
    xp = namespace(index)
    if bound > INT32_MAX:
        index = xp.astype(index, xp.int64)
    return xp.where(index < 0, index + bound, index)


#: An index of at most this many values is scanned as a Python list.
SMALL_INDEX = 32


def _extremes(index):
    """``(min, max)`` of ``index`` as ints: a tiny index as a Python list (two
    reductions' set-up, or two device round trips, cost more than the scan), else
    by the array's own methods where it has them (numpy, cupy: one reduction
    each, without ``np.min``'s Python wrapper), else by its namespace's functions."""
    if hasattr(index, "tolist") and getattr(index, "size", SMALL_INDEX + 1) <= SMALL_INDEX:
        values = index.reshape(-1).tolist()
        return min(values), max(values)
    if hasattr(index, "min"):
        return int(index.min()), int(index.max())
    xp = namespace(index)
    return int(xp.min(index)), int(xp.max(index))
