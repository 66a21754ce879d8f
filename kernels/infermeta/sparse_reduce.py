"""Shape rules of sparse sum and softmax (paddle.sparse.sum, paddle.sparse.nn.functional.softmax).

sum: the summed dense dims leave the values; the summed sparse dims leave the
indices (entries that then share a coordinate are added).  A COO result has
numpy's shape (``keepdim``: every summed dim kept with size 1), except that a
full reduction has shape [1] (Paddle), since a COO tensor keeps a sparse dim.
When every sparse dim is summed but dense dims remain, the first remaining
dim becomes the result's one sparse dim (``kept`` is empty), with an entry
at each of its positions.  A CSR result has numpy's keepdims shape whatever
``keepdim`` says, so it keeps x's rank ([1, cols] for axis 0 of a 2-D
tensor, [rows, 1] for axis 1, [1, 1] or [1, 1, 1] for a full reduction).
"""
import functools
from typing import NamedTuple

import numpy as np

from .reduce import _axes, sum_dtype
from .sparse_values import require_sparse


class SumPlan(NamedTuple):
    """What a sparse sum keeps: see the module docstring."""

    axes: tuple           # the summed axes, normalised
    kept: tuple           # x's sparse dims that stay (summed ones with size 1);
                          # empty: the first dense dim left becomes the sparse dim
    value_axes: tuple     # the summed axes of the values array
    shape: tuple          # the result's shape
    sparse_dim: int


def sum_plan(shape, sparse_dim, axis, keepdim, csr=False):
    """The :class:`SumPlan` of summing a sparse tensor of ``shape`` over ``axis``
    (remembered per arguments: a sum runs it in its infer-meta and its kernel)."""
    try:
        return _cached_plan(tuple(shape), sparse_dim, None if axis is None else tuple(axis),
                            bool(keepdim), csr)
    except TypeError:                  # an unhashable axis entry: _axes says what is wrong
        return _plan(shape, sparse_dim, axis, keepdim, csr)


@functools.lru_cache(maxsize=1024)
def _cached_plan(shape, sparse_dim, axis, keepdim, csr):
    return _plan(shape, sparse_dim, axis, keepdim, csr)


def _plan(shape, sparse_dim, axis, keepdim, csr):
    axes = _axes(len(shape), axis, "sum")
    keepdim = keepdim or csr
    kept = [d for d in range(sparse_dim) if keepdim or d not in axes]
    out = [1 if d in axes else s for d, s in enumerate(shape) if keepdim or d not in axes]
    if not out:                 # a full reduction keeps the first summed dim, size 1
        kept, out = [axes[0]], [1]
    value_axes = tuple(a - sparse_dim + 1 for a in axes if a >= sparse_dim)
    return SumPlan(axes, tuple(kept), value_axes, tuple(out), max(len(kept), 1))


def sparse_sum_dtype(dtype, requested=None):
    """The result dtype: ``requested``, else numpy's sum dtype (unsigned ints sum to int64)."""
    if requested is not None:
        return np.dtype(requested)
    out = sum_dtype(dtype)
    return np.dtype(np.int64) if out.kind == "u" else out


def sparse_sum_infer_meta(x, axis=None, dtype=None, keepdim=False):
    """Output meta of sparse sum; int and bool values sum to int64 unless ``dtype`` is given."""
    require_sparse("sum", "x", x)
    csr = x.layout == "sparse_csr"
    plan = sum_plan(x.shape, x.ndim if csr else x.sparse_dim, axis, keepdim, csr)
    out_dtype = sparse_sum_dtype(x.dtype, dtype)
    return x.with_(shape=plan.shape, dtype=out_dtype,
                   sparse_dim=None if csr else plan.sparse_dim)


def sparse_softmax_infer_meta(x, axis=-1):
    """x's metadata; CSR takes only the last axis, and the dtype must be floating."""
    require_sparse("softmax", "x", x)
    if not -x.ndim <= axis < x.ndim:
        raise ValueError(f"softmax: axis {axis} is out of range for a tensor of rank "
                         f"{x.ndim}; expected a value in [{-x.ndim}, {x.ndim})")
    if x.layout == "sparse_csr" and axis % x.ndim != x.ndim - 1:
        raise ValueError(f"softmax: a CSR tensor takes only the last axis (-1 or "
                         f"{x.ndim - 1}), got axis {axis}")
    if x.dtype.kind != "f":
        raise TypeError(f"softmax: x must hold floating values, got dtype {x.dtype}")
    return x
