"""Dense expand: forward kernels ('cpu' and 'gpu') and the backward.

The forward writes a fresh contiguous output through the stride-0 index map
of OneFlow's expand/repeat article (output element ``i`` reads x at
``sum(i_d * output_stride[d])``), so it never aliases x: on the CPU through
:func:`kernels.funcs.broadcast.expand_copy`, on a GPU through ``expand.cu``.
The backward sums the broadcast dims away (:func:`sum_to_shape`).
"""
from ..core.dtypes import ALL
from ..core.registry import register_kernel
from ..funcs.broadcast import expand_copy, expand_output_stride
from ..funcs.sum_to_shape import sum_to_shape
from ..gpu import expand as cuda
from ..gpu.backend import device


@register_kernel("expand", dtypes=ALL)
def expand(x, shape):
    """x broadcast to ``shape`` (resolved by the infer-meta), as a new contiguous array."""
    return expand_copy(x, shape)


@register_kernel("expand", backends=("gpu",), dtypes=ALL)
def expand_gpu(x, shape):
    """x broadcast to ``shape`` (resolved by the infer-meta) by ``expand.cu``."""
    return cuda.expand(device(), x, shape, expand_output_stride(x.shape, shape))


@register_kernel("expand_grad", backends=("cpu", "gpu"), dtypes=ALL)
def expand_grad(x, out_grad, shape):
    """out_grad summed back to x's shape; ``x`` is metadata only (no_need_buffer)."""
    return sum_to_shape(out_grad, x.shape)
