"""Reduction shape rules."""
import functools

import numpy as np

from ..core.meta import Canonical
from ..funcs.shape import normalize_axis


def _axes(ndim, axis, op):
    if axis is None:
        return tuple(range(ndim))
    axes = tuple(normalize_axis(a, ndim, op) for a in axis)
    if len(set(axes)) != len(axes):
        raise ValueError(f"{op}: axis {list(axis)} repeats an axis")
    return axes


@functools.lru_cache(maxsize=None)
def sum_dtype(dtype):
    """numpy's accumulator dtype for a sum: bool and small ints widen to 64 bits."""
    return np.zeros(1, dtype=dtype).sum().dtype


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
