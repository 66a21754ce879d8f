"""Shape rules of the elementwise family (kernels/funcs/elementwise.py).

The output shape is numpy's broadcast of the inputs' shapes; the dtype is
the one numpy's ufunc gives (found on 0-size arrays, so never by touching data).
"""
import numpy as np

from ..funcs.elementwise import BINARY, UNARY, result_dtype


def broadcast_shape(op, *shapes):
    """numpy's broadcast of ``shapes``, or ValueError naming the op and the shapes."""
    if all(s == shapes[0] for s in shapes[1:]):
        return tuple(shapes[0])
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
    dtype = result_dtype(op, UNARY[op], x.dtype, *params)
    return x if dtype == x.dtype else x.with_(dtype=dtype)


def binary_infer_meta(op, x, y):
    """The broadcast of x's and y's shapes, with the dtype numpy's promotion gives."""
    shape = broadcast_shape(op, x.shape, y.shape)
    dtype = result_dtype(op, BINARY[op], x.dtype, y.dtype)
    if shape == x.shape and dtype == x.dtype and x.layout == "dense":
        return x  # metadata is immutable: the common case builds nothing
    return x.with_(shape=shape, dtype=dtype)


def binary_grad_infer_meta(x, y):
    """The gradients of a binary op have the shapes and dtypes of its inputs."""
    return x, y


def where_infer_meta(condition, x, y):
    """numpy.where: the broadcast of all three shapes; x's and y's common dtype."""
    if condition.dtype != bool:
        raise TypeError(f"where: condition has dtype {condition.dtype.name}; expected bool")
    shape = broadcast_shape("where", condition.shape, x.shape, y.shape)
    return x.with_(shape=shape, dtype=np.result_type(x.dtype, y.dtype))


def where_grad_infer_meta(x, y):
    return x, y
