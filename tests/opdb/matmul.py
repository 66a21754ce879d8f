"""Op database entries for matmul (reference: numpy.matmul after explicit transposes)."""
import numpy as np

import dense
from kernels.core.dtypes import ALL

from . import OpInfo, Sample, make

# (x shape, y shape, transpose_x, transpose_y): 2-D, batched with broadcasting, 1-D operands
CASES = [((2, 3), (3, 4), False, False), ((3, 2), (3, 4), True, False),
         ((2, 3), (4, 3), False, True), ((3, 2), (4, 3), True, True),
         ((2, 1, 2, 3), (4, 3, 2), False, False), ((3,), (3, 2), False, False),
         ((2, 3), (3,), False, False), ((3,), (3,), False, False), ((2, 3, 4), (4,), False, False),
         ((0, 3), (3, 2), False, False), ((2, 0), (0, 3), False, False),
         ((3,), (2, 3, 4), True, False)]


def _samples(dtype, rng):
    return [Sample((make(sx, dtype, rng, -3, 3), make(sy, dtype, rng, -3, 3)),
                   {"transpose_x": tx, "transpose_y": ty}, name=f"{sx}@{sy} {tx} {ty}")
            for sx, sy, tx, ty in CASES]


def _t(a, flag):
    return np.swapaxes(a, -1, -2) if flag and a.ndim >= 2 else a


def _ref(x, y, transpose_x=False, transpose_y=False):
    return np.asarray(np.matmul(_t(x, transpose_x), _t(y, transpose_y)))


OPS = [OpInfo("matmul", dense.matmul, _ref, _samples,
              dtypes=ALL, grad_args=(0, 1))]
