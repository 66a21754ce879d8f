"""Shape rules of sparse add, subtract, multiply and divide (numpy broadcasting).

Sparse with sparse needs one layout; the result has it, with the union of the
patterns (add, subtract, divide) or their intersection (multiply).  Sparse
with dense: multiply and divide are sparse on the sparse operand's pattern,
add and subtract dense.  The dtype is numpy's (``ufunc.resolve_dtypes``).
A COO result's sparse dims are the sparse operands' sparse dims placed in the
broadcast shape (the larger count when both are sparse: the other operand's
leading dense dims are folded).
"""
import numpy as np

from .sparse import check_csr_rank
from .sparse_values import SPARSE

UFUNCS = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply,
          "divide": np.divide}


def broadcast_shape(op, x, y):
    """numpy's broadcast of x's and y's shapes, or ValueError naming ``op``."""
    try:
        return tuple(np.broadcast_shapes(tuple(x.shape), tuple(y.shape)))
    except ValueError:
        raise ValueError(f"{op}: shapes {list(x.shape)} and {list(y.shape)} do not "
                         "broadcast") from None


def result_dtype(op, x, y):
    """numpy's result dtype of ``op`` on x's and y's dtypes, or TypeError naming ``op``."""
    try:
        return np.dtype(UFUNCS[op].resolve_dtypes((x.dtype, y.dtype, None))[2])
    except TypeError:
        raise TypeError(f"{op}: numpy's {op} does not take dtypes {x.dtype} and "
                        f"{y.dtype}") from None


def placed_sparse_dim(t, ndim):
    """The sparse dims of COO ``t`` counted in an ``ndim``-rank broadcast result."""
    return ndim - t.ndim + t.sparse_dim


def _binary(op, x, y):
    xs, ys = x.layout in SPARSE, y.layout in SPARSE
    if not (xs or ys):
        raise TypeError(f"{op}: sparse.{op} needs a sparse operand; x and y are dense "
                        "(use dense.{op})".replace("{op}", op))
    if xs and ys and x.layout != y.layout:
        raise TypeError(f"{op}: x is {x.layout} and y is {y.layout}; sparse with sparse "
                        "needs one layout (convert one of them first)")
    shape = broadcast_shape(op, x, y)
    dtype = result_dtype(op, x, y)
    s = x if xs else y
    if not (xs and ys) and op in ("add", "subtract"):
        return s.with_(shape=shape, dtype=dtype, layout="dense", sparse_dim=None)
    if s.layout == "sparse_csr":
        check_csr_rank(op, "the broadcast shape", shape)
        return s.with_(shape=shape, dtype=dtype)
    k = placed_sparse_dim(s, len(shape))
    if xs and ys:
        k = max(k, placed_sparse_dim(y, len(shape)))
    return s.with_(shape=shape, dtype=dtype, sparse_dim=k)


def sparse_add_infer_meta(x, y):
    """See the module docstring."""
    return _binary("add", x, y)


def sparse_subtract_infer_meta(x, y):
    """See the module docstring."""
    return _binary("subtract", x, y)


def sparse_multiply_infer_meta(x, y):
    """See the module docstring."""
    return _binary("multiply", x, y)


def sparse_divide_infer_meta(x, y):
    """See the module docstring."""
    return _binary("divide", x, y)


def binary_grad_infer_meta(x, y):
    """The gradients have their operands' metadata."""
    return x, y
