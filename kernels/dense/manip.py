"""Dense shape ops: transpose, squeeze, unsqueeze, flatten (views), concat and stack.

transpose, squeeze, unsqueeze and flatten return views of x's data (tensors
are immutable, so sharing is safe); their backward ops are the inverse
transpose or a reshape (YAML ``invoke``).  concat and stack copy; their
backward ops hand each input its slice of the output gradient.
"""
from ..core.dtypes import ALL
from ..core.registry import register_kernel
from ..core.xp import xp_of
from ..funcs.shape import normalize_axis
from ..funcs.sum_to_shape import grad_in_dtype
from ..infermeta.manip import flatten_shape, squeeze_shape, unsqueeze_shape

BACKENDS = ("cpu", "gpu")


@register_kernel("transpose", backends=BACKENDS, dtypes=ALL)
def transpose(x, perm):
    """x with its axes permuted (a view); ``perm`` comes resolved from the infer-meta."""
    return x.transpose(perm)


@register_kernel("squeeze", backends=BACKENDS, dtypes=ALL)
def squeeze(x, axis=None):
    """x without its size-1 dims among ``axis`` (a view)."""
    return x.reshape(squeeze_shape(x.shape, axis))


@register_kernel("unsqueeze", backends=BACKENDS, dtypes=ALL)
def unsqueeze(x, axis):
    """x with size-1 dims inserted (a view)."""
    return x.reshape(unsqueeze_shape(x.shape, axis))


@register_kernel("flatten", backends=BACKENDS, dtypes=ALL)
def flatten(x, start_axis=0, stop_axis=-1):
    """x with dims start_axis..stop_axis merged (a view when x's strides allow)."""
    return x.reshape(flatten_shape(x.shape, start_axis, stop_axis))


def _cast_all(xs):
    dtype = xp_of(xs[0]).result_type(*xs)
    return [x.astype(dtype, copy=False) for x in xs]


@register_kernel("concat", backends=BACKENDS, dtypes=ALL)
def concat(xs, axis=0):
    """numpy.concatenate of the list (one new array)."""
    return xp_of(xs[0]).concatenate(_cast_all(xs), axis=axis)


@register_kernel("stack", backends=BACKENDS, dtypes=ALL)
def stack(xs, axis=0):
    """numpy.stack of the list (one new array)."""
    return xp_of(xs[0]).stack(_cast_all(xs), axis=axis)


@register_kernel("concat_grad", backends=BACKENDS, dtypes=ALL)
def concat_grad(xs, out_grad, axis=0):
    """Each input's block of out_grad along ``axis`` (views); xs are metadata only."""
    ax = normalize_axis(axis, out_grad.ndim, "concat")
    out, start = [], 0
    for x in xs:
        index = (slice(None),) * ax + (slice(start, start + x.shape[ax]),)
        out.append(grad_in_dtype(out_grad[index], x.dtype))
        start += x.shape[ax]
    return out


@register_kernel("stack_grad", backends=BACKENDS, dtypes=ALL)
def stack_grad(xs, out_grad, axis=0):
    """Each input's slice of out_grad at its position along ``axis`` (views)."""
    ax = normalize_axis(axis, out_grad.ndim, "stack")
    return [grad_in_dtype(out_grad[(slice(None),) * ax + (k,)], x.dtype) for k, x in enumerate(xs)]
