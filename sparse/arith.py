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

from kernels.core.meta import MetaTensor
from kernels.core.tensor import LOCAL_CLASSES, TensorBase
from kernels.sparse.binary import stores_each_once

from . import _generated_api as _api


def is_scalar(value):
    """True for a Python or numpy number (bool included), not for arrays or tensors."""
    return isinstance(value, (numbers.Number, np.generic)) and not isinstance(value, TensorBase)


def _sparse(value):
    """True for a sparse tensor or the MetaTensor of one."""
    return isinstance(value, (TensorBase, MetaTensor)) and value.layout != "dense"


def _bind(generated, args, kwargs):
    """(x, y) of an infer-meta call; TypeError naming the op for a wrong argument list."""
    try:
        bound = inspect.signature(generated).bind(*args, **kwargs)
    except TypeError as exc:
        raise TypeError(f"{generated.__name__}.infer_meta: {exc}") from None
    return bound.arguments["x"], bound.arguments["y"]


def _dense_scalar_error(op, value):
    return TypeError(f"{op}: {op} of a sparse tensor and the nonzero scalar {value!r} would "
                     "be dense; convert with to_dense() first")


def _additive(name):
    generated = getattr(_api, name)

    def scalar_rule(x, y, run):
        """What a sparse operand with a scalar one gives: TypeError for a nonzero scalar;
        for a zero, the sparse operand (or its negation), through ``run(op, t)``."""
        for s, other in ((y, x), (x, y)):
            if is_scalar(s) and _sparse(other):
                if s != 0:
                    raise _dense_scalar_error(name, s)
                return other if s is y or name == "add" else run("neg", other)
        return None

    def fn(x, y):
        if type(x) in LOCAL_CLASSES and type(y) in LOCAL_CLASSES:   # no scalar: the op
            return generated(x, y)
        out = scalar_rule(x, y, lambda op, t: getattr(_api, op)(t))
        return generated(x, y) if out is None else out

    def infer_meta(*args, **kwargs):
        x, y = _bind(generated, args, kwargs)
        out = scalar_rule(x, y, lambda op, t: getattr(_api, op).infer_meta(t))
        if out is None:
            return generated.infer_meta(x, y)
        return out if isinstance(out, MetaTensor) else out.meta
    return _wrap(fn, generated, infer_meta)


def _divide():
    generated = _api.divide

    def check(x, y):
        if is_scalar(x) and _sparse(y):
            raise TypeError(f"divide: the scalar {x!r} divided by a sparse tensor would be "
                            "dense (x / 0 at every coordinate y does not store); convert y "
                            "with to_dense() first")

    def fn(x, y):
        check(x, y)
        return generated(x, y)

    def infer_meta(*args, **kwargs):
        x, y = _bind(generated, args, kwargs)
        check(x, y)
        return generated.infer_meta(x, y)
    return _wrap(fn, generated, infer_meta)


def _wrap(fn, generated, infer_meta):
    """``fn`` dressed as the generated op; its infer-meta applies the same scalar rule."""
    fn.__name__ = fn.__qualname__ = generated.__name__
    fn.__doc__ = generated.__doc__
    fn.__annotations__ = dict(generated.__annotations__)
    fn.__signature__ = inspect.signature(generated)
    fn.__module__ = "sparse"
    infer_meta.__name__ = generated.infer_meta.__name__
    infer_meta.__doc__ = generated.infer_meta.__doc__
    infer_meta.__signature__ = inspect.signature(generated.infer_meta)
    fn.infer_meta = infer_meta
    return fn


add = _additive("add")
subtract = _additive("subtract")
divide = _divide()


def power(x, factor):
    """``x ** factor`` for a scalar factor: :func:`sparse.pow` of the logical values
    (duplicates summed first, as every operator does)."""
    if not is_scalar(factor):
        raise TypeError(f"pow: a sparse tensor's exponent must be a Python or numpy scalar, "
                        f"got {type(factor).__name__}")
    return _api.pow(logical(x), factor)


def absolute(x):
    """``abs(x)``: :func:`sparse.abs` of the logical values (duplicates summed first)."""
    return _api.abs(logical(x))


def logical(x):
    """x itself when it stores each coordinate once, else x with its duplicates summed
    (times a one of its own dtype: the multiply sums them, differentiably, and keeps
    the layout).  The operators act on the logical values (``abs`` of 2 and -1 stored
    at one coordinate is 1, where the value-wise ``sparse.abs`` gives 3); the named
    value-wise ops act entry by entry, as Paddle's."""
    if type(x) in LOCAL_CLASSES and stores_each_once(x._data()):
        return x
    return _api.multiply(x, np.ones((), x.dtype)[()])
