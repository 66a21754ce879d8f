"""Sparse BLAS on the GPU backend: ``spmm.cu``, ``sddmm.cu`` and cuSPARSE (through cupyx).

The same four primitives as :mod:`kernels.sparse.blas`, on 2-D CSR matrices:

==========  =============================================================
spmm        ``spmm.cu``: a warp per chunk of entries (:func:`kernels.gpu.spmm.spmm`)
spgemm      ``csr_matrix @ csr_matrix`` (cuSPARSE SpGEMM)
transpose   ``csr_matrix.T.tocsr()`` (cuSPARSE csr2csc)
sddmm       ``sddmm.cu``: one thread per entry (:func:`kernels.gpu.sddmm.sddmm`)
==========  =============================================================

SpMM is ours, not cuSPARSE's, because cupyx's SpMM first asks whether the
matrix is canonical (sorted, unique columns): a one-thread-per-row check
whose answer is read back to the host, which on an H200 (2026-11-28) made a
call on 1e7 entries wait about 3 ms; ``spmm.cu`` needs no canonical form
and reads nothing back.  ``spmm.cu`` and ``sddmm.cu`` take float32,
float64, complex64 and complex128 values with int32 or int64 indices;
cuSPARSE takes the same values with int32 indices.  Other value dtypes, and
SpGEMM or a transpose whose indices need int64, run the CPU primitives on a
host copy (exact, and moved back to the device).  On the tests' CPU
emulator of the GPU backend the arrays are numpy arrays: scipy's
sparsetools then stand in for cuSPARSE, while the ``.cu`` kernels run
emulated.

Determinism: ``sddmm.cu`` sums each entry's products in a fixed order with
no atomics, so it is bit-reproducible run to run (it may differ from the CPU
in the last bits: the GPU fuses multiply-adds).  ``spmm.cu`` adds the
partial sums of a row that crosses a chunk's end (or, on a y of 16 columns or
fewer, SpMV included, of any row) by atomics, and cuSPARSE's SpGEMM
makes no bit-reproducibility promise; results agree with the CPU to rounding.
"""
import functools

import numpy as np

from ..core.xp import place_of, to_place, xp_of
from ..gpu import sddmm as sddmm_cu
from ..gpu import spmm as spmm_cu
from ..gpu.backend import device
from ..gpu.launch import VALUE_SUFFIX
from . import blas
from .data import CsrData

#: Value dtypes cuSPARSE and sddmm.cu take.
_VALUE_DTYPES = tuple(VALUE_SUFFIX)
INT32_MAX = 2 ** 31 - 1


# ---------------------------------------------------------------- primitives
def _on_device(*arrays):
    return any(place_of(a) == "gpu" for a in arrays)


def _cusparse_ok(dtype, *extents):
    return np.dtype(dtype) in _VALUE_DTYPES and max(extents) <= INT32_MAX


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
    """``a @ y``: ``spmm.cu``; see :func:`kernels.sparse.blas.spmm`."""
    if np.result_type(a.values.dtype, y.dtype) not in _VALUE_DTYPES:
        return _host(blas.spmm, a, y)
    return spmm_cu.spmm(device(), a.crows, a.cols, a.values, y)


def spgemm(a, b, op="matmul"):
    """``a @ b``: cuSPARSE SpGEMM; see :func:`kernels.sparse.blas.spgemm`."""
    dtype = np.result_type(a.values.dtype, b.values.dtype)
    if not _on_device(a.values) or not _cusparse_ok(dtype, a.nnz, b.nnz, *a.shape, *b.shape) \
            or a.nnz == 0 or b.nnz == 0:
        return _host(functools.partial(blas.spgemm, op=op), a, b)
    return _csr(_matrix(a, dtype) @ _matrix(b, dtype))


def transpose(a):
    """``a.T`` as CSR: cuSPARSE csr2csc; see :func:`kernels.sparse.blas.transpose`."""
    if not _on_device(a.values) or not _cusparse_ok(a.values.dtype, a.nnz, *a.shape) \
            or a.nnz == 0:
        return _host(blas.transpose, a)
    return _csr(_matrix(a, a.values.dtype).T.tocsr())


def sddmm(rows, cols, x, yt, crows=None):
    """The entries of ``x @ yt.T`` at (rows, cols): ``sddmm.cu`` on the GPU backend
    (rows None: the row ids of a 2-D CSR pattern's row pointers ``crows``)."""
    if rows is None:
        xp = xp_of(cols)
        rows = xp.repeat(xp.arange(crows.shape[0] - 1, dtype=crows.dtype), xp.diff(crows))
    if np.result_type(x.dtype, yt.dtype) not in _VALUE_DTYPES:
        return _host(blas.sddmm, rows, cols, x, yt)
    return sddmm_cu.sddmm(device(), rows, cols, x, yt)
