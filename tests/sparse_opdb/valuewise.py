"""Sparse op database entries: the value-wise unary ops and cast.

References apply plain numpy to each stored entry's value (duplicates
separately, implicit zeros untouched) and sum the entries into the dense
form.  Samples are moved into each op's domain (sqrt and log1p get
magnitudes, asin and atanh values inside (-1, 1)).
"""
import numpy as np

import sparse
from kernels.core.dtypes import ALL

from . import Sample, SparseOpInfo, sparse_args

REFS = {
    "abs": np.abs, "neg": np.negative, "sqrt": np.sqrt, "square": np.square, "sin": np.sin,
    "sinh": np.sinh, "tan": np.tan, "tanh": np.tanh, "asin": np.arcsin, "asinh": np.arcsinh,
    "atan": np.arctan, "atanh": np.arctanh, "expm1": np.expm1, "log1p": np.log1p,
    "deg2rad": np.deg2rad, "rad2deg": np.rad2deg,
    "relu": lambda v: np.maximum(v, 0),
    "relu6": lambda v: np.clip(v, 0, 6),
    "leaky_relu": lambda v, negative_slope=0.01: np.where(v > 0, v, v * negative_slope),
    "pow": lambda v, factor: v ** factor,             # a weak Python scalar (NEP 50)
    "scale": lambda v, scale=1, bias=0, bias_after_scale=True:
        v * scale + bias if bias_after_scale else (v + bias) * scale,
    "isnan": np.isnan,
}
ATTRS = {"leaky_relu": [{}, {"negative_slope": 0.2}], "pow": [{"factor": 2.0}, {"factor": 3}],
         "scale": [{"scale": 2.0, "bias": 1.5}, {"scale": -0.5, "bias": 1.0,
                                                  "bias_after_scale": False},
                   {"scale": 3, "bias": 2}, {}, {"scale": 2 - 3j, "bias": 0.5j}]}
DOMAIN = {"sqrt": np.abs, "log1p": np.abs, "asin": lambda v: v / 10, "atanh": lambda v: v / 10,
          "tan": lambda v: v / 4}


def _into_domain(name, arg):
    fix = DOMAIN.get(name)
    if fix is None or arg.values.dtype.kind not in "fc":
        return arg
    return arg.with_values(fix(arg.values).astype(arg.values.dtype))


def _ref(name):
    def ref(x, **attrs):
        return x.with_values(np.asarray(REFS[name](x.values, **attrs))).dense()
    return ref


def _samples(name):
    def samples(dtype, rng):
        args = [_into_domain(name, a) for a in sparse_args(dtype, rng)]
        return [Sample((a,), dict(kw)) for a in args for kw in ATTRS.get(name, [{}])]
    return samples


def _dtypes(name):
    """The dtypes numpy maps to a supported dtype for this op."""
    out = []
    for d in ALL:
        try:
            with np.errstate(all="ignore"):
                got = np.asarray(REFS[name](np.ones(1, d), **ATTRS.get(name, [{}])[0])).dtype
        except (TypeError, ValueError):
            continue
        if got in ALL:
            out.append(d)
    return tuple(out)


def _cast_samples(dtype, rng):
    out = []
    for a in sparse_args(dtype, rng):
        out += [Sample((a,), {"index_dtype": np.int32}),
                Sample((a,), {"value_dtype": np.float64}),
                Sample((a,), {"index_dtype": "int64", "value_dtype": np.int64}, grad=False)]
    return out


def _cast_ref(x, index_dtype=None, value_dtype=None):
    return x.with_values(x.values.astype(value_dtype or x.values.dtype)).dense()


OPS = [SparseOpInfo(n, getattr(sparse, n), _ref(n), _samples(n), dtypes=_dtypes(n),
                    grad_args=() if n == "isnan" else (0,)) for n in REFS]
OPS.append(SparseOpInfo("cast", sparse.cast, _cast_ref, _cast_samples))
