"""Launcher of ``sum_axis.cu``: the middle axis of an ``[A, B, C]`` view summed."""
import numpy as np

from .launch import launch

#: The real dtype a value dtype is summed as, and the reals per value.
SUM_WORK = {np.dtype(np.float32): (np.dtype(np.float32), 1),
            np.dtype(np.float64): (np.dtype(np.float64), 1),
            np.dtype(np.complex64): (np.dtype(np.float32), 2),
            np.dtype(np.complex128): (np.dtype(np.float64), 2)}
_SUFFIX = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}


def sum_axis(backend, v, grid=None, block=None):
    """``v`` of shape ``[A, B, C]`` (a dtype of :data:`SUM_WORK`) summed over B: ``[A, C]``.

    Each output adds its terms in order in float64 and rounds once, as the
    CPU's sum_to_shape accumulates narrow floats in float64.
    """
    xp = backend.xp
    n_a, n_b, n_c = v.shape
    real, k = SUM_WORK[np.dtype(v.dtype)]
    flat = xp.ascontiguousarray(v).reshape(-1).view(real)
    out = xp.empty(n_a * n_c * k, dtype=real)
    args = (flat, out, np.int64(n_a), np.int64(n_b), np.int64(n_c * k))
    launch(backend, "sum_axis.cu", f"sum_axis_{_SUFFIX[real]}", out.size, args, grid, block)
    return out.view(v.dtype).reshape(n_a, n_c)
