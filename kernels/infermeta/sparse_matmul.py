"""Shape rules of the sparse matmul family: matmul, mv, addmm, masked_matmul (2-D and
batched 3-D operands of one rank, no broadcasting)."""
import math
import numbers

import numpy as np

from ..core.dtypes import COMPLEX, INTS
from ..core.meta import MetaTensor
from ..core.size import check_bytes

DENSE, COO = "dense", "sparse_coo"
#: Value dtypes the family computes in (scipy's sparsetools have no float16 or bool).
DTYPES = INTS + (np.dtype(np.float32), np.dtype(np.float64)) + COMPLEX


def _check_dtype(op, name, t):
    if t.dtype not in DTYPES:
        raise TypeError(f"{op}: {name} has dtype {t.dtype}; expected one of "
                        f"{[d.name for d in DTYPES]}")


def _check_matrix(op, name, t):
    if t.ndim not in (2, 3):
        kind = "dense" if t.layout == DENSE else "sparse"
        what = f"a 1-D {kind} tensor is not a matrix; " if t.ndim == 1 else ""
        if t.ndim == 1 and kind == "dense":
            what += "sparse.mv multiplies a sparse matrix by a vector; "
        raise ValueError(f"{op}: {name} has shape {list(t.shape)}; {what}expected a 2-D "
                         "matrix [rows, cols] or a batch of them [batch, rows, cols]")


def batched_matmul_shape(op, x, y, xname="x", yname="y"):
    """The shape of ``x @ y`` for 2-D or batched 3-D operands of one rank.

    Raises
    ------
    ValueError
        A rank other than 2 or 3, ranks that differ, batch sizes that differ
        or inner dims that differ.
    """
    _check_matrix(op, xname, x)
    _check_matrix(op, yname, y)
    if x.ndim != y.ndim:
        raise ValueError(f"{op}: {xname} {list(x.shape)} and {yname} {list(y.shape)} must "
                         "both be 2-D or both be batched 3-D")
    if x.ndim == 3 and x.shape[0] != y.shape[0]:
        raise ValueError(f"{op}: batch sizes differ: {xname} {list(x.shape)} has "
                         f"{x.shape[0]}, {yname} {list(y.shape)} has {y.shape[0]}")
    if x.shape[-1] != y.shape[-2]:
        raise ValueError(f"{op}: inner dims differ: {xname} {list(x.shape)} has "
                         f"{x.shape[-1]} columns, {yname} {list(y.shape)} has "
                         f"{y.shape[-2]} rows")
    return tuple(x.shape[:-1]) + (y.shape[-1],)


def _out(shape, dtype, layout, place):
    sparse_dim = len(shape) if layout == COO else None
    return MetaTensor(shape, dtype, layout, place, sparse_dim=sparse_dim)


def sparse_matmul_infer_meta(x, y):
    """``x @ y`` with at least one sparse operand: sparse @ sparse is sparse in x's layout."""
    if x.layout == DENSE and y.layout == DENSE:
        raise TypeError("matmul: x and y are both dense; sparse.matmul needs a sparse "
                        "operand (use dense.matmul)")
    _check_dtype("matmul", "x", x)
    _check_dtype("matmul", "y", y)
    shape = batched_matmul_shape("matmul", x, y)
    layout = x.layout if DENSE not in (x.layout, y.layout) else DENSE
    return _out(shape, np.result_type(x.dtype, y.dtype), layout, x.place)


def sparse_mv_infer_meta(x, vec):
    """Sparse x [B?, m, k] times dense vec [B?, k]: dense [B?, m]."""
    if x.layout == DENSE or vec.layout != DENSE:
        raise TypeError(f"mv: x must be sparse and vec dense, got {x.layout} and "
                        f"{vec.layout}")
    _check_dtype("mv", "x", x)
    _check_dtype("mv", "vec", vec)
    _check_matrix("mv", "x", x)
    if vec.ndim != x.ndim - 1:
        raise ValueError(f"mv: vec has shape {list(vec.shape)}; expected "
                         f"{x.ndim - 1} dims for x of shape {list(x.shape)}")
    if x.ndim == 3 and x.shape[0] != vec.shape[0]:
        raise ValueError(f"mv: batch sizes differ: x {list(x.shape)} has {x.shape[0]}, "
                         f"vec {list(vec.shape)} has {vec.shape[0]}")
    if x.shape[-1] != vec.shape[-1]:
        raise ValueError(f"mv: inner dims differ: x {list(x.shape)} has {x.shape[-1]} "
                         f"columns, vec {list(vec.shape)} has {vec.shape[-1]} entries")
    return _out(x.shape[:-1], np.result_type(x.dtype, vec.dtype), DENSE, x.place)


