"""matmul's shape rule: numpy.matmul batching and broadcasting, 1-D operands as numpy."""
import numpy as np

from .elementwise import broadcast_shape


def matmul_operand_shapes(x_shape, y_shape, transpose_x=False, transpose_y=False):
    """The 2-D-or-more shapes matmul multiplies (after transposes; 1-D made 2-D as numpy).

    A 1-D x is a row ``(1, k)`` and a 1-D y a column ``(k, 1)``; the
    transposes swap the last two dims of operands of rank >= 2 (a 1-D
    operand has nothing to transpose, as in Paddle).
    """
    xs, ys = list(x_shape), list(y_shape)
    if transpose_x and len(xs) >= 2:
        xs[-2:] = xs[:-3:-1]
    if transpose_y and len(ys) >= 2:
        ys[-2:] = ys[:-3:-1]
    return tuple([1] + xs if len(xs) == 1 else xs), tuple(ys + [1] if len(ys) == 1 else ys)


def matmul_shape(x_shape, y_shape, transpose_x=False, transpose_y=False, op="matmul"):
    """The output shape of ``matmul``, or ValueError naming the operands' shapes."""
    if len(x_shape) == 0 or len(y_shape) == 0:
        raise ValueError(f"{op}: operands must have rank >= 1, got shapes {list(x_shape)} "
                         f"and {list(y_shape)}")
    a, b = matmul_operand_shapes(x_shape, y_shape, transpose_x, transpose_y)
    if a[-1] != b[-2]:
        raise ValueError(f"{op}: inner dims differ: x {list(x_shape)} (transpose_x="
                         f"{transpose_x}) gives {a[-1]} columns, y {list(y_shape)} "
                         f"(transpose_y={transpose_y}) gives {b[-2]} rows")
    batch = broadcast_shape(op, a[:-2], b[:-2])
    out = batch + ((a[-2],) if len(x_shape) > 1 else ()) + ((b[-1],) if len(y_shape) > 1 else ())
    return out


def matmul_infer_meta(x, y, transpose_x=False, transpose_y=False):
    """Shape of numpy.matmul after the transposes; dtype of numpy's promotion."""
    shape = matmul_shape(x.shape, y.shape, transpose_x, transpose_y)
    try:
        dtype = np.matmul(np.empty((0, 0), x.dtype), np.empty((0, 0), y.dtype)).dtype
    except TypeError:
        raise TypeError(f"matmul: dtypes {x.dtype.name} and {y.dtype.name} are not "
                        "supported") from None
    return x.with_(shape=shape, dtype=dtype)
