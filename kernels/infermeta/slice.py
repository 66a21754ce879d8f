"""Shape rules of slice, strided_slice, basic_index and index_select.

They follow kernels/funcs/slicing.py's rules.
"""
import functools
import operator

from ..funcs.shape import normalize_axis
from ..funcs.slicing import resolve_index_select, resolve_slice, slice_axes, window_shape


def slice_infer_meta(x, axes, starts, ends):
    """Paddle's slice window of x (negative bounds add the dim, then clamp)."""
    if not len(axes) == len(starts) == len(ends):
        raise ValueError(f"slice: axes, starts and ends have {len(axes)}, {len(starts)} and "
                         f"{len(ends)} entries; expected one each per sliced axis")
    return x.with_(shape=window_shape(resolve_slice(x.shape, axes, starts, ends)))


def strided_window(shape, axes, starts, ends, strides, op="strided_slice"):
    """One ``slice(start, end, stride)`` per dim (Python's rules per axis; others whole)."""
    if not len(axes) == len(starts) == len(ends) == len(strides):
        raise ValueError(f"{op}: axes, starts, ends and strides have {len(axes)}, "
                         f"{len(starts)}, {len(ends)} and {len(strides)} entries; expected "
                         "one each per sliced axis")
    window = [slice(None)] * len(shape)
    for axis, start, end, step in zip(slice_axes(axes, len(shape), op), starts, ends, strides):
        if step == 0:
            raise ValueError(f"{op}: stride 0 on axis {axis}; expected a nonzero stride")
        window[axis] = slice(start, end, step)
    return tuple(window)


#: :func:`strided_window` remembered per call (for kernels, whose attributes are
#: tuples checked by the infer-meta): a loop's slice builds its window once.
cached_window = functools.lru_cache(maxsize=1024)(strided_window)


def strided_shape(shape, window):
    return tuple(len(range(*w.indices(n))) for w, n in zip(window, shape))


def strided_slice_infer_meta(x, axes, starts, ends, strides):
    """numpy's basic slicing ``x[start:end:stride]`` along each of ``axes``."""
    return x.with_(shape=strided_shape(x.shape, strided_window(x.shape, axes, starts, ends,
                                                               strides)))


def _index_dims(shape, axes, starts, ends, strides, decrease_axis, none_axis):
    """basic_index's checks: (window, its shape, dropped input axes, sorted new output dims)."""
    op, ndim = "basic_index", len(shape)
    window = strided_window(shape, axes, starts, ends, strides, op)
    sizes = strided_shape(shape, window)
    drop = tuple(normalize_axis(a, ndim, op, "decrease_axis") for a in decrease_axis)
    if len(set(drop)) != len(drop) or not set(drop) <= set(slice_axes(axes, ndim, op)):
        raise ValueError(f"{op}: decrease_axis {list(decrease_axis)} must name distinct "
                         f"axes among axes {list(axes)}")
    for a in drop:
        if sizes[a] != 1:
            raise ValueError(f"{op}: decrease_axis {a} has a window of {sizes[a]} elements; "
                             "expected exactly one")
    out_ndim = ndim - len(drop) + len(none_axis)
    new = sorted(normalize_axis(a, out_ndim, op, "none_axis") for a in none_axis)
    if len(set(new)) != len(new):
        raise ValueError(f"{op}: none_axis {list(none_axis)} names an output dim more than "
                         "once; expected distinct positions")
    return window, sizes, drop, tuple(new)


def basic_index_infer_meta(x, axes, starts, ends, strides, decrease_axis=(), none_axis=()):
    """numpy's basic indexing: strided windows, int dims dropped, size-1 dims inserted."""
    _, sizes, drop, new = _index_dims(x.shape, axes, starts, ends, strides, decrease_axis,
                                      none_axis)
    kept = iter([s for a, s in enumerate(sizes) if a not in drop])
    ndim = len(sizes) - len(drop) + len(new)
    return x.with_(shape=tuple(1 if d in new else next(kept) for d in range(ndim)))


@functools.lru_cache(maxsize=1024)
def index_key(shape, axes, starts, ends, strides, decrease_axis=(), none_axis=()):
    """The numpy key of a basic_index call (checked by its infer-meta), remembered.

    One slice per windowed dim, the element's index for a dropped one, None
    at each new output dim; it ends in ``...`` so that numpy returns a view
    even when every dim is dropped (a key of ints alone gives a scalar copy).

    Examples
    --------
    >>> index_key((4, 5), (0, 1), (-1, 0), (4, 5), (1, 2), (0,), (1,))
    (3, slice(0, 5, 2), None, Ellipsis)
    """
    window, _, drop, new = _index_dims(shape, axes, starts, ends, strides, decrease_axis,
                                       none_axis)
    key, d = [], 0
    for a, w in enumerate(window):
        while d in new:
            key.append(None)
            d += 1
        if a in drop:
            key.append(range(*w.indices(shape[a]))[0])
        else:
            key.append(w)
            d += 1
    key.extend([None] * (len(new) - key.count(None)))
    while key and key[-1] == slice(None):
        key.pop()
    return (*key, Ellipsis)


def index_axis(shape, decrease_axis, none_axis, i):
    """Where input dim ``i`` (not dropped) goes in basic_index's output (its SBP rule)."""
    ndim = len(shape)
    drop = {a % ndim for a in decrease_axis}
    out_ndim = ndim - len(drop) + len(none_axis)
    new = {a % out_ndim for a in none_axis}
    return [d for d in range(out_ndim) if d not in new][i - sum(a < i for a in drop)]


def index_select_infer_meta(x, index, axis=0):
    """x with dim ``axis`` replaced by the index's length."""
    if x.ndim == 0:
        raise ValueError("index_select: x is 0-d; expected a tensor of rank >= 1")
    ax = resolve_index_select(x.shape, index, axis)
    return x.with_(shape=x.shape[:ax] + (index.shape[0],) + x.shape[ax + 1:])


def select_axis(axis, ndim):
    """index_select's axis in [0, ndim) (used by its SBP rules)."""
    return normalize_axis(operator.index(axis), ndim, "index_select")


def sliced_axes(axes, ndim):
    """strided_slice's axes in [0, ndim) (used by its SBP rule)."""
    return tuple(a % ndim for a in axes) if ndim else ()
