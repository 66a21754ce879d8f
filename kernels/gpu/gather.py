"""Launchers of ``gather.cu``: the gather primitive and its atomic scatter-add.

Both take the gather folded to a :class:`kernels.funcs.gather_view.GatherView`
and an index already checked and wrapped into ``[0, bound)``
(:func:`kernels.funcs.gather_view.checked_index`); x holds the slice
``[offset, offset + view.size)`` of the gathered axis, and an index outside
it gives the dtype's additive identity (forward: -0.0 for floats, 0 else) or
contributes nothing (gradient).
"""
import math

import numpy as np

from ..core.dtypes import additive_identity
from .launch import INDEX_SUFFIX, divisors, launch, row_words, team_shift

# gather_grad's accumulation dtype and components per item; see gather_grad.
GRAD_WORK = {
    np.dtype(np.float16): (np.dtype(np.float32), 1),
    np.dtype(np.float32): (np.dtype(np.float32), 1),
    np.dtype(np.float64): (np.dtype(np.float64), 1),
    np.dtype(np.complex64): (np.dtype(np.float32), 2),
    np.dtype(np.complex128): (np.dtype(np.float64), 2),
}
_REAL_SUFFIX = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}


def gather(backend, x, index, view, offset=0, grid=None, block=None):
    """Output rows ``(b, o, p)`` = x rows ``(b, o, index[b, p] - offset)``; outside x,
    the dtype's additive identity (-0.0 for floats: a partial_sum addend).

    Rows move in the widest words their bytes allow (:func:`row_words`).

    Returns
    -------
    xp array of ``view.out_shape`` and x's dtype
    """
    xp = backend.xp
    w, word = row_words(xp, x, view.inner)
    if word < x.dtype.itemsize:         # x off its items' alignment: an aligned copy
        w, word = row_words(xp, xp.array(x, copy=True), view.inner)
    per = view.inner * x.dtype.itemsize // word
    n_rows = math.prod(view.out_shape) // view.inner if view.inner else 0
    out = xp.empty(n_rows * per * word // w.itemsize, dtype=w.dtype)
    index = xp.ascontiguousarray(index)
    shift = team_shift(per)
    args = (w, index, out, np.int64(n_rows), np.int64(per), np.int32(shift),
            divisors(backend, [view.per_batch, view.outer]), np.int64(view.size),
            np.int64(offset)) + fill_word(x.dtype, word)
    launch(backend, "gather.cu", f"gather_u{8 * word}_{INDEX_SUFFIX[index.dtype]}",
           n_rows << shift, args, grid, block)
    return out.view(x.dtype).reshape(view.out_shape)


def fill_word(dtype, word):
    """(low, high) uint64 bits of a ``word``-byte word of ``dtype``'s additive identity
    (``word`` a multiple of its itemsize)."""
    bits = np.zeros(16, np.uint8)
    bits[:word] = np.full(word // dtype.itemsize, additive_identity(dtype), dtype).view(np.uint8)
    lo, hi = bits.view(np.uint64)
    return lo, hi


def gather_grad(backend, out_grad, index, view, x_shape, offset=0, grid=None, block=None):
    """Scatter-add ``out_grad`` (of ``view.out_shape``) into zeros of ``x_shape``.

    Atomic policy: float32 and float64 use the native ``atomicAdd``
    (float64 needs sm_60+; the NVRTC check targets sm_70 and up). complex64
    and complex128 are viewed as interleaved float32/float64 pairs and each
    component is added by its own real atomic; a complex sum is the sum of
    its components, so the result is the same. float16 is accumulated in a
    float32 temporary and rounded to float16 once at the end, which needs no
    ``cuda_fp16.h`` and is more accurate than half-precision atomics. The
    caller allows only these dtypes. The order of atomic adds varies between
    runs, so float results may differ in the last bits from ``np.add.at``.
    """
    xp = backend.xp
    work, k = GRAD_WORK[np.dtype(out_grad.dtype)]
    grad = xp.ascontiguousarray(out_grad).reshape(-1)
    grad = grad.view(work) if k == 2 else grad.astype(work, copy=False)
    x_grad = xp.zeros(math.prod(x_shape) * k, dtype=work)
    index = xp.ascontiguousarray(index)
    per = view.inner * k
    n_rows = grad.size // per if per else 0
    shift = team_shift(per)
    args = (grad, index, x_grad, np.int64(n_rows), np.int64(per), np.int32(shift),
            divisors(backend, [view.per_batch, view.outer]), np.int64(view.size),
            np.int64(offset))
    name = f"gather_grad_{_REAL_SUFFIX[work]}_{INDEX_SUFFIX[index.dtype]}"
    launch(backend, "gather.cu", name, n_rows << shift, args, grid, block)
    x_grad = x_grad.view(out_grad.dtype) if k == 2 else x_grad.astype(out_grad.dtype, copy=False)
    return x_grad.reshape(tuple(x_shape))
