"""Paddle's slice and index_select arguments, resolved once for every layout.

Dense and sparse slice and index_select share these rules, so their errors
and bounds cannot drift apart.

slice follows ``paddle.slice`` (phi's ``CheckAndUpdateSliceAttrs`` with step
1): ``axes``, ``starts`` and ``ends`` have one entry per sliced axis; an
axis may be negative (it counts from the end) but not repeated; a negative
bound has the dim added to it, then every bound is clamped to ``[0, dim]``,
and an end below its start gives an empty window.  Axes not named keep their
whole range.

index_select follows ``paddle.index_select``: the index is a 1-D int32 or
int64 tensor whose values lie in ``[0, n)`` for the selected axis of size
``n``.  The dtype and rank are checked on metadata (infer-meta); the values,
by :func:`check_select_values`, before the kernel does any work.
"""
import functools
import operator

from ..core.dtypes import INDEX
from .shape import normalize_axis


def _ints(values, op, arg):
    """``values`` as a tuple of Python ints, or TypeError naming the op and argument."""
    try:
        return tuple(operator.index(v) for v in values)
    except TypeError:
        raise TypeError(f"{op}: {arg} must be a list of ints, got {list(values)!r}") from None


def slice_axes(axes, ndim, op="slice"):
    """``axes`` normalised to [0, ndim); ValueError if one is out of range or repeated.

    Examples
    --------
    >>> slice_axes([-1, 0], 3)
    (2, 0)
    """
    norm = tuple(normalize_axis(a, ndim, op, "axes") for a in _ints(axes, op, "axes"))
    if len(set(norm)) != len(norm):
        raise ValueError(f"{op}: axes {list(axes)} name an axis more than once; expected "
                         f"distinct axes of a tensor of rank {ndim}")
    return norm


def clamp_bound(bound, dim):
    """A slice bound with Paddle's rules: negative adds ``dim``, then clamped to [0, dim].

    Examples
    --------
    >>> [clamp_bound(b, 5) for b in (-2, -9, 3, 7)]
    [3, 0, 3, 5]
    """
    if bound < 0:
        bound += dim
    return min(max(bound, 0), dim)


def resolve_slice(shape, axes, starts, ends, op="slice"):
    """The window of a slice: one step-1 ``slice`` per dim of ``shape``, bounds resolved.

    Parameters
    ----------
    shape : sequence of int
        The input's shape.
    axes, starts, ends : sequences of int
        Paddle's arguments, one entry per sliced axis.
    op : str
        The op name for error messages.

    Returns
    -------
    tuple of slice
        ``slice(start, stop)`` for every dim, with ``0 <= start <= stop <=
        dim``; a dim not in ``axes`` gets ``slice(0, dim)``.  The output
        shape is :func:`window_shape` of it; dense data is ``x[window]``.

    Raises
    ------
    ValueError
        ``axes``, ``starts`` and ``ends`` differ in length, or an axis is out
        of range or repeated.
    TypeError
        An entry is not an int.

    Examples
    --------
    >>> resolve_slice((4, 5, 6), [2, 0], [-4, 1], [100, -1])
    (slice(1, 3, None), slice(0, 5, None), slice(2, 6, None))
    >>> window_shape(resolve_slice((4, 5), [1], [3], [1]))
    (4, 0)
    """
    starts, ends = _ints(starts, op, "starts"), _ints(ends, op, "ends")
    if not len(axes) == len(starts) == len(ends):
        raise ValueError(f"{op}: axes {list(axes)}, starts {list(starts)} and ends "
                         f"{list(ends)} have lengths {len(axes)}, {len(starts)} and "
                         f"{len(ends)}; expected one start and one end per axis")
    window = [slice(0, int(d)) for d in shape]
    for axis, start, end in zip(slice_axes(axes, len(shape), op), starts, ends):
        dim = int(shape[axis])
        lo = clamp_bound(start, dim)
        window[axis] = slice(lo, max(clamp_bound(end, dim), lo))
    return tuple(window)


#: :func:`resolve_slice` remembered per call (for kernels, whose attributes are
#: tuples checked by the infer-meta): a loop's slice builds its window once.
cached_slice = functools.lru_cache(maxsize=1024)(resolve_slice)


def window_shape(window):
    """The shape of the data inside a window of :func:`resolve_slice`."""
    return tuple(s.stop - s.start for s in window)


def cut_axes(shape, axes, starts, ends, op="slice"):
    """The axes whose window is not the dim's whole range (the axes a slice really cuts).

    A split along any other axis can be sliced shard by shard.

    Examples
    --------
    >>> cut_axes((4, 5, 6), [0, 1, 2], [0, 0, 1], [4, 99, 6])
    (2,)
    """
    window = resolve_slice(shape, axes, starts, ends, op)
    return tuple(d for d, (s, n) in enumerate(zip(window, shape)) if (s.start, s.stop) != (0, n))


def check_select_index(index, op="index_select"):
    """TypeError unless ``index`` (a MetaTensor or array) is int32/int64; ValueError unless 1-D.

    Examples
    --------
    >>> import numpy as np
    >>> check_select_index(np.zeros((2, 2), np.int64))
    Traceback (most recent call last):
    ...
    ValueError: index_select: index has shape [2, 2]; expected a 1-D tensor of indices
    """
    if index.dtype not in INDEX:
        raise TypeError(f"{op}: index dtype {index.dtype.name} is not supported; expected "
                        "int32 or int64")
    if len(index.shape) != 1:
        raise ValueError(f"{op}: index has shape {list(index.shape)}; expected a 1-D "
                         "tensor of indices")


def resolve_index_select(shape, index, axis, op="index_select"):
    """The normalised axis of an index_select, after checking it and the index's metadata.

    Returns
    -------
    int
        ``axis`` in [0, len(shape)).  The output shape is ``shape`` with that
        dim replaced by ``len(index)``.
    """
    axis = normalize_axis(operator.index(axis), len(shape), op)
    check_select_index(index, op)
    return axis


def check_select_values(index, size, axis, op="index_select"):
    """IndexError unless every value of the 1-D array ``index`` lies in [0, size).

    A min/max pass decides; only on failure is the first bad position found,
    for the message.  A broadcast index (stride 0) is one value, checked once.
    Works on numpy and cupy arrays.

    Examples
    --------
    >>> import numpy as np
    >>> check_select_values(np.array([0, 3, 1]), 3, axis=1)
    Traceback (most recent call last):
    ...
    IndexError: index_select: index 3 at position 1 is out of range for axis 1 of size 3; expected values in [0, 3)
    """
    if index.shape[0] == 0:
        return
    if index.strides[0] == 0:         # a broadcast view: one value, however long it is
        index = index[:1]
    if int(index.min()) >= 0 and int(index.max()) < size:
        return
    bad = (index < 0) | (index >= size)
    pos = int(bad.argmax())
    raise IndexError(f"{op}: index {int(index[pos])} at position {pos} is out of range for "
                     f"axis {axis} of size {size}; expected values in [0, {size})")
