"""Reduction shape rules."""
import functools

import numpy as np

from ..core.meta import Canonical
from ..funcs.shape import normalize_axis


def _axes(ndim, axis, op):
    if axis is None or len(axis) == 0:     # [] reduces every axis, as in Paddle
        return tuple(range(ndim))
    axes = tuple(normalize_axis(a, ndim, op) for a in axis)
    if len(set(axes)) != len(axes):
        raise ValueError(f"{op}: axis {list(axis)} repeats an axis")
    return axes


@functools.lru_cache(maxsize=None)
def sum_dtype(dtype):
    """numpy's accumulator dtype for a sum: bool and small ints widen to int64.

    numpy sums uint8 into uint64, which phisparse does not support; int64
    holds every uint8 sum that fits in memory (as Paddle and torch give).
    """
    dt = np.zeros(1, dtype=dtype).sum().dtype
    return np.dtype(np.int64) if dt.kind == "u" else dt


def sum_keepdim_shape(shape, axis):
    """``shape`` with the summed axes set to 1 (the keepdim=True shape)."""
    axes = _axes(len(shape), axis, "sum")
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
