"""Shape rules of sparse add, subtract, multiply and divide (numpy broadcasting).

Sparse with sparse needs one layout; the result has it, with the union of the
patterns (add, subtract, divide) or their intersection (multiply).  Sparse
with dense: multiply and divide are sparse on the sparse operand's pattern,
add and subtract dense.  Shape and dtype follow the dense elementwise
family (:mod:`kernels.infermeta.elementwise`).  A COO result's sparse dims
are the sparse operands' sparse dims placed in the broadcast shape (the
larger count when both are sparse: the other operand's leading dense dims
are folded).
"""
from ..funcs.elementwise import BINARY, result_dtype
from .elementwise import broadcast_shape
from .sparse import check_csr_rank
from .sparse_values import SPARSE


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
    shape = broadcast_shape(op, x.shape, y.shape)
    dtype = result_dtype(op, BINARY[op], x.dtype, y.dtype)
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
