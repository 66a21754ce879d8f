"""Launcher of ``expand.cu``: a broadcast copy through stride-0 output strides, by rows."""
import math

import numpy as np

from .launch import divisors, i64, launch, row_words, team_shift


def expand(backend, x, out_shape, strides, grid=None, block=None):
    """``x`` broadcast to ``out_shape`` as a new contiguous array.

    ``strides`` holds, per output dim, x's C-contiguous element stride for
    that dim, 0 on grown and new dims (expand's ``output_stride``, see
    :func:`kernels.funcs.broadcast.expand_output_stride`); the caller has
    checked the shapes.  The trailing dims x holds contiguously become one
    row, copied in the widest words its bytes allow (:func:`row_words`).
    """
    shape, row, d = tuple(out_shape), 1, len(out_shape)
    while d and (strides[d - 1] == row or shape[d - 1] == 1):
        row *= shape[d - 1]
        d -= 1
    w, word = row_words(backend.xp, x, row)
    size = x.dtype.itemsize
    per, n_rows = row * size // word, math.prod(shape[:d])
    out = backend.xp.empty(n_rows * per * word // w.itemsize, dtype=w.dtype)
    shift = team_shift(per)
    args = (w, out, np.int64(n_rows), np.int64(per), np.int32(shift), np.int32(d),
            divisors(backend, shape[:d]), i64(backend, [s * size // word for s in strides[:d]]))
    launch(backend, "expand.cu", f"expand_u{8 * word}", n_rows << shift, args, grid, block)
    return out.view(x.dtype).reshape(shape)
