"""Shape rules of the elementwise family (kernels/funcs/elementwise.py).

The output shape is numpy's broadcast of the inputs' shapes; the dtype is
the one numpy's ufunc gives (found on 0-size arrays, so never by touching data).
"""
from ..funcs.elementwise import BINARY, UNARY, result_dtype


def broadcast_shape(op, *shapes):
    """numpy's broadcast of ``shapes``, or ValueError naming the op and the shapes."""
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for d in range(ndim):
        sizes = {s[d - ndim + len(s)] for s in shapes if d - ndim + len(s) >= 0} - {1}
        if len(sizes) > 1:
            raise ValueError(f"{op}: shapes {' and '.join(str(list(s)) for s in shapes)} "
                             f"do not broadcast (dim {d} from the front of the result: "
                             f"sizes {sorted(sizes)})")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def unary_infer_meta(op, x, *params):
    """x's shape with the dtype ``op`` gives for x's dtype and these params."""
    return x.with_(dtype=result_dtype(op, UNARY[op], x.dtype, *params))


def binary_infer_meta(op, x, y):
    """The broadcast of x's and y's shapes, with the dtype numpy's promotion gives."""
    shape = broadcast_shape(op, x.shape, y.shape)
    return x.with_(shape=shape, dtype=result_dtype(op, BINARY[op], x.dtype, y.dtype))


def binary_grad_infer_meta(x, y):
    """The gradients of a binary op have the shapes and dtypes of its inputs."""
    return x, y
