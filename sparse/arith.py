"""Scalars in sparse arithmetic (API2.md's settled rules).

``sparse.add``, ``subtract``, ``multiply`` and ``divide`` are the YAML ops
(:mod:`sparse._generated_api`); dispatch turns a Python or numpy scalar into
a 0-d dense operand (Python scalars are weak, NEP 50: float32 stays float32),
so multiply and divide keep the sparse pattern.  These wrappers add what the
ops alone would get wrong: adding or subtracting a nonzero scalar would give
a dense result and raises TypeError (a zero scalar returns x itself, or -x),
and so does a scalar divided by a sparse tensor.
"""
import inspect
import numbers

import numpy as np

from kernels.core.tensor import TensorBase

from . import _generated_api as _api


def is_scalar(value):
    """True for a Python or numpy number (bool included), not for arrays or tensors."""
    return isinstance(value, (numbers.Number, np.generic)) and not isinstance(value, TensorBase)


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
                return other if s is y or name == "add" else _api.neg(other)
        return generated(x, y)
    return _wrap(fn, generated)


def _divide():
    generated = _api.divide

    def fn(x, y):
        if is_scalar(x) and isinstance(y, TensorBase) and y.layout != "dense":
            raise TypeError(f"divide: the scalar {x!r} divided by a sparse tensor would be "
                            "dense (x / 0 at every coordinate y does not store); convert y "
                            "with to_dense() first")
        return generated(x, y)
    return _wrap(fn, generated)


def _wrap(fn, generated):
    fn.__name__ = fn.__qualname__ = generated.__name__
    fn.__doc__ = generated.__doc__
    fn.__annotations__ = dict(generated.__annotations__)
    fn.__signature__ = inspect.signature(generated)
    fn.__module__ = "sparse"
    fn.infer_meta = generated.infer_meta
    return fn


add = _additive("add")
subtract = _additive("subtract")
divide = _divide()


def power(x, factor):
    """``x ** factor`` for a scalar factor: value-wise :func:`sparse.pow`."""
    if not is_scalar(factor):
        raise TypeError(f"pow: a sparse tensor's exponent must be a Python or numpy scalar, "
                        f"got {type(factor).__name__}")
    return _api.pow(x, factor)
