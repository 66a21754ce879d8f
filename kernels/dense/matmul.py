"""Dense matmul: numpy.matmul (BLAS) forward; backward by two matmuls and sum_to_shape."""
from ..core.dtypes import ALL
from ..core.registry import register_kernel
from ..core.xp import xp_of
from ..funcs.sum_to_shape import grad_in_dtype, sum_to_shape
from ..infermeta.matmul import matmul_operand_shapes

BACKENDS = ("cpu", "gpu")


def _operands(x, y, transpose_x, transpose_y):
    xp = xp_of(x)
    a = xp.swapaxes(x, -1, -2) if transpose_x and x.ndim >= 2 else x
    b = xp.swapaxes(y, -1, -2) if transpose_y and y.ndim >= 2 else y
    return xp, a, b


@register_kernel("matmul", backends=BACKENDS, dtypes=ALL)
def matmul(x, y, transpose_x=False, transpose_y=False):
    """numpy.matmul of x and y after the transposes (views, so BLAS sees strides)."""
    if not (transpose_x or transpose_y):
        return xp_of(x).matmul(x, y)
    xp, a, b = _operands(x, y, transpose_x, transpose_y)
    return xp.matmul(a, b)


def _conj(xp, a):
    return xp.conj(a) if a.dtype.kind == "c" else a


def _back(xp, g, shape, op_shape, transpose, dtype):
    """A gradient of the 2-D-or-more operand summed to it, reshaped and transposed back."""
    g = sum_to_shape(g, op_shape).reshape(
        shape if not transpose or len(shape) < 2 else shape[:-2] + shape[:-3:-1])
    if transpose and len(shape) >= 2:
        g = xp.swapaxes(g, -1, -2)
    return xp.ascontiguousarray(grad_in_dtype(g, dtype))


@register_kernel("matmul_grad", backends=BACKENDS, dtypes=ALL)
def matmul_grad(x, y, out_grad, transpose_x=False, transpose_y=False, grad_mask=(True, True)):
    """dA = g @ B^H and dB = A^H @ g on the 2-D forms, each summed over broadcast batch dims.

    Only the gradients ``grad_mask`` asks for are computed (None for the other).
    """
    xp, a, b = _operands(x, y, transpose_x, transpose_y)
    sa, sb = matmul_operand_shapes(x.shape, y.shape, transpose_x, transpose_y)
    g = out_grad.reshape(out_grad.shape[:len(out_grad.shape) - (x.ndim > 1) - (y.ndim > 1)]
                         + (sa[-2], sb[-1]))
    gx = gy = None
    if grad_mask[0]:
        ga = xp.matmul(g, xp.swapaxes(_conj(xp, b.reshape(sb)), -1, -2))
        gx = _back(xp, ga, x.shape, sa, transpose_x, x.dtype)
    if grad_mask[1]:
        gb = xp.matmul(xp.swapaxes(_conj(xp, a.reshape(sa)), -1, -2), g)
        gy = _back(xp, gb, y.shape, sb, transpose_y, y.dtype)
    return gx, gy
