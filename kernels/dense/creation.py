"""Dense creation ops (zeros, ones, full, arange and the *_like ops) and cast.

The ops without a tensor input build numpy arrays; the *_like ops build on
x's place.  cast is ``astype``; its gradient is cast back to x's dtype.
"""
from ..core.dtypes import ALL
from ..core.registry import register_kernel
from ..core.xp import xp_of
from ..funcs.sum_to_shape import grad_in_dtype
from ..infermeta.creation import arange_infer_meta

import numpy as np

BACKENDS = ("cpu", "gpu")


@register_kernel("zeros", backends=BACKENDS, dtypes=ALL)
def zeros(shape, dtype=None):
    """numpy.zeros (float64 by default)."""
    return np.zeros(shape, dtype or np.float64)


@register_kernel("ones", backends=BACKENDS, dtypes=ALL)
def ones(shape, dtype=None):
    """numpy.ones (float64 by default)."""
    return np.ones(shape, dtype or np.float64)


@register_kernel("full", backends=BACKENDS, dtypes=ALL)
def full(shape, fill_value, dtype=None):
    """numpy.full with the fill value's dtype unless ``dtype`` is given."""
    return np.full(shape, fill_value, dtype)


@register_kernel("arange", backends=BACKENDS, dtypes=ALL)
def arange(start, end=None, step=1, dtype=None):
    """numpy.arange(start, end, step) in the shape rule's dtype."""
    meta = arange_infer_meta(start, end, step, dtype)
    if end is None:
        start, end = 0, start
    if meta.shape == (0,):      # numpy's own length overflows for a tiny step the wrong way
        return np.empty(0, meta.dtype)
    start, end, step = (int(v) if isinstance(v, np.bool_) else v for v in (start, end, step))
    return np.arange(start, end, step, dtype=meta.dtype)    # numpy: np.True_ - 0 fails


@register_kernel("zeros_like", backends=BACKENDS, dtypes=ALL)
def zeros_like(x, dtype=None):
    """Zeros of x's shape on x's place."""
    return xp_of(x).zeros(x.shape, dtype or x.dtype)


@register_kernel("ones_like", backends=BACKENDS, dtypes=ALL)
def ones_like(x, dtype=None):
    """Ones of x's shape on x's place."""
    return xp_of(x).ones(x.shape, dtype or x.dtype)


@register_kernel("full_like", backends=BACKENDS, dtypes=ALL)
def full_like(x, fill_value, dtype=None):
    """fill_value in x's shape and dtype (or ``dtype``) on x's place."""
    return xp_of(x).full(x.shape, fill_value, dtype or x.dtype)


@register_kernel("cast", backends=BACKENDS, dtypes=ALL)
def cast(x, dtype):
    """x as ``dtype`` (numpy's astype: int casts truncate); x itself when it has it."""
    return x.astype(dtype, copy=False)


@register_kernel("cast_grad", backends=BACKENDS, dtypes=ALL)
def cast_grad(x, out_grad, dtype):
    """out_grad cast back to x's dtype (the real part for a real x); x is metadata only."""
    return grad_in_dtype(out_grad, x.dtype)
