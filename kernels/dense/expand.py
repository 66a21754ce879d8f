"""Dense expand: forward and backward kernels.

The forward writes a fresh contiguous output through the stride-0 index map
of OneFlow's expand/repeat article (:func:`kernels.funcs.broadcast.expand_copy`),
so it never aliases x; the backward sums the broadcast dims away (:func:`sum_to_shape`).
"""
from ..core.dtypes import ALL
from ..core.registry import register_kernel
from ..funcs.broadcast import expand_copy
from ..funcs.sum_to_shape import sum_to_shape
from ..infermeta.expand import resolve_expand


@register_kernel("expand", dtypes=ALL)
def expand(x, shape):
    """x broadcast to ``shape`` (-1 keeps a dim), as a new contiguous array."""
    return expand_copy(x, resolve_expand(x.shape, shape))


@register_kernel("expand_grad", backends=("cpu", "gpu"), dtypes=ALL)
def expand_grad(x, out_grad, shape):
    """out_grad summed back to x's shape; ``x`` is metadata only (no_need_buffer)."""
    return sum_to_shape(out_grad, x.shape)


from ..gpu import ops as _gpu_ops  # noqa: E402,F401  (the 'gpu' kernels: kernels/gpu/ops.py)
