"""Op database entries for the elementwise family (references: numpy's ufuncs).

Each op runs on every dtype numpy's ufunc takes (the others raise TypeError:
tests/test_elementwise.py); inputs whose derivative needs a positive
argument (log, sqrt, pow's base, a divisor) are drawn from [0.5, 4).
"""
import numpy as np

import dense
from kernels.core.dtypes import ALL

from . import OpInfo, Sample, make

UNARY_SHAPES = [(2, 3), (), (0, 3), (5,), (1, 1, 4)]
BINARY_SHAPES = [((2, 3), (2, 3)), ((2, 3), (3,)), ((4, 1, 3), (2, 1)), ((), (2, 2)),
                 ((0, 3), (1, 3)), ((3,), ()), ((2, 0, 1), (3,)), ((1,), (2, 1))]


def _sigmoid(x):
    """1 / (1 + exp(-x)) in float64 (no wrap for uint8, no float16 overflow), rounded once
    to numpy's float dtype for x."""
    with np.errstate(over="ignore"):
        out = 1 / (1 + np.exp(-x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)))
    return out.astype(np.result_type(x.dtype, np.float16))


UNARY = {  # name: (numpy reference, low, high)
    "abs": (np.abs, -5, 5), "neg": (np.negative, -5, 5), "exp": (np.exp, -3, 3),
    "log": (np.log, 0.5, 4), "sqrt": (np.sqrt, 0.5, 4), "square": (np.square, -5, 5),
    "sin": (np.sin, -5, 5), "cos": (np.cos, -5, 5), "tanh": (np.tanh, -3, 3),
    "sigmoid": (_sigmoid, -5, 5), "relu": (lambda x: np.maximum(x, 0), -5, 5),
}
BINARY = {  # name: (numpy reference, (low, high) of y, differentiable)
    "add": (np.add, (-5, 5), True), "subtract": (np.subtract, (-5, 5), True),
    "multiply": (np.multiply, (-5, 5), True), "divide": (np.divide, (0.5, 4), True),
    "pow": (np.power, (0.5, 3), True), "maximum": (np.maximum, (-5, 5), True),
    "minimum": (np.minimum, (-5, 5), True),
    "equal": (np.equal, (-2, 2), False), "not_equal": (np.not_equal, (-2, 2), False),
    "less_than": (np.less, (-2, 2), False), "less_equal": (np.less_equal, (-2, 2), False),
    "greater_than": (np.greater, (-2, 2), False),
    "greater_equal": (np.greater_equal, (-2, 2), False),
}
CLIPS = [{"min": -1.0, "max": 2.0}, {"min": None, "max": 1}, {"min": 0.5, "max": None},
         {"min": None, "max": None}, {"min": -2, "max": 3}]


def _takes(ref, dtype, n=1, **attrs):
    """True if numpy's ufunc accepts ``dtype`` (the op then must too)."""
    try:
        with np.errstate(all="ignore"):
            ref(*[np.ones(1, dtype)] * n, **attrs)
    except TypeError:
        return False
    return True


def _unary_entry(name, ref, low, high):
    def samples(dtype, rng):
        lo = 1 if low > 0 and np.dtype(dtype).kind in "iu" else low
        return [Sample((make(s, dtype, rng, lo, high),), name=str(s)) for s in UNARY_SHAPES]
    dtypes = tuple(d for d in ALL if _takes(ref, d))
    return OpInfo(name, getattr(dense, name), ref, samples, dtypes=dtypes)


def _binary_entry(name, ref, y_range, grad):
    x_range = (0.5, 4) if name == "pow" else (-5, 5)

    def samples(dtype, rng):
        ints = np.dtype(dtype).kind in "iub"
        out = []
        for sx, sy in BINARY_SHAPES:
            x = make(sx, dtype, rng, *x_range)
            y = make(sy, dtype, rng, *((1, 4) if ints and y_range[0] > 0 else y_range))
            out.append(Sample((x, y), grad=grad, name=f"{sx},{sy}"))
        return out
    dtypes = tuple(d for d in ALL if _takes(ref, d, 2))
    return OpInfo(name, getattr(dense, name), ref, samples, dtypes=dtypes, grad_args=(0, 1))


def _clip_samples(dtype, rng):
    return [Sample((make(s, dtype, rng),), dict(c), name=f"{s} {c}")
            for s, c in zip(UNARY_SHAPES, CLIPS)]


def _clip_ref(x, min=None, max=None):
    return np.asarray(x).copy() if min is None and max is None else np.clip(x, min, max)


OPS = ([_unary_entry(n, *v) for n, v in UNARY.items()]
       + [_binary_entry(n, *v) for n, v in BINARY.items()]
       + [OpInfo("clip", dense.clip, _clip_ref, _clip_samples,
                 dtypes=tuple(d for d in ALL if d.kind in "iuf"))])
