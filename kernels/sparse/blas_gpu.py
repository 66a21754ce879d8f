"""Sparse BLAS on the GPU backend: cuSPARSE (through cupyx) and ``sddmm.cu``.

The same four primitives as :mod:`kernels.sparse.blas`, on 2-D CSR matrices:

==========  =============================================================
spmm        ``cupyx.scipy.sparse.csr_matrix @ dense`` (cuSPARSE SpMM)
spgemm      ``csr_matrix @ csr_matrix`` (cuSPARSE SpGEMM)
transpose   ``csr_matrix.T.tocsr()`` (cuSPARSE csr2csc)
sddmm       ``sddmm.cu``: one thread per entry, through :func:`launch_sddmm`
==========  =============================================================

cuSPARSE takes float32, float64, complex64 and complex128 values with int32
indices.  Integer values, and matrices whose indices need int64, run the CPU
primitives on a host copy (exact, and moved back to the device).  On the
tests' CPU emulator of the GPU backend the arrays are numpy arrays: scipy's
sparsetools then stand in for cuSPARSE, while ``sddmm.cu`` runs emulated.

Determinism: ``sddmm.cu`` sums each entry's products in a fixed order with no
atomics, so it is bit-reproducible run to run (it may differ from the CPU in
the last bits: the GPU fuses multiply-adds).  cuSPARSE's SpMM and SpGEMM
make no bit-reproducibility promise for their default algorithms; results
agree with the CPU to rounding.
"""
import numpy as np

from ..core.xp import place_of, to_place
from ..gpu.backend import device, launch_config
from . import blas
from .data import CsrData

#: Value dtypes cuSPARSE and sddmm.cu take; kernel name suffixes.
_VALUE_SUFFIX = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64",
                 np.dtype(np.complex64): "c64", np.dtype(np.complex128): "c128"}
_INDEX_SUFFIX = {np.dtype(np.int32): "i32", np.dtype(np.int64): "i64"}
INT32_MAX = 2 ** 31 - 1


def launch_sddmm(backend, rows, cols, x, yt, grid=None, block=None):
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
    if dtype not in _VALUE_SUFFIX:
        raise TypeError(f"sddmm: dtype {dtype} is not float32, float64, complex64 or "
                        "complex128")
    if rows.shape != cols.shape or x.shape[1] != yt.shape[1]:
        raise ValueError(f"sddmm: rows {list(rows.shape)} and cols {list(cols.shape)}, "
                         f"x {list(x.shape)} and yt {list(yt.shape)} do not fit")
    index = np.result_type(rows.dtype, cols.dtype)
    rows = xp.ascontiguousarray(rows, dtype=index)
    cols = xp.ascontiguousarray(cols, dtype=index)
    x = xp.ascontiguousarray(x, dtype=dtype)
    yt = xp.ascontiguousarray(yt, dtype=dtype)
    nnz, k = rows.shape[0], x.shape[1]
    out = xp.zeros(nnz, dtype)
    if nnz == 0:
        return out
    real = (lambda a: a.view(a.real.dtype)) if dtype.kind == "c" else (lambda a: a)
    name = f"sddmm_{_VALUE_SUFFIX[dtype]}_{_INDEX_SUFFIX[index]}"
    args = (rows, cols, real(x.reshape(-1)), real(yt.reshape(-1)), real(out),
            np.int64(nnz), np.int64(k))
    backend.function("sddmm.cu", name)(*launch_config(nnz, grid, block), args)
    return out


# ---------------------------------------------------------------- primitives
def _on_device(*arrays):
    return any(place_of(a) == "gpu" for a in arrays)


def _cusparse_ok(dtype, *extents):
    return np.dtype(dtype) in _VALUE_SUFFIX and max(extents) <= INT32_MAX


def _host(fn, *args):
    """``fn`` on host copies of CsrData / array arguments, the result moved back."""
    place = "gpu" if _on_device(*[a.values if isinstance(a, CsrData) else a for a in args]) \
        else "cpu"
    moved = [CsrData(*(to_place(b, "cpu") for b in a[:3]), a.shape) if isinstance(a, CsrData)
             else to_place(a, "cpu") for a in args]
    out = fn(*moved)
    if isinstance(out, CsrData):
        return CsrData(*(to_place(b, place) for b in out[:3]), out.shape)
    return to_place(out, place)


def _matrix(a, dtype):
    import cupy
    import cupyx.scipy.sparse as csp
    return csp.csr_matrix((a.values.astype(dtype, copy=False), a.cols.astype(cupy.int32),
                           a.crows.astype(cupy.int32)), shape=a.shape)


def _csr(m):
    return CsrData(m.indptr, m.indices, m.data, tuple(m.shape))


def spmm(a, y):
    """``a @ y``: cuSPARSE SpMM; see :func:`kernels.sparse.blas.spmm`."""
    dtype = np.result_type(a.values.dtype, y.dtype)
    if not _on_device(y) or not _cusparse_ok(dtype, a.nnz, *a.shape) or 0 in y.shape \
            or a.nnz == 0:
        return _host(blas.spmm, a, y)
    return _matrix(a, dtype) @ y.astype(dtype, copy=False)


def spgemm(a, b):
    """``a @ b``: cuSPARSE SpGEMM; see :func:`kernels.sparse.blas.spgemm`."""
    dtype = np.result_type(a.values.dtype, b.values.dtype)
    if not _on_device(a.values) or not _cusparse_ok(dtype, a.nnz, b.nnz, *a.shape, *b.shape) \
            or a.nnz == 0 or b.nnz == 0:
        return _host(blas.spgemm, a, b)
    return _csr(_matrix(a, dtype) @ _matrix(b, dtype))


def transpose(a):
    """``a.T`` as CSR: cuSPARSE csr2csc; see :func:`kernels.sparse.blas.transpose`."""
    if not _on_device(a.values) or not _cusparse_ok(a.values.dtype, a.nnz, *a.shape) \
            or a.nnz == 0:
        return _host(blas.transpose, a)
    return _csr(_matrix(a, a.values.dtype).T.tocsr())


def sddmm(rows, cols, x, yt):
    """The entries of ``x @ yt.T`` at (rows, cols): ``sddmm.cu`` on the GPU backend."""
    if np.result_type(x.dtype, yt.dtype) not in _VALUE_SUFFIX:
        return _host(blas.sddmm, rows, cols, x, yt)
    return launch_sddmm(device(), rows, cols, x, yt)
