"""Op database entries for expand and repeat (references: np.broadcast_to, np.tile)."""
import numpy as np

import dense

from . import OpInfo, Sample, make

EXPANDS = [((4, 1, 3, 5), [2, 1, 4, 4, 3, 5]), ((4, 1, 3, 5), [2, 1, -1, 4, -1, -1]),
           ((1, 4, 1, 2), [2, 1, 2, 4, 2, 2]), ((4, 3, 1, 2), [4, 3, 5, 2]),
           ((4, 3, 1, 2), [-1, -1, 5, -1]), ((), [2, 2]), ((), []), ((1,), [0]),
           ((3, 1), [2, 3, 0]), ((0, 1), [2, 0, 4]), ((2, 3), [2, 3]), ((1, 1), [3, 1, 2])]


def _expand_samples(dtype, rng):
    return [Sample((make(s, dtype, rng),), {"shape": t}, name=f"{s}->{t}")
            for s, t in EXPANDS]


def _expand_ref(x, shape):
    new = len(shape) - x.ndim
    target = [x.shape[i - new] if s == -1 else s for i, s in enumerate(shape)]
    return np.broadcast_to(x, target).copy()


REPEATS = [((4, 1, 3, 5), [2, 1, 2, 4, 1, 1]), ((5,), [3]), ((3, 1, 5), [5, 3, 1]),
           ((3, 1, 5), [2, 5, 3, 1]), ((2, 3), [1, 1]), ((2, 3), [0, 2]),
           ((2, 3), [2, 2, 0]), ((), []), ((), [3, 2]), ((0, 2), [2, 3]),
           ((2, 1), [3, 1, 4])]


def _repeat_samples(dtype, rng):
    return [Sample((make(s, dtype, rng),), {"repeats": r}, name=f"{s}*{r}")
            for s, r in REPEATS]


def _repeat_ref(x, repeats):
    return np.tile(x, repeats)


OPS = [
    OpInfo("expand", dense.expand, _expand_ref, _expand_samples),
    OpInfo("repeat", dense.repeat, _repeat_ref, _repeat_samples),
]
