"""Launcher of ``spmm.cu``: a CSR matrix times a row-major dense matrix."""
import numpy as np

from .launch import index_suffix, launch
from .sddmm import VALUE_SUFFIX

#: Threads per row: a warp, split between columns and entries (see ``spmm.cu``).
TEAM_SHIFT = 5


def lanes(n):
    """``(cs, es)``: log2 of the column lanes and entry lanes of a row's team for
    ``n`` columns; as many column lanes as columns, up to the whole team.

    Examples
    --------
    >>> [lanes(n) for n in (1, 2, 3, 32, 64)]
    [(0, 5), (1, 4), (2, 3), (5, 0), (5, 0)]
    """
    cs = min(TEAM_SHIFT, max(n - 1, 0).bit_length())
    return cs, TEAM_SHIFT - cs


def spmm(backend, crows, cols, vals, y, grid=None, block=None):
    """``out = A @ y`` for the CSR ``A`` (crows, cols, vals) [M, K] by ``spmm.cu``.

    Parameters
    ----------
    backend : CupyBackend or the tests' emulator (see :mod:`kernels.gpu.backend`)
    crows, cols : xp arrays, int32 or int64 (cast to one dtype), a valid CSR structure;
        column indices may be unsorted and repeated within a row
    vals : xp array [nnz]; y : xp array [K, N]
        float32, float64, complex64 or complex128 (promoted to one dtype).
    grid, block : int, optional
        Forced launch geometry; any gives the same result up to the order of
        the atomic adds where ``N < 32``.

    Returns
    -------
    xp array [M, N], C-contiguous

    Raises
    ------
    TypeError
        A value dtype ``spmm.cu`` does not have.
    """
    xp = backend.xp
    dtype = np.result_type(vals.dtype, y.dtype)
    if dtype not in VALUE_SUFFIX:
        raise TypeError(f"spmm: dtype {dtype} is not float32, float64, complex64 or "
                        "complex128")
    if crows.ndim != 1 or cols.shape != vals.shape or y.ndim != 2:
        raise ValueError(f"spmm: crows {list(crows.shape)}, cols {list(cols.shape)}, "
                         f"vals {list(vals.shape)} and y {list(y.shape)} do not fit")
    index = np.result_type(crows.dtype, cols.dtype)
    suffix = index_suffix("spmm", "crows", index)
    rows, n = crows.shape[0] - 1, y.shape[1]
    out = xp.zeros((rows, n), dtype)
    real = (lambda a: a.view(a.real.dtype)) if dtype.kind == "c" else (lambda a: a)
    cs, es = lanes(n)
    args = (xp.ascontiguousarray(crows, dtype=index), xp.ascontiguousarray(cols, dtype=index),
            real(xp.ascontiguousarray(vals, dtype=dtype)),
            real(xp.ascontiguousarray(y, dtype=dtype).reshape(-1)), real(out.reshape(-1)),
            np.int64(rows), np.int64(n), np.int32(cs), np.int32(es))
    items = rows << TEAM_SHIFT if n and cols.shape[0] else 0
    launch(backend, "spmm.cu", f"spmm_{VALUE_SUFFIX[dtype]}_{suffix}", items, args, grid, block)
    return out
