"""Dense reshape: forward and backward kernels.

A reshape of a contiguous array is free (a view); tensors are immutable, so
the output may share memory with the input.
"""
from ..core.dtypes import ALL
from ..core.registry import register_kernel


@register_kernel("reshape", backends=("cpu", "gpu"), dtypes=ALL)
def reshape(x, shape):
    """x with the new ``shape`` (resolved by the infer-meta); a view where the memory allows."""
    return x.reshape(shape)


@register_kernel("reshape_grad", backends=("cpu", "gpu"), dtypes=ALL)
def reshape_grad(x, out_grad):
    """The gradient back in x's shape; ``x`` is metadata only (no_need_buffer)."""
    return out_grad.reshape(x.shape)
