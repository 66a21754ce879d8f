"""Launcher of ``spmm.cu``: a CSR matrix times a row-major dense matrix."""
import numpy as np

from .launch import index_suffix, launch, value_suffix

#: Threads per chunk of entries: a warp, split between columns and entries (see ``spmm.cu``).
TEAM_SHIFT = 5
#: The most entries a chunk holds.
MAX_CHUNK = 2048


def lanes(n):
    """``(cs, es)``: log2 of the column lanes and entry lanes of a chunk's team for
    ``n`` columns; as many column lanes as columns, up to the whole team.

    Examples
    --------
    >>> [lanes(n) for n in (1, 2, 3, 32, 64)]
    [(0, 5), (1, 4), (2, 3), (5, 0), (5, 0)]
    """
    cs = min(TEAM_SHIFT, max(n - 1, 0).bit_length())
    return cs, TEAM_SHIFT - cs


def chunk_size(nnz, rows, es):
    """Entries per chunk: the mean row's entries rounded up to a power of two, so that
    a typical row is about one team's work, between four per entry lane and
    :data:`MAX_CHUNK`.

    Examples
    --------
    >>> chunk_size(10**7, 20000, 0), chunk_size(10**7, 20000, 5), chunk_size(10, 10, 0)
    (512, 512, 4)
    """
    mean = -(-nnz // max(rows, 1))
    return min(max(1 << max(mean - 1, 0).bit_length(), 4 << es), MAX_CHUNK)


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
        the atomic adds.

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
    value = value_suffix("spmm", dtype)
    if crows.ndim != 1 or cols.shape != vals.shape or y.ndim != 2:
        raise ValueError(f"spmm: crows {list(crows.shape)}, cols {list(cols.shape)}, "
                         f"vals {list(vals.shape)} and y {list(y.shape)} do not fit")
    index = np.result_type(crows.dtype, cols.dtype)
    suffix = index_suffix("spmm", "crows", index)
    rows, n = crows.shape[0] - 1, y.shape[1]
    out = xp.zeros((rows, n), dtype)
    real = (lambda a: a.view(a.real.dtype)) if dtype.kind == "c" else (lambda a: a)
    cs, es = lanes(n)
    nnz = cols.shape[0]
    chunk = chunk_size(nnz, rows, es)
    args = (xp.ascontiguousarray(crows, dtype=index), xp.ascontiguousarray(cols, dtype=index),
            real(xp.ascontiguousarray(vals, dtype=dtype)),
            real(xp.ascontiguousarray(y, dtype=dtype).reshape(-1)), real(out.reshape(-1)),
            np.int64(rows), np.int64(nnz), np.int64(n), np.int64(chunk), np.int32(cs),
            np.int32(es))
    items = -(-nnz // chunk) << TEAM_SHIFT if n else 0
    launch(backend, "spmm.cu", f"spmm_{value}_{suffix}", items, args, grid, block)
    return out
