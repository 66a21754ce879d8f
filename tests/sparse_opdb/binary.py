"""Sparse op database entries: add, subtract, multiply, divide (sparse/sparse, sparse/dense).

References are numpy's ufuncs on the dense forms, restricted to the stored
pattern numpy cannot know: the union (add, subtract, divide) or intersection
(multiply) of sparse operands, the sparse operand's pattern for multiply and
divide with a dense operand.
"""
import numpy as np

import sparse
from kernels.core.dtypes import ALL, BOOL

from . import Sample, SparseArg, SparseOpInfo, coo, csr, dense_of, make

UFUNC = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide}


def _pairs(dtype, rng):
    """Sparse operand pairs: equal shapes, broadcasting, dense dims, duplicates, nnz 0."""
    i32 = np.int32
    return [
        (coo((4, 5), 2, 8, dtype, rng), coo((4, 5), 2, 7, dtype, rng, duplicates=2)),
        (coo((4, 5), 2, 8, dtype, rng, i32), coo((4, 5), 2, 7, dtype, rng, i32)),
        (coo((1, 5), 2, 3, dtype, rng), coo((4, 5), 2, 7, dtype, rng)),       # [1, N] + [M, N]
        (coo((4, 5), 2, 6, dtype, rng), coo((5,), 1, 3, dtype, rng)),          # [M, N] + [N]
        (coo((3, 4, 2), 2, 5, dtype, rng), coo((3, 4, 2), 1, 2, dtype, rng)),  # folds a dense dim
        (coo((3, 4, 2), 2, 5, dtype, rng), coo((3, 1, 1), 3, 2, dtype, rng)),
        (coo((3, 4), 2, 0, dtype, rng), coo((3, 4), 2, 5, dtype, rng)),       # nnz 0
        (coo((3, 4), 2, 0, dtype, rng), coo((3, 4), 2, 0, dtype, rng)),
        (csr((4, 5), 8, dtype, rng, duplicates=2), csr((4, 5), 6, dtype, rng)),
        (csr((3, 4), 5, dtype, rng, i32), csr((3, 4), 6, dtype, rng, i32)),
        (csr((1, 4), 2, dtype, rng), csr((3, 4), 6, dtype, rng)),
        (csr((2, 3, 4), 9, dtype, rng, duplicates=1), csr((2, 3, 4), 7, dtype, rng)),
        (csr((3, 4), 0, dtype, rng), csr((3, 4), 4, dtype, rng)),
    ]


def _mixed(dtype, rng):
    """(sparse, dense shape) pairs: column and row scaling, dense dims, a new batch dim."""
    return [
        (coo((2, 3, 4), 3, 9, dtype, rng, duplicates=2), (4,)),                # [B, M, N] * [N]
        (coo((3, 4), 2, 6, dtype, rng, np.int32), (3, 1)),                     # [M, N] * [M, 1]
        (coo((3, 4, 2), 2, 5, dtype, rng), (2,)),
        (coo((3, 4, 2), 1, 2, dtype, rng), (4, 1)),
        (coo((3, 4), 2, 5, dtype, rng), (2, 3, 4)),                            # adds a sparse dim
        (coo((3, 4), 2, 0, dtype, rng), (3, 4)),
        (csr((3, 4), 6, dtype, rng, duplicates=1), (4,)),
        (csr((2, 3, 4), 7, dtype, rng), (3, 1)),
        (csr((3, 4), 5, dtype, rng), (2, 3, 4)),
    ]


def _samples(op):
    def samples(dtype, rng):
        out = []
        for x, y in _pairs(dtype, rng):
            if op == "divide":   # the gradient needs a divisor wherever x is stored
                out.append(Sample((x, y), grad=False))
                out.append(Sample((x, _superset(x, y, rng)), name=f"{x}/{x}+"))
            else:
                out.append(Sample((x, y)))
        for s, shape in _mixed(dtype, rng):
            d = make(shape, dtype, rng)
            out += [Sample((s, d)), Sample((d, s))]
        return out
    return samples


def _superset(x, y, rng):
    """An operand storing wherever x does (x's pattern, new values), in y's layout."""
    return x.with_values(make(x.values.shape, x.values.dtype, rng) + 0)


def _pattern(args, op):
    """Where the result stores: the union or intersection of the sparse operands."""
    shape = np.broadcast_shapes(*[np.shape(dense_of(a)) for a in args])
    masks = [np.broadcast_to(a.stored(), shape) for a in args if isinstance(a, SparseArg)]
    if len(masks) == 1:
        return masks[0]
    return masks[0] & masks[1] if op == "multiply" else masks[0] | masks[1]


def _ref(op):
    def ref(x, y):
        with np.errstate(divide="ignore", invalid="ignore"):
            out = UFUNC[op](dense_of(x), dense_of(y))
        sparse_result = op in ("multiply", "divide") or all(isinstance(a, SparseArg)
                                                           for a in (x, y))
        if not sparse_result:
            return out
        return np.where(_pattern((x, y), op), out, np.zeros((), out.dtype)).astype(out.dtype)
    return ref


def _info(op, dtypes=ALL):
    return SparseOpInfo(op, getattr(sparse, op), _ref(op), _samples(op), dtypes=dtypes,
                        grad_args=(0, 1))


OPS = [_info("add"), _info("subtract", tuple(d for d in ALL if d not in BOOL)),
       _info("multiply"), _info("divide")]
