"""Launcher of ``expand.cu``: a broadcast copy through stride-0 output strides."""
import numpy as np

from .launch import from_words, i64, launch, words


def expand(backend, x, out_shape, strides, grid=None, block=None):
    """``x`` broadcast to ``out_shape`` as a new contiguous array.

    ``strides`` holds, per output dim, x's C-contiguous element stride for
    that dim, 0 on grown and new dims (expand's ``output_stride``, see
    :func:`kernels.funcs.broadcast.expand_output_stride`); the caller has
    checked the shapes.
    """
    w, suffix = words(backend.xp, x)
    k = w.shape[-1]
    out = backend.xp.empty(tuple(out_shape) + (k,), dtype=w.dtype)
    args = (w, out, np.int64(out.size), np.int32(out.ndim),
            i64(backend, out.shape), i64(backend, [s * k for s in strides] + [1]))
    launch(backend, "expand.cu", f"expand_{suffix}", out.size, args, grid, block)
    return from_words(out, x.dtype, tuple(out_shape))