ADDMM_LAYOUTS = "(dense, sparse, dense) or (sparse, sparse, sparse) of one sparse layout"


def sparse_addmm_infer_meta(input, x, y, beta=1.0, alpha=1.0):
    """``beta * input + alpha * (x @ y)`` with Paddle's layout table; input not broadcast."""
    layouts = (input.layout, x.layout, y.layout)
    ok = (layouts[0] == DENSE and layouts[1] != DENSE and layouts[2] == DENSE) or (
        layouts[0] != DENSE and len(set(layouts)) == 1)
    if not ok:
        raise TypeError(f"addmm: layouts (input, x, y) = {layouts}; expected "
                        f"{ADDMM_LAYOUTS}")
    for name, t in (("input", input), ("x", x), ("y", y)):
        _check_dtype("addmm", name, t)
    shape = batched_matmul_shape("addmm", x, y)
    if tuple(input.shape) != shape:
        raise ValueError(f"addmm: input has shape {list(input.shape)}, but x @ y has shape "
                         f"{list(shape)}; input is not broadcast")
    dtype = np.result_type(input.dtype, x.dtype, y.dtype)
    for name, v in (("beta", beta), ("alpha", alpha)):
        _check_factor(name, v, dtype)
    return _out(shape, dtype, input.layout, x.place)


def _check_factor(name, v, dtype):
    """addmm's beta or alpha must be a number the result's integer ``dtype`` holds exactly
    (numpy raises OverflowError for an int beyond it; a fraction would be truncated)."""
    if isinstance(v, bool) or not isinstance(v, numbers.Number):
        raise TypeError(f"addmm: {name} must be a number, got {type(v).__name__}")
    if isinstance(v, complex) and dtype.kind != "c":
        raise TypeError(f"addmm: {name} {v!r} is complex, but the result has real dtype "
                        f"{dtype}")
    if dtype.kind not in "iu":
        return
    whole = isinstance(v, numbers.Integral) or (isinstance(v, numbers.Real)
                                                and math.isfinite(v) and float(v).is_integer())
    if not whole:
        raise TypeError(f"addmm: {name} {v!r} is not a whole number, but the result has "
                        f"integer dtype {dtype}")
    info = np.iinfo(dtype)
    if not info.min <= int(v) <= info.max:
        raise TypeError(f"addmm: {name} {v!r} does not fit the result's integer dtype "
                         f"{dtype} ([{info.min}, {info.max}])")


def masked_matmul_infer_meta(x, y, mask):
    """Dense x @ dense y at mask's coordinates: mask's shape and layout, x @ y's dtype."""
    if x.layout != DENSE or y.layout != DENSE or mask.layout == DENSE:
        raise TypeError(f"masked_matmul: x and y must be dense and mask sparse, got "
                        f"{x.layout}, {y.layout} and {mask.layout}")
    _check_dtype("masked_matmul", "x", x)
    _check_dtype("masked_matmul", "y", y)
    shape = batched_matmul_shape("masked_matmul", x, y)
    if tuple(mask.shape) not in (shape, shape[-2:]):
        raise ValueError(f"masked_matmul: mask has shape {list(mask.shape)}, but x @ y has "
                         f"shape {list(shape)} (a 2-D mask may also stand for each batch: "
                         f"{list(shape[-2:])})")
    return _out(shape, np.result_type(x.dtype, y.dtype), mask.layout, x.place)


def matmul_grad_infer_meta(x, y):
    """x's and y's metadata; sparse @ sparse with a CSR operand first checks that the
    transposes its gradients multiply by (x^H and y^H, block-diagonal when batched: B*k
    and B*n rows) have row pointers that fit in memory, or ValueError before any work.
    Two COO operands need no check: where their dims far outnumber their entries the
    gradients renumber them as the forward does, so the row pointers follow the entries."""
    if x.layout != DENSE and y.layout != DENSE and "sparse_csr" in (x.layout, y.layout):
        for name, t in (("x", x), ("y", y)):
            rows = int(np.prod(t.shape[:-2], dtype=object)) * t.shape[-1] + 1
            check_bytes("matmul_grad", f"the gradient walks the transpose of {name} "
                        f"{list(t.shape)} by rows and", rows * 8, "of row pointers")
    return x, y


def inputs_infer_meta(*inputs):
    """Gradients of every input: each with its input's metadata."""
    return tuple(inputs)
