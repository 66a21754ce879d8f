"""Sparse op database entries: to_dense, coalesce, reshape, mask_as, the conversions
to_sparse_coo and to_sparse_csr, values and with_values."""
import numpy as np

import dense
import sparse

from . import Sample, SparseOpInfo, dense_of, make, sparse_args


def _one(dtype, rng, **attrs):
    return [Sample((a,), dict(attrs)) for a in sparse_args(dtype, rng)]


def _coo_only(dtype, rng):
    return [Sample((a,)) for a in sparse_args(dtype, rng) if a.layout == "coo"]


def _reshape_samples(dtype, rng):
    out = []
    for a in sparse_args(dtype, rng):
        n = int(np.prod(a.shape))
        target = [n // a.shape[-1], a.shape[-1]] if a.layout == "coo" else [a.shape[-1], -1]
        out.append(Sample((a,), {"shape": target}))
    return out


def _reshape_ref(x, shape):
    return dense_of(x).reshape(shape)


def _mask_as_samples(dtype, rng):
    return [Sample((make(m.shape, dtype, rng), m)) for m in sparse_args(dtype, rng)]


def _mask_as_ref(x, mask):
    """x at mask's stored coordinates, once per stored entry (duplicates add up)."""
    ones = np.ones((mask.nnz,) + tuple(mask.shape[mask.sparse_dim:]), dtype=np.int64)
    counts = mask.with_values(ones).dense()
    return (x * counts).astype(x.dtype)


def _to_coo_samples(dtype, rng):
    """Sparse operands at their own sparse_dim and with dense dims folded, and dense
    ones at every sparse_dim."""
    out = []
    for a in sparse_args(dtype, rng):
        dims = {a.sparse_dim, len(a.shape)} if a.layout == "coo" else {len(a.shape)}
        out += [Sample((a,), {"sparse_dim": k}) for k in sorted(dims)]
    for shape in [(3, 4), (2, 3, 2)]:
        x = make(shape, dtype, rng) * (rng.random(shape) < 0.6)
        out += [Sample((x.astype(dtype),), {"sparse_dim": k}) for k in range(1, len(shape) + 1)]
    return out


def _to_csr_samples(dtype, rng):
    """COO operands without dense dims (2-D, 3-D) and dense 2-D and 3-D ones."""
    out = [Sample((a,)) for a in sparse_args(dtype, rng)
           if a.layout == "coo" and a.sparse_dim == len(a.shape) in (2, 3)]
    for shape in [(3, 4), (2, 3, 2)]:
        x = make(shape, dtype, rng) * (rng.random(shape) < 0.6)
        out.append(Sample((x.astype(dtype),)))
    return out


def _with_values_samples(dtype, rng):
    return [Sample((a, make(a.values.shape, dtype, rng))) for a in sparse_args(dtype, rng)]


OPS = [
    SparseOpInfo("to_sparse_coo", sparse.to_sparse_coo, lambda x, sparse_dim: dense_of(x),
                 _to_coo_samples),
    SparseOpInfo("to_sparse_csr", sparse.to_sparse_csr, dense_of, _to_csr_samples),
    SparseOpInfo("values", sparse.values, lambda x: x.values, _one),
    SparseOpInfo("with_values", sparse.with_values,
                 lambda x, values: x.with_values(values).dense(), _with_values_samples,
                 grad_args=(1,)),
    SparseOpInfo("to_dense", sparse.to_dense, dense_of, _one),
    SparseOpInfo("coalesce", sparse.coalesce, dense_of, _coo_only),
    SparseOpInfo("reshape", sparse.reshape, _reshape_ref, _reshape_samples,
                 dense_op=dense.reshape),
    SparseOpInfo("mask_as", sparse.mask_as, _mask_as_ref, _mask_as_samples),
]
