"""Sparse op database entries: transpose, slice, index_select, concat and stack.

References are numpy on the dense form (``ndarray.transpose``, basic slicing
with Paddle's bounds written out here, ``np.take``, ``np.concatenate``,
``np.stack``).  The samples cover every sparse operand of
:func:`sparse_args` (COO with dense dims, duplicates, int32, CSR 2-D and
3-D, nnz 0); concat and stack also mix index dtypes and nnz 0 parts.
"""
import numpy as np

import dense
import sparse

from . import Sample, SparseOpInfo, coo, csr, dense_of, sparse_args


class ListOp:
    """An op over a ``Tensor[]`` list called with the tensors as separate arguments."""

    def __init__(self, op):
        self.op = op

    def __call__(self, *xs, **attrs):
        return self.op(list(xs), **attrs)

    def infer_meta(self, *xs, **attrs):
        return self.op.infer_meta(list(xs), **attrs)


def _dense(name, wrap=None):
    """The dense counterpart once dense-basics provides it (else no sparse-vs-dense check)."""
    op = getattr(dense, name, None)
    return None if op is None else (wrap(op) if wrap else op)


# ---------------------------------------------------------------- transpose
def _perms(ndim):
    return [[1, 0]] if ndim == 2 else [[2, 0, 1], [0, 2, 1], [1, 0, 2], [-1, -2, -3]]


def _transpose_samples(dtype, rng):
    return [Sample((a,), {"perm": p}) for a in sparse_args(dtype, rng) for p in _perms(len(a.shape))]


def _transpose_ref(x, perm):
    return dense_of(x).transpose(perm)


# ---------------------------------------------------------------- slice
def _paddle_bound(b, n):
    b = b + n if b < 0 else b
    return min(max(b, 0), n)


def _slice_ref(x, axes, starts, ends):
    d = dense_of(x)
    window = [slice(None)] * d.ndim
    for a, s, e in zip(axes, starts, ends):
        n = d.shape[a]
        window[a % d.ndim] = slice(_paddle_bound(s, n), _paddle_bound(e, n))
    return d[tuple(window)]


def _slice_samples(dtype, rng):
    windows = {2: [([0, 1], [1, -3], [10, 4]), ([-1], [2], [1])],
               3: [([0, 2], [-1, 1], [5, 3]), ([1], [1], [-1]), ([0, 1, 2], [0, 0, 0], [9, 9, 9])]}
    return [Sample((a,), dict(zip(("axes", "starts", "ends"), w)))
            for a in sparse_args(dtype, rng) for w in windows[len(a.shape)]]


# ---------------------------------------------------------------- index_select
def _index_select_samples(dtype, rng):
    out = []
    for a in sparse_args(dtype, rng):
        for axis in range(-1, len(a.shape)):
            n = a.shape[axis]
            index = np.array([n - 1, 0, n - 1, n // 2], dtype=np.int32 if axis % 2 else np.int64)
            out.append(Sample((a, index), {"axis": axis}))
    return out


def _index_select_ref(x, index, axis):
    return np.take(dense_of(x), index, axis=axis)


# ---------------------------------------------------------------- concat and stack
def _concat_samples(dtype, rng):
    c = lambda s, sd=None, nnz=6, i=np.int64: coo(s, len(s) if sd is None else sd, nnz, dtype,
                                                  rng, i, duplicates=1)
    r = lambda s, nnz=6, i=np.int64: csr(s, nnz, dtype, rng, i, duplicates=1)
    pairs = [((c((4, 5)), c((2, 5), i=np.int32)), 0), ((c((4, 5)), c((4, 3), nnz=0)), 1),
             ((c((3, 4, 2), 2), c((1, 4, 2), 2)), 0), ((c((3, 4, 2), 2), c((3, 4, 3), 3)), 2),
             ((c((3, 4, 2), 1), c((3, 2, 2), 2)), 1),
             ((r((4, 5)), r((2, 5), i=np.int32)), 0), ((r((4, 5)), r((4, 3))), -1),
             ((r((2, 3, 4)), r((1, 3, 4), nnz=0)), 0), ((r((2, 3, 4)), r((2, 2, 4))), 1),
             ((r((2, 3, 4)), r((2, 3, 2))), 2)]
    return [Sample(args, {"axis": axis}) for args, axis in pairs]


def _stack_samples(dtype, rng):
    out = []
    for a in sparse_args(dtype, rng):
        if a.layout == "csr" and len(a.shape) == 3:
            continue
        b = (coo(a.shape, a.sparse_dim, 4, dtype, rng) if a.layout == "coo"
             else csr(a.shape, 4, dtype, rng, np.int32))
        out += [Sample((a, b), {"axis": axis}) for axis in range(-1, len(a.shape) + 1)]
    return out


def _concat_ref(*xs, axis):
    return np.concatenate([dense_of(x) for x in xs], axis=axis)


def _stack_ref(*xs, axis):
    return np.stack([dense_of(x) for x in xs], axis=axis)


OPS = [
    SparseOpInfo("transpose", sparse.transpose, _transpose_ref, _transpose_samples,
                 dense_op=_dense("transpose")),
    SparseOpInfo("slice", sparse.slice, _slice_ref, _slice_samples, dense_op=_dense("slice")),
    SparseOpInfo("index_select", sparse.index_select, _index_select_ref, _index_select_samples,
                 dense_op=_dense("index_select")),
    SparseOpInfo("concat", ListOp(sparse.concat), _concat_ref, _concat_samples,
                 grad_args=(0, 1), dense_op=_dense("concat", ListOp)),
    SparseOpInfo("stack", ListOp(sparse.stack), _stack_ref, _stack_samples,
                 grad_args=(0, 1), dense_op=_dense("stack", ListOp)),
]
