"""Scalars in sparse arithmetic, and the operators of sparse tensors.

``sparse.add``, ``subtract``, ``multiply`` and ``divide`` are the YAML ops
(:mod:`sparse._generated_api`) taking a Python or numpy scalar as well: a
scalar becomes a 0-d dense operand in numpy's result dtype, Python scalars
being weak (NEP 50: float32 stays float32), so multiply and divide keep the
sparse pattern.  Adding or subtracting a nonzero scalar would give a dense
result and raises TypeError; a zero scalar returns x itself.
"""
import numbers

import numpy as np

from kernels.core.tensor import TensorBase

from . import _generated_api as _api


def is_scalar(value):
    """True for a Python or numpy number (bool included), not for arrays or tensors."""
    return isinstance(value, (numbers.Number, np.generic)) and not isinstance(value, TensorBase)


def scalar_operand(op, x, value):
    """``value`` as a 0-d numpy array in the dtype numpy gives ``x op value``."""
    try:
        dtype = np.result_type(x.dtype, value)
    except TypeError:
        raise TypeError(f"{op}: cannot combine a {x.dtype} tensor with {value!r}") from None
    return np.asarray(value, dtype=dtype)


def _dense_scalar_error(op, value):
    return TypeError(f"{op}: {op} of a sparse tensor and the nonzero scalar {value!r} would "
                     "be dense; convert with to_dense() first")


def _additive(name):
    generated = getattr(_api, name)

    def fn(x, y):
        for s, other in ((y, x), (x, y)):
            if is_scalar(s) and isinstance(other, TensorBase) and other.layout != "dense":
                if s != 0:
                    raise _dense_scalar_error(name, s)
                return other if s is y or name == "add" else neg(other)
        return generated(x, y)
    return _wrap(fn, generated)


def _scaling(name):
    generated = getattr(_api, name)

    def fn(x, y):
        if is_scalar(y) and isinstance(x, TensorBase):
            return generated(x, scalar_operand(name, x, y))
        if is_scalar(x) and isinstance(y, TensorBase):
            if name == "divide":
                raise _dense_scalar_error(name, x)
            return generated(y, scalar_operand(name, y, x))
        return generated(x, y)
    return _wrap(fn, generated)


def _wrap(fn, generated):
    fn.__name__ = fn.__qualname__ = generated.__name__
    fn.__doc__ = generated.__doc__
    fn.__module__ = "sparse"
    fn.infer_meta = generated.infer_meta
    return fn


add = _additive("add")
subtract = _additive("subtract")
multiply = _scaling("multiply")
divide = _scaling("divide")


def neg(x):
    """-x (multiply by -1 until the value-wise family lands)."""
    return multiply(x, -1)
