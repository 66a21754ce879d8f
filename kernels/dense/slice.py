"""Dense slice, strided_slice, basic_index and index_select, with backward.

slice, strided_slice and basic_index return views of x (basic slicing, no
copy); their gradient is zeros of x's shape with out_grad written into the
window.  basic_index runs numpy's own key, built once per call signature
(``index_key`` is remembered, as are the slice windows), so ``x[0]`` costs one
dispatch.
index_select copies (``take``) after checking every index value, and its
gradient is gather's scatter-add (``gather_grad``).
"""
from ..core.dtypes import ALL
from ..core.registry import register_kernel
from ..core.xp import xp_of
from ..funcs.slicing import cached_slice, check_select_values, resolve_index_select
from ..infermeta.slice import cached_window, index_key

BACKENDS = ("cpu", "gpu")


@register_kernel("slice", backends=BACKENDS, dtypes=ALL)
def slice_(x, axes, starts, ends):
    """x inside Paddle's slice window (a view)."""
    return x[cached_slice(x.shape, axes, starts, ends)]


@register_kernel("strided_slice", backends=BACKENDS, dtypes=ALL)
def strided_slice(x, axes, starts, ends, strides):
    """x[start:end:stride] along ``axes`` (a view)."""
    return x[cached_window(x.shape, axes, starts, ends, strides)]


@register_kernel("basic_index", backends=BACKENDS, dtypes=ALL)
def basic_index(x, axes, starts, ends, strides, decrease_axis=(), none_axis=()):
    """x[key] for numpy's basic key of these attributes (a view)."""
    return x[index_key(x.shape, axes, starts, ends, strides, decrease_axis, none_axis)]


def _scatter_window(x, out_grad, window):
    g = xp_of(out_grad).zeros(x.shape, x.dtype)
    view = g[(*window, Ellipsis)]           # a view, of out_grad's shape up to size-1 dims
    if out_grad.dtype.kind == "c" and x.dtype.kind != "c":
        out_grad = out_grad.real
    view[...] = out_grad.reshape(view.shape)
    return g


@register_kernel("slice_grad", backends=BACKENDS, dtypes=ALL)
def slice_grad(x, out_grad, axes, starts, ends):
    """Zeros of x's shape with out_grad in the window; x is metadata only."""
    return _scatter_window(x, out_grad, cached_slice(x.shape, axes, starts, ends))


@register_kernel("strided_slice_grad", backends=BACKENDS, dtypes=ALL)
def strided_slice_grad(x, out_grad, axes, starts, ends, strides):
    """Zeros of x's shape with out_grad at the strided positions; x is metadata only."""
    return _scatter_window(x, out_grad, cached_window(x.shape, axes, starts, ends, strides))


@register_kernel("basic_index_grad", backends=BACKENDS, dtypes=ALL)
def basic_index_grad(x, out_grad, axes, starts, ends, strides, decrease_axis=(), none_axis=()):
    """Zeros of x's shape with out_grad in the window (its new dims dropped); x is metadata."""
    key = index_key(x.shape, axes, starts, ends, strides, decrease_axis, none_axis)
    return _scatter_window(x, out_grad, tuple(k for k in key[:-1] if k is not None))


@register_kernel("index_select", backends=BACKENDS, dtypes=ALL)
def index_select(x, index, axis=0):
    """x's slices along ``axis`` at ``index`` (repeats allowed), values checked first."""
    ax = resolve_index_select(x.shape, index, axis)
    check_select_values(index, x.shape[ax], ax)
    xp = xp_of(x)
    if x.size == 0:             # nothing to take: take would still copy a long index
        return xp.empty(x.shape[:ax] + (index.shape[0],) + x.shape[ax + 1:], x.dtype)
    return xp.take(x, index, axis=ax)
