"""Op database entries for the core ops: reshape and sum."""
import numpy as np

import dense
from kernels.infermeta import resolve_reshape

from . import OpInfo, Sample, make

RESHAPES = [((2, 4, 6), [6, 8]), ((2, 4, 6), [2, 3, -1, 2]), ((2, 4, 6), [-1, 0, 3, 2]),
            ((), [1, 1]), ((1, 1), []), ((0, 3), [3, -1]), ((0, 3), [0, 3]),
            ((3, 0, 2), [-1, 2]), ((5,), [5]), ((2, 3), [0, -1]), ((1,), [-1])]


def _reshape_samples(dtype, rng):
    return [Sample((make(s, dtype, rng),), {"shape": t}, name=f"{s}->{t}")
            for s, t in RESHAPES]


def _reshape_ref(x, shape):
    return x.reshape(resolve_reshape(x.shape, shape))


SUMS = [((2, 3), None, False), ((2, 3), [1], False), ((2, 3, 4), [0, -1], True),
        ((), None, False), ((0, 3), [0], False), ((4,), [0], True), ((2, 0), None, True)]


def _sum_samples(dtype, rng):
    return [Sample((make(s, dtype, rng),), {"axis": a, "keepdim": k}) for s, a, k in SUMS]


def _sum_ref(x, axis=None, keepdim=False):
    ax = None if axis is None or len(axis) == 0 else tuple(axis)
    out = np.asarray(np.sum(x, axis=ax, keepdims=keepdim))
    return out.astype(np.int64) if out.dtype.kind == "u" else out   # uint8 sums to int64


OPS = [
    OpInfo("reshape", dense.reshape, _reshape_ref, _reshape_samples),
    OpInfo("sum", dense.sum, _sum_ref, _sum_samples),
]
