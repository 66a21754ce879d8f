"""Sparse op database entries: sum and softmax.

sum's reference is numpy's sum of the dense form, laid out in the result's
shape (Paddle keeps a size-1 dim where a sparse result needs one); softmax's
is computed slice by slice over the stored entries in plain numpy.
"""
import numpy as np

import sparse
from kernels.core.dtypes import FLOATS
from kernels.infermeta import sum_plan

from . import Sample, SparseOpInfo, coo, csr, sparse_args

AXES = [dict(axis=None), dict(axis=None, keepdim=True), dict(axis=[0]),
        dict(axis=[-1], keepdim=True), dict(axis=[0, 1])]


def _sum_samples(dtype, rng):
    out = [Sample((a,), dict(kw)) for a in sparse_args(dtype, rng) for kw in AXES]
    hybrid = coo((3, 4, 2, 3), 2, 5, dtype, rng, duplicates=2)
    out += [Sample((hybrid,), {"axis": [1, 3]}), Sample((hybrid,), {"axis": [2]}),
            Sample((hybrid,), {"axis": [0, 1], "keepdim": True}),
            Sample((hybrid,), {"axis": [-2, 0], "dtype": np.float64})]
    out += [Sample((csr((2, 3, 4), 7, dtype, rng, duplicates=1),), {"axis": [-1]}),
            Sample((csr((2, 3, 4), 7, dtype, rng),), {"axis": [0], "keepdim": True})]
    return out


def _sum_ref(x, axis=None, dtype=None, keepdim=False):
    d = x.dense()
    if dtype is None and d.dtype.kind == "u":
        dtype = np.int64          # unsigned values sum to int64 (numpy would give uint64)
    r = np.sum(d, axis=None if axis is None else tuple(axis), dtype=dtype, keepdims=keepdim)
    sd = len(x.shape) if x.layout == "csr" else x.sparse_dim
    return np.reshape(r, sum_plan(x.shape, sd, axis, keepdim, x.layout == "csr").shape)


def _softmax_samples(dtype, rng):
    out = [Sample((a,), {"axis": -1}) for a in sparse_args(dtype, rng)]
    out += [Sample((coo((3, 4, 5), 3, 20, dtype, rng, duplicates=3),), {"axis": 1}),
            Sample((coo((3, 4, 5), 3, 12, dtype, rng),), {"axis": 0}),
            Sample((coo((3, 4, 2), 2, 6, dtype, rng),), {"axis": 0})]
    return out


def _softmax_ref(x, axis=-1):
    axis %= len(x.shape)
    v = x.values
    if axis >= x.sparse_dim:
        e = np.exp(v - v.max(axis=axis - x.sparse_dim + 1, keepdims=True))
        return x.with_values(e / e.sum(axis=axis - x.sparse_dim + 1, keepdims=True)).dense()
    coords = x.coords()
    others = [tuple(np.delete(coords[:, j], axis)) for j in range(x.nnz)]
    out = np.empty_like(v)
    for key in set(others):
        idx = [j for j, k in enumerate(others) if k == key]
        e = np.exp(v[idx] - v[idx].max(axis=0))
        out[idx] = e / e.sum(axis=0)
    return x.with_values(out).dense()


OPS = [SparseOpInfo("sum", sparse.sum, _sum_ref, _sum_samples),
       SparseOpInfo("softmax", sparse.softmax, _softmax_ref, _softmax_samples, dtypes=FLOATS)]
