"""Op database entries for mean, max, min, prod, argmax, argmin and sum(axis=[]) (numpy)."""
import numpy as np

import dense
from kernels.core.dtypes import ALL

from . import OpInfo, Sample, make

REDUCES = [((2, 3), None, False), ((2, 3), [1], False), ((2, 3, 4), [0, -1], True),
           ((), None, False), ((4,), [0], True), ((2, 3), [], False), ((3, 0), [0], False)]
NONEMPTY = REDUCES[:-1]  # max and min have no identity: an empty reduced dim is an error


def _samples(cases, low=-5, high=5):
    def samples(dtype, rng):
        return [Sample((make(s, dtype, rng, low, high),), {"axis": a, "keepdim": k},
                       name=f"{s} {a} {k}") for s, a, k in cases]
    return samples


def _unique_samples(cases):
    """Distinct values, so the arg-extremum (and its gradient) is unique."""
    def samples(dtype, rng):
        out = []
        for s, a, k in cases:
            n = int(np.prod(s))
            v = np.asarray(rng.permutation(n).reshape(s) - n // 2)
            out.append(Sample((v.astype(dtype),), {"axis": a, "keepdim": k}, name=f"{s} {a}"))
        return out
    return samples


def _np_axis(axis):
    return None if axis is None or axis == [] else tuple(axis)


def _ref(func):
    return lambda x, axis=None, keepdim=False: np.asarray(func(x, axis=_np_axis(axis),
                                                               keepdims=keepdim))


def _int64_ref(func):
    """numpy's ``func`` (np.sum, np.prod), but uint8 accumulates in int64 (numpy's uint64 is
    not a phisparse dtype)."""
    def ref(x, axis=None, keepdim=False):
        wide = x.astype(np.int64) if x.dtype.kind == "u" else x
        return _ref(func)(wide, axis, keepdim)
    return ref


ARGS = [((2, 3), None, False), ((2, 3), 1, False), ((2, 3, 4), -1, True), ((), None, False),
        ((4,), 0, False), ((2, 3), None, True)]


def _arg_samples(dtype, rng):
    """ARGS' shapes; complex dtypes add ties of the real part and NaN in either part, which
    numpy's lexicographic order (and a backend's own argmax) must resolve alike."""
    out = [Sample((make(s, dtype, rng),), {"axis": a, "keepdim": k}, grad=False)
           for s, a, k in ARGS]
    if np.dtype(dtype).kind == "c":
        tied = np.array([[1 + 2j, 3 - 1j, 3 + 0j, 3 + 4j], [2, np.nan + 1j, 5j, 1j * np.nan]],
                        dtype)
        out += [Sample((tied,), {"axis": a, "keepdim": False}, grad=False, name=f"tied {a}")
                for a in (None, 0, 1)]
    return out


def _arg_ref(func):
    def ref(x, axis=None, keepdim=False):
        if axis is None:
            out = np.asarray(func(x.reshape(-1)), np.int64)
            return out.reshape((1,) * x.ndim) if keepdim else out
        return np.asarray(func(x, axis=axis, keepdims=keepdim), np.int64)
    return ref


REAL = tuple(d for d in ALL if d.kind != "c")
OPS = [
    OpInfo("mean", dense.mean, _ref(np.mean), _samples(REDUCES[:-1]),
           dtypes=tuple(d for d in ALL if d.kind != "b")),
    OpInfo("max", dense.max, _ref(np.max), _unique_samples(NONEMPTY), dtypes=REAL),
    OpInfo("min", dense.min, _ref(np.min), _unique_samples(NONEMPTY), dtypes=REAL),
    OpInfo("prod", dense.prod, _int64_ref(np.prod), _samples(REDUCES, -2, 2)),
    OpInfo("sum[]", dense.sum, _int64_ref(np.sum),
           _samples([((2, 3), [], False), ((2, 3), [], True)])),
    OpInfo("argmax", dense.argmax, _arg_ref(np.argmax), _arg_samples),
    OpInfo("argmin", dense.argmin, _arg_ref(np.argmin), _arg_samples),
]
