"""Sparse op database entries: sum and softmax.

sum's reference is numpy's sum of the dense form in numpy's shape, except
that a CSR result has numpy's keepdims shape whatever ``keepdim`` says and a
COO full reduction has shape [1] (the documented rules); softmax's
is computed slice by slice over the stored entries in plain numpy.
"""
import numpy as np

import sparse
from kernels.core.dtypes import FLOATS

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
    return out + _sum_shape_samples(dtype, rng) + _sum_empty_samples(dtype, rng)


def _sum_shape_samples(dtype, rng):
    """Every sparse dim of a hybrid COO summed (dense dims left); CSR over leading axes."""
    h1 = coo((3, 2), 1, 2, dtype, rng, duplicates=1)
    h2 = coo((3, 2, 2), 2, 3, dtype, rng, np.int32)
    h3 = coo((4, 3, 2, 3), 1, 3, dtype, rng)
    c2, c3 = csr((3, 4), 6, dtype, rng, duplicates=1), csr((2, 3, 4), 9, dtype, rng, np.int32)
    out = [Sample((h1,), {"axis": [0]}), Sample((h1,), {"axis": [0], "keepdim": True}),
           Sample((h2,), {"axis": [0, 1]}), Sample((h2,), {"axis": [1, 0], "keepdim": True}),
           Sample((h3,), {"axis": [0]}), Sample((h3,), {"axis": [0, 2]}),
           Sample((h3,), {"axis": [3, 0, 1]})]
    out += [Sample((c2,), {"axis": [0]}), Sample((c2,), {"axis": [1]}),
            Sample((c3,), {"axis": [0, 1]}), Sample((c3,), {"axis": [-1]}),
            Sample((c3,), {"axis": [1]}), Sample((c3,), {"axis": [0, 2]}),
            Sample((c3,), {"axis": None})]
    return out


def _sum_empty_samples(dtype, rng):
    """Zero-size operands (batch, rows or cols 0) under every axis choice."""
    args = [coo((0, 3), 2, 0, dtype, rng), coo((3, 0), 2, 0, dtype, rng, np.int32),
            coo((0, 2, 3), 1, 0, dtype, rng), coo((3, 0, 2), 1, 0, dtype, rng),
            csr((0, 3), 0, dtype, rng), csr((3, 0), 0, dtype, rng, np.int32),
            csr((0, 3, 4), 0, dtype, rng), csr((2, 0, 4), 0, dtype, rng),
            csr((2, 3, 0), 0, dtype, rng, np.int32)]
    out = []
    for a in args:
        n = len(a.shape)
        axes = [None] + [[i] for i in range(-n, n)] + [[i, j] for i in range(n)
                                                         for j in range(n) if i != j]
        out += [Sample((a,), {"axis": ax, "keepdim": k}) for ax in axes for k in (False, True)]
    return out


def _sum_ref(x, axis=None, dtype=None, keepdim=False):
    d = x.dense()
    if dtype is None and d.dtype.kind == "u":
        dtype = np.int64          # unsigned values sum to int64 (numpy would give uint64)
    r = np.sum(d, axis=None if axis is None else tuple(axis), dtype=dtype,
               keepdims=keepdim or x.layout == "csr")
    return np.reshape(r, np.shape(r) or (1,))


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
