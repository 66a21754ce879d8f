"""Sparse op database entries: to_dense, coalesce, reshape and mask_as."""
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


OPS = [
    SparseOpInfo("to_dense", sparse.to_dense, dense_of, _one),
    SparseOpInfo("coalesce", sparse.coalesce, dense_of, _coo_only),
    SparseOpInfo("reshape", sparse.reshape, _reshape_ref, _reshape_samples,
                 dense_op=dense.reshape),
    SparseOpInfo("mask_as", sparse.mask_as, _mask_as_ref, _mask_as_samples),
]
