"""Op database entries for the creation ops and cast (references: numpy's constructors)."""
import numpy as np

import dense
from kernels.core.dtypes import ALL, FLOATS, COMPLEX

from . import OpInfo, Sample, make

SHAPES = [(2, 3), (), (0, 4), (5,)]


def _creation_samples(attrs_of):
    def samples(dtype, rng):
        return [Sample((), attrs_of(s, dtype), grad=False, name=str(s)) for s in SHAPES]
    return samples


def _like_samples(attrs_of):
    def samples(dtype, rng):
        return [Sample((make(s, dtype, rng),), attrs_of(dtype), grad=False) for s in SHAPES]
    return samples


def _fill(dtype):
    return np.ones(1, dtype)[0] * 3 if np.dtype(dtype) != np.bool_ else np.True_


ARANGES = [(5, None, 1), (1, 2, 0.25), (10, 0, -3), (0, 5, 7), (3, 1, 1), (-2.5, 2, 1.5)]


def _arange_samples(dtype, rng):
    return [Sample((), {"start": a, "end": b, "step": c, "dtype": dtype}, grad=False)
            for a, b, c in ARANGES]


def _cast_samples(dtype, rng):
    targets = [np.float64, np.float32, np.complex128, np.int32, np.bool_]
    return [Sample((make((2, 3), dtype, rng),), {"dtype": np.dtype(t)},
                   grad=np.dtype(t).itemsize >= 8 and np.dtype(t) in FLOATS + COMPLEX,
                   name=np.dtype(t).name) for t in targets] + \
        [Sample((make((), dtype, rng),), {"dtype": np.dtype(np.float64)})]


OPS = [
    OpInfo("zeros", dense.zeros, lambda shape, dtype: np.zeros(shape, dtype),
           _creation_samples(lambda s, d: {"shape": list(s), "dtype": d})),
    OpInfo("ones", dense.ones, lambda shape, dtype: np.ones(shape, dtype),
           _creation_samples(lambda s, d: {"shape": list(s), "dtype": d})),
    OpInfo("full", dense.full, lambda shape, fill_value, dtype=None: np.full(shape, fill_value),
           _creation_samples(lambda s, d: {"shape": list(s), "fill_value": _fill(d)})),
    OpInfo("arange", dense.arange, lambda start, end, step, dtype: np.arange(
        *((0, start) if end is None else (start, end)), step, dtype=dtype), _arange_samples,
           dtypes=tuple(d for d in ALL if d.kind in "if")),
    OpInfo("zeros_like", dense.zeros_like, lambda x, dtype=None: np.zeros_like(x),
           _like_samples(lambda d: {})),
    OpInfo("ones_like", dense.ones_like, lambda x, dtype: np.ones_like(x, dtype),
           _like_samples(lambda d: {"dtype": np.float32})),
    OpInfo("full_like", dense.full_like, lambda x, fill_value: np.full_like(x, fill_value),
           _like_samples(lambda d: {"fill_value": 1})),
    OpInfo("cast", dense.cast, lambda x, dtype: x.astype(dtype), _cast_samples),
]
