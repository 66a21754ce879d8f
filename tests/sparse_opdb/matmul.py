"""Sparse op database entries: the matmul family (matmul, mv, addmm, masked_matmul)."""
import numpy as np

import sparse

from . import Sample, SparseOpInfo, coo, csr, dense_of, make, sparse_args

DTYPES = tuple(np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.complex128,
                                     np.int32, np.int64))


def _matmul_samples(dtype, rng):
    """Every standard sparse operand on the left of a dense matrix, on the right of
    one, and on both sides of a sparse product (the other operand of each layout)."""
    out = []
    for a in sparse_args(dtype, rng):
        m, k = a.shape[-2:]
        lead = a.shape[:-2]
        out.append(Sample((a, make(lead + (k, 3), dtype, rng)), name=f"{a} @ dense"))
        out.append(Sample((make(lead + (2, m), dtype, rng), a), name=f"dense @ {a}"))
        for other in (coo(lead + (k, 3), len(lead) + 2, 5, dtype, rng),
                      csr(lead + (k, 3), 6, dtype, rng, duplicates=1)):
            out.append(Sample((a, other), name=f"{a} @ {other}"))
    return out


def _matmul_ref(x, y):
    return dense_of(x) @ dense_of(y)


def _mv_samples(dtype, rng):
    return [Sample((a, make(a.shape[:-2] + a.shape[-1:], dtype, rng)))
            for a in sparse_args(dtype, rng)]


def _mv_ref(x, vec):
    return (dense_of(x) @ vec[..., None])[..., 0]


def _addmm_samples(dtype, rng):
    out = []
    for a in sparse_args(dtype, rng):
        lead, (m, k) = a.shape[:-2], a.shape[-2:]
        out.append(Sample((make(lead + (m, 3), dtype, rng), a, make(lead + (k, 3), dtype, rng)),
                          {"beta": 2.0, "alpha": -3.0}))
        make_like = coo if a.layout == "coo" else csr
        first = (lead + (m, 3), len(lead) + 2) if a.layout == "coo" else (lead + (m, 3),)
        second = (lead + (k, 3), len(lead) + 2) if a.layout == "coo" else (lead + (k, 3),)
        if a.layout == "csr" or a.sparse_dim == len(a.shape):
            out.append(Sample((make_like(*first, 4, dtype, rng), a,
                               make_like(*second, 5, dtype, rng)), {"beta": 3.0, "alpha": 2.0}))
    return out


def _addmm_ref(input, x, y, beta=1.0, alpha=1.0):
    out = beta * dense_of(input) + alpha * (dense_of(x) @ dense_of(y))
    return out.astype(np.result_type(dense_of(input), dense_of(x), dense_of(y)))


def _masked_samples(dtype, rng):
    out = []
    for mask in sparse_args(dtype, rng):
        lead, (m, n) = mask.shape[:-2], mask.shape[-2:]
        if mask.layout == "coo" and mask.sparse_dim != len(mask.shape):
            continue
        out.append(Sample((make(lead + (m, 4), dtype, rng), make(lead + (4, n), dtype, rng),
                           mask)))
    return out


def _masked_ref(x, y, mask):
    return np.where(mask.mask(), x @ y, 0).astype(np.result_type(x, y))


OPS = [
    SparseOpInfo("matmul", sparse.matmul, _matmul_ref, _matmul_samples, DTYPES, (0, 1)),
    SparseOpInfo("mv", sparse.mv, _mv_ref, _mv_samples, DTYPES, (0, 1)),
    SparseOpInfo("addmm", sparse.addmm, _addmm_ref, _addmm_samples, DTYPES, (0, 1, 2)),
    SparseOpInfo("masked_matmul", sparse.masked_matmul, _masked_ref, _masked_samples, DTYPES,
                 (0, 1)),
]
