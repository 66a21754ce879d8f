"""Launcher of ``repeat.cu``: a tiled copy."""
import numpy as np

from .launch import from_words, i64, launch, words


def repeat(backend, x, repeats, grid=None, block=None):
    """``x`` tiled ``repeats`` times per dim (new dims in front), as ``np.tile``.

    The caller has checked ``repeats`` (at least ``x.ndim`` counts, none
    negative); a count of 0 gives a 0-size output.
    """
    repeats = tuple(int(r) for r in repeats)
    in_shape = (1,) * (len(repeats) - x.ndim) + tuple(x.shape)
    out_shape = tuple(s * r for s, r in zip(in_shape, repeats, strict=True))
    w, suffix = words(backend.xp, x)
    k = w.shape[-1]
    out = backend.xp.empty(out_shape + (k,), dtype=w.dtype)
    args = (w, out, np.int64(out.size), np.int32(out.ndim),
            i64(backend, out.shape), i64(backend, in_shape + (k,)))
    launch(backend, "repeat.cu", f"repeat_{suffix}", out.size, args, grid, block)
    return from_words(out, x.dtype, out_shape)
