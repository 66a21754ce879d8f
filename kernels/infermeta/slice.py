"""Shape rules of slice, strided_slice and index_select (kernels/funcs/slicing.py's rules)."""
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


def strided_shape(shape, window):
    return tuple(len(range(*w.indices(n))) for w, n in zip(window, shape))


def strided_slice_infer_meta(x, axes, starts, ends, strides):
    """numpy's basic slicing ``x[start:end:stride]`` along each of ``axes``."""
    return x.with_(shape=strided_shape(x.shape, strided_window(x.shape, axes, starts, ends,
                                                               strides)))


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
