"""Dense slice, strided_slice and index_select, with backward.

slice and strided_slice return views of x (basic slicing, no copy); their
gradient is zeros of x's shape with out_grad written into the window.
index_select copies (``take``) after checking every index value, and its
gradient is gather's scatter-add (``gather_grad``).
"""
from ..core.dtypes import ALL
from ..core.registry import register_kernel
from ..core.xp import xp_of
from ..funcs.slicing import check_select_values, resolve_index_select, resolve_slice
from ..infermeta.slice import strided_window

BACKENDS = ("cpu", "gpu")


@register_kernel("slice", backends=BACKENDS, dtypes=ALL)
def slice_(x, axes, starts, ends):
    """x inside Paddle's slice window (a view)."""
    return x[resolve_slice(x.shape, axes, starts, ends)]


@register_kernel("strided_slice", backends=BACKENDS, dtypes=ALL)
def strided_slice(x, axes, starts, ends, strides):
    """x[start:end:stride] along ``axes`` (a view)."""
    return x[strided_window(x.shape, axes, starts, ends, strides)]


def _scatter_window(x, out_grad, window):
    g = xp_of(out_grad).zeros(x.shape, x.dtype)
    g[window] = out_grad.real if out_grad.dtype.kind == "c" and x.dtype.kind != "c" else out_grad
    return g


@register_kernel("slice_grad", backends=BACKENDS, dtypes=ALL)
def slice_grad(x, out_grad, axes, starts, ends):
    """Zeros of x's shape with out_grad in the window; x is metadata only."""
    return _scatter_window(x, out_grad, resolve_slice(x.shape, axes, starts, ends))


@register_kernel("strided_slice_grad", backends=BACKENDS, dtypes=ALL)
def strided_slice_grad(x, out_grad, axes, starts, ends, strides):
    """Zeros of x's shape with out_grad at the strided positions; x is metadata only."""
    return _scatter_window(x, out_grad, strided_window(x.shape, axes, starts, ends, strides))


@register_kernel("index_select", backends=BACKENDS, dtypes=ALL)
def index_select(x, index, axis=0):
    """x's slices along ``axis`` at ``index`` (repeats allowed), values checked first."""
    ax = resolve_index_select(x.shape, index, axis)
    check_select_values(index, x.shape[ax], ax)
    return xp_of(x).take(x, index, axis=ax)
