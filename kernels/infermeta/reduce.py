"""Reduction shape rules."""
import functools

import numpy as np

from ..core.meta import Canonical
from ..funcs.shape import normalize_axis


def _axes(ndim, axis, op):
    """The reduced axes in [0, ndim); None and ``[]`` both mean every axis (Paddle), and
    so do axis 0 and -1 of a 0-d tensor (numpy, Paddle)."""
    if axis is None or len(axis) == 0:
        return tuple(range(ndim))
    if ndim == 0 and len(axis) == 1 and axis[0] in (0, -1):
        return ()
    axes = tuple(normalize_axis(a, ndim, op) for a in axis)
    if len(set(axes)) != len(axes):
        raise ValueError(f"{op}: axis {list(axis)} repeats an axis")
    return axes


@functools.lru_cache(maxsize=None)
def sum_dtype(dtype):
    """numpy's accumulator dtype for a sum or a product: bool and small ints widen to int64.

    numpy accumulates uint8 in uint64, which phisparse does not support; int64
    holds every uint8 sum that fits in memory (as Paddle and torch give), and a
    product wraps as numpy's int64 product of the same values does.
    """
    dt = np.zeros(1, dtype=dtype).sum().dtype
    return np.dtype(np.int64) if dt.kind == "u" else dt


def sum_keepdim_shape(shape, axis, op="sum"):
    """``shape`` with the summed axes set to 1 (the keepdim=True shape)."""
    axes = _axes(len(shape), axis, op)
    return tuple(1 if i in axes else s for i, s in enumerate(shape))


def sum_infer_meta(x, axis=None, keepdim=False):
    """Output meta of sum over ``axis`` (None: all axes), and the canonical ``axis``:
    the reduced axes, normalised, as a tuple."""
    axes = _axes(x.ndim, axis, "sum")
    if keepdim:
        shape = tuple(1 if i in axes else s for i, s in enumerate(x.shape))
    else:
        shape = tuple(s for i, s in enumerate(x.shape) if i not in axes)
    return Canonical(x.with_(shape=shape, dtype=sum_dtype(x.dtype)), {"axis": axes})


def reduced_shape(shape, axes, keepdim):
    """``shape`` after reducing ``axes`` (kept as 1 with keepdim)."""
    if keepdim:
        return tuple(1 if i in axes else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in axes)


def _reduce_meta(op, x, axis, keepdim, dtype, nonempty=False):
    """The output meta and the canonical ``axis``: the reduced axes, normalised, as a tuple."""
    axes = _axes(x.ndim, axis, op)
    if nonempty and any(x.shape[a] == 0 for a in axes):
        raise ValueError(f"{op}: cannot reduce axes {list(axes)} of shape {list(x.shape)}: "
                         "a reduced dim has size 0 and the op has no identity")
    out = x.with_(shape=reduced_shape(x.shape, axes, keepdim), dtype=dtype)
    return Canonical(out, {"axis": axes})


@functools.lru_cache(maxsize=256)
def _np_dtype(op, func, dtype):
    """The dtype numpy's ``func`` gives for ``dtype`` (cached: np.mean costs microseconds)."""
    try:
        return func(np.zeros(1, dtype)).dtype
    except TypeError:
        raise TypeError(f"{op}: dtype {np.dtype(dtype).name} is not supported") from None


def mean_infer_meta(x, axis=None, keepdim=False):
    """numpy's mean: integers and bool give float64."""
    return _reduce_meta("mean", x, axis, keepdim, _np_dtype("mean", np.mean, x.dtype))


def max_infer_meta(x, axis=None, keepdim=False):
    """max keeps x's dtype; an empty reduced dim is a ValueError."""
    return _reduce_meta("max", x, axis, keepdim, x.dtype, nonempty=True)


def min_infer_meta(x, axis=None, keepdim=False):
    """min keeps x's dtype; an empty reduced dim is a ValueError."""
    return _reduce_meta("min", x, axis, keepdim, x.dtype, nonempty=True)


def prod_infer_meta(x, axis=None, keepdim=False):
    """numpy's prod, accumulated as :func:`sum_dtype` (bool and small ints, uint8 too: int64)."""
    return _reduce_meta("prod", x, axis, keepdim, sum_dtype(x.dtype))


def arg_reduce_infer_meta(op, x, axis=None, keepdim=False):
    """argmax/argmin: int64; axis None gives a 0-d flat index (ones with keepdim).

    As numpy, a reduced axis of size 0 (every axis for axis None) is a
    ValueError, and other zero-size dims give an empty result; complex values
    are ordered as numpy's (and :func:`max_infer_meta`'s) lexicographic order.
    """
    axes = None if axis is None else (axis,)
    return _reduce_meta(op, x, axes, keepdim, np.dtype(np.int64), nonempty=True).out


def argmax_infer_meta(x, axis=None, keepdim=False):
    return arg_reduce_infer_meta("argmax", x, axis, keepdim)


def argmin_infer_meta(x, axis=None, keepdim=False):
    return arg_reduce_infer_meta("argmin", x, axis, keepdim)
