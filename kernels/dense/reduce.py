"""Dense sum: forward and backward kernels."""
from ..core.dtypes import ALL
from ..core.registry import register_kernel
from ..core.xp import xp_of
from ..funcs.broadcast import expand_copy
from ..infermeta.reduce import sum_dtype, sum_keepdim_shape


@register_kernel("sum", backends=("cpu", "gpu"), dtypes=ALL)
def sum_(x, axis, keepdim=False):
    """Sum over the normalised ``axis`` tuple (from the infer-meta) with numpy's
    accumulator dtype."""
    xp = xp_of(x)
    return xp.asarray(xp.sum(x, axis=axis, keepdims=keepdim, dtype=sum_dtype(x.dtype)))


@register_kernel("sum_grad", backends=("cpu", "gpu"), dtypes=ALL)
def sum_grad(x, out_grad, axis=None, keepdim=False):
    """Expand out_grad back over the summed axes, cast to x's dtype."""
    g = out_grad.reshape(sum_keepdim_shape(x.shape, axis)).astype(x.dtype, copy=False)
    return expand_copy(g, x.shape)
