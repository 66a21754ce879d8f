"""Launcher of ``sddmm.cu``: the entries of a dense product at given coordinates."""
import numpy as np

from .launch import index_suffix, launch, value_suffix


def sddmm(backend, rows, cols, x, yt, grid=None, block=None):
    """``out[e] = sum_j x[rows[e], j] * yt[cols[e], j]`` by ``sddmm.cu``.

    Parameters
    ----------
    backend : CupyBackend or the tests' emulator (see :mod:`kernels.gpu.backend`)
    rows, cols : xp arrays, int32 or int64 (cast to one dtype), valid indices
    x : xp array [M, K]; yt : xp array [N, K]
        float32, float64, complex64 or complex128 (promoted to one dtype).
    grid, block : int, optional
        Forced launch geometry; any gives the same result.

    Returns
    -------
    xp array [len(rows)]

    Raises
    ------
    TypeError
        A value dtype ``sddmm.cu`` does not have.
    """
    xp = backend.xp
    dtype = np.result_type(x.dtype, yt.dtype)
    value = value_suffix("sddmm", dtype)
    if rows.shape != cols.shape or x.shape[1] != yt.shape[1]:
        raise ValueError(f"sddmm: rows {list(rows.shape)} and cols {list(cols.shape)}, "
                         f"x {list(x.shape)} and yt {list(yt.shape)} do not fit")
    index = np.result_type(rows.dtype, cols.dtype)
    suffix = index_suffix("sddmm", "rows", index)
    rows = xp.ascontiguousarray(rows, dtype=index)
    cols = xp.ascontiguousarray(cols, dtype=index)
    x = xp.ascontiguousarray(x, dtype=dtype)
    yt = xp.ascontiguousarray(yt, dtype=dtype)
    nnz, k = rows.shape[0], x.shape[1]
    out = xp.zeros(nnz, dtype)
    real = (lambda a: a.view(a.real.dtype)) if dtype.kind == "c" else (lambda a: a)
    args = (rows, cols, real(x.reshape(-1)), real(yt.reshape(-1)), real(out),
            np.int64(nnz), np.int64(k))
    launch(backend, "sddmm.cu", f"sddmm_{value}_{suffix}", nnz, args, grid, block)
    return out
