"""The elementwise family: one table of unary and binary ops, their ufuncs and derivatives.

Every function here is xp-generic (``xp`` is numpy or cupy), so one entry
serves the CPU and the GPU, dense tensors and the stored values of sparse
ones.  A YAML entry ``family : unary`` or ``family : binary`` (see
yaml/README.md) turns an entry of this table into an op with its kernel,
shape rule, backward and SBP rules; sparse value-wise kernels look the same
entries up by name and apply them to their values.

Derivatives follow the usual convention for complex inputs (PyTorch's and
Paddle's): the gradient of a holomorphic ``f`` is ``g * conj(f'(x))``.  A
derivative reads x and/or the forward output ``out``, both fixed at forward
time.  Where the table's rules differ from a textbook, they follow Paddle
3.3 (torch agrees): ``relu`` and ``relu6`` pass the gradient strictly inside
their bounds and ``clip`` inside its bounds included; ``maximum`` and
``minimum`` split a tie's gradient evenly between x and y, and give none to
either where one is NaN.
"""
import contextlib
import functools
import math
import numbers
import reprlib
from dataclasses import dataclass

import numpy as np

from .threads import run_parallel, split_index


@dataclass(frozen=True)
class Unary:
    """``fn(xp, x, *params) -> out``; ``grad(xp, x, out, g, *params) -> x_grad`` or None.

    ``linear`` marks ops with f(a + b) = f(a) + f(b) (partial sums pass through).
    """

    name: str
    fn: object
    grad: object = None
    params: tuple = ()
    linear: bool = False


@dataclass(frozen=True)
class Binary:
    """``fn(xp, x, y) -> out``; ``grad(xp, x, y, out, g, need) -> (x_grad, y_grad)`` or None.

    ``need`` (default both) says which gradients to compute: the other one
    is None and costs nothing (a backward's ``grad_mask``).

    ``partial`` lists the SBP rules with partial sums the op admits, e.g.
    ``'P, B -> P if finite(y)'`` for multiply (linear in x while y is finite).  ``reads_operands`` is False
    when ``grad`` ignores x, y and out (add, subtract): a backward need not
    gather them.
    """

    name: str
    fn: object
    grad: object = None
    partial: tuple = ()
    reads_operands: bool = True
    params = ()   # no attributes: a binary op takes exactly (x, y)


def _conj(xp, a):
    return xp.conj(a) if a.dtype.kind == "c" else a


def quiet(xp, **kinds):
    """numpy's errstate (silence the named floating-point warnings); a no-op for cupy."""
    return np.errstate(**kinds) if xp is np else contextlib.nullcontext()


def _ufunc(name):
    """``xp.<name>(x)``; its ``cpu`` attribute, numpy's own ufunc, is the CPU kernel.

    An entry function's ``cpu`` attribute, where it has one, is a numpy
    callable computing ``fn(np, x, *params)`` with no Python layer of ours.
    """
    def fn(xp, x):
        if xp is not np and x.dtype == np.float16:
            return _via_float32(getattr(xp, name), x)
        return getattr(xp, name)(x)
    fn.cpu = getattr(np, name)
    return fn


def _via_float32(ufunc, x):
    """``ufunc(x)`` for float16 x computed in float32 and rounded once, as numpy's float16
    loops do (cupy's compute in half precision: its rad2deg was off by 0.2 at 232)."""
    out = ufunc(x.astype(np.float32))
    return out.astype(np.float16) if out.dtype == np.float32 else out


def _times(deriv):
    """A derivative rule ``g * conj(deriv(xp, x, out))``."""
    return lambda xp, x, out, g: g * _conj(xp, xp.asarray(deriv(xp, x, out)))


def _over(deriv):
    """A derivative rule ``g / conj(deriv(xp, x, out))``."""
    return lambda xp, x, out, g: g / _conj(xp, xp.asarray(deriv(xp, x, out)))


def _sigmoid(xp, x):
    """``1 / (1 + exp(-x))`` in numpy's float dtype for x (an integer -x would wrap).

    A float16 result (float16, bool and 8-bit integers) is computed in float64 and
    rounded once, as :func:`_sigmoid_numpy` rounds its float64 result; cupy computes
    float16 in half precision (sigmoid(-5) of int8 was 0.006695 against numpy's
    0.006691 on an H200).
    """
    wide = np.result_type(x.dtype, np.float16)
    work = np.float64 if wide == np.float16 else wide
    with quiet(xp, over="ignore"):
        out = 1 / (1 + xp.exp(-x.astype(work, copy=False)))
    return out.astype(wide, copy=False)


#: Below this x, ``1 / (1 + exp(-x))`` in float64 loses the tail (exp(-x) nears the
#: float's top and the quotient falls below its normal range); there ``exp(x)`` is the
#: sigmoid to the last bit, since ``1 + exp(x)`` rounds to 1.
_TAIL = -700.0
#: Elements per block: the passes reread the block from cache.
_SIGMOID_BLOCK = 1 << 14
#: Up to this many elements, one scipy ``expit`` call costs less than the blocked
#: formula's set-up: 10 float32 values took 0.9 us against 5.9.
_SIGMOID_SMALL = 1 << 12


def _sigmoid_numpy(x):
    """The logistic sigmoid on the CPU, without an overflow warning.

    - float32 (and int16 and uint16, whose numpy float dtype it is) is computed in
      float64 and rounded once: within 0.5 ulp, the same bits at every size.  float16,
      bool and the other integers go through the float64 path, rounded once to
      numpy's float dtype for them.  Up to :data:`_SIGMOID_SMALL` elements that is one scipy ``expit`` call;
      above, ``1 / (1 + exp(-x))`` by numpy's vectorised ufuncs on float64 blocks on
      threads (-x clamped at 709, where the float32 result is 0 anyway): 4e6 values
      took 7.8 ms, against 9.3 for numpy's float32 formula and 5.3 for the float32
      blocks this replaced, which were off by up to 3.7 ulp.  expit's own float32
      loop flushes results below 2**-126 to 0.
    - float64: ``expit`` up to :data:`_SIGMOID_SMALL` elements, the formula in place
      block by block above, each with ``exp(x)`` below :data:`_TAIL` (expit flushes
      subnormal results): within 2.5 ulp; the two may differ in the last bit.
    - long double: expit; complex: the formula.
    """
    char = x.dtype.char                 # compared first: a per-call path
    if char == "f":
        return _sigmoid_f32(x)
    if char == "d":
        return _sigmoid_f64(x)
    if x.dtype.kind in "biu" or char == "e":   # numpy's float dtype for x
        wide = np.result_type(x.dtype, np.float16)
        if wide == np.float32:
            return _sigmoid_f32(x.astype(np.float32))
        return _sigmoid_f64(x.astype(np.float64)).astype(wide)   # rounded once
    return _expit()(x) if char == "g" else _sigmoid(np, x)


def _sigmoid_f32(x):
    if x.size <= _SIGMOID_SMALL:       # a 0-d x gives a numpy scalar, as a ufunc does
        return _expit()(x.astype(np.float64)).astype(np.float32)
    src = x.reshape(-1)
    out = np.empty(x.shape, np.float32)
    dst = out.reshape(-1)

    def piece(part):
        s, d = src[part], dst[part]
        wide = np.empty(min(_SIGMOID_BLOCK, s.shape[0]), np.float64)
        for lo in range(0, s.shape[0], _SIGMOID_BLOCK):
            w = wide[:min(_SIGMOID_BLOCK, s.shape[0] - lo)]
            np.negative(s[lo:lo + _SIGMOID_BLOCK], out=w)
            np.minimum(w, 709.0, out=w)
            np.exp(w, out=w)
            np.add(w, 1, out=w)
            np.reciprocal(w, out=w)
            d[lo:lo + _SIGMOID_BLOCK] = w
    run_parallel(piece, split_index(src.shape, 3 * src.nbytes))
    return out


def _sigmoid_f64(x):
    if x.size <= _SIGMOID_SMALL:
        out = _expit()(x)
        low = x < _TAIL
        if low.any():
            out = np.array(out)             # a 0-d x gave a numpy scalar
            out[low] = np.exp(x[low])
        return out
    src = x.reshape(-1)
    out = np.empty(x.shape, x.dtype)
    dst = out.reshape(-1)
    with np.errstate(over="ignore"):
        for lo in range(0, src.shape[0], _SIGMOID_BLOCK):
            d = dst[lo:lo + _SIGMOID_BLOCK]
            np.negative(src[lo:lo + _SIGMOID_BLOCK], out=d)
            np.exp(d, out=d)
            np.add(d, 1, out=d)
            np.reciprocal(d, out=d)
    tail = np.flatnonzero(src < _TAIL)
    if tail.size:
        dst[tail] = np.exp(src[tail])
    return out


@functools.cache
def _expit():
    from scipy.special import expit     # on first use: importing it takes 60 ms
    return expit


_sigmoid.cpu = _sigmoid_numpy


def _relu(xp, x):
    return xp.maximum(x, 0)          # x first: relu(-0.0) is +0.0 (maximum keeps its first tie)


def _relu_numpy(x):
    return np.maximum(x, 0)


_relu.cpu = _relu_numpy


def _abs_grad(xp, x, out, g):
    if x.dtype.kind == "c":
        with quiet(xp, invalid="ignore", divide="ignore"):
            return g * xp.where(out == 0, 0, x / xp.where(out == 0, 1, out))
    return g * xp.sign(x)


def _mask_grad(cond):
    """A derivative that passes g where ``cond(xp, x)`` holds and gives 0 elsewhere."""
    return lambda xp, x, out, g, *p: xp.where(cond(xp, x, *p), g, xp.zeros((), g.dtype))


def _clip(xp, x, lo=None, hi=None):
    """numpy's clip; on cupy, which refuses both, a complex x is clipped in numpy's order
    (:func:`_lex_less`) and a Python int bound beyond an integer dtype stands at its end."""
    if lo is None and hi is None:
        return xp.array(x, copy=True)
    if xp is not np and x.dtype.kind == "c":
        return _clip_complex(xp, x, lo, hi)
    if xp is not np and x.dtype.kind in "iu":
        lo, hi = _held(x.dtype, lo), _held(x.dtype, hi)
    return xp.clip(x, lo, hi)


def _lex_less(a, b):
    """numpy's order of complex numbers: by real part, then by imaginary part."""
    return (a.real < b.real) | ((a.real == b.real) & (a.imag < b.imag))


def _clip_complex(xp, x, lo, hi):
    """``minimum(maximum(x, lo), hi)`` in numpy's complex order; NaN stays NaN."""
    if lo is not None:
        x = xp.where(_lex_less(x, lo), xp.asarray(lo, x.dtype), x)
    if hi is not None:
        x = xp.where(_lex_less(hi, x), xp.asarray(hi, x.dtype), x)
    return x


def _held(dtype, bound):
    """A Python int bound moved into ``dtype``'s range (it clips the same)."""
    if type(bound) is not int:
        return bound
    info = np.iinfo(dtype)
    return min(max(bound, int(info.min)), int(info.max))


def _inside(xp, x, lo=None, hi=None):
    keep = xp.ones(x.shape, bool)
    if lo is not None:
        keep &= x >= lo
    if hi is not None:
        keep &= x <= hi
    return keep


def _leaky_relu(xp, x, slope=0.01):
    return xp.where(x > 0, x, x * slope)


def _leaky_relu_grad(xp, x, out, g, slope=0.01):
    return xp.where(x > 0, g, g * slope)


def check_int_power(x, exponent, names=("x", "y")):
    """ValueError naming pow where numpy's own names nothing: a non-empty integer or
    bool base ``x`` to an ``exponent`` (a Python int or an array) holding negative
    integers.  Dense ``pow`` and sparse ``pow(x, factor)`` share it."""
    if x.dtype.kind not in "biu" or not x.size:
        return
    if isinstance(exponent, numbers.Integral):
        low = int(exponent)
    elif getattr(exponent, "dtype", None) is not None and exponent.dtype.kind == "i" \
            and exponent.size:
        low = int(exponent.min())
    else:
        return
    if low < 0:
        raise ValueError(f"pow: the exponent {names[1]} holds negative integers (down to "
                         f"{low}) and the base {names[0]} has dtype {x.dtype.name}; integers "
                         "to negative integer powers are not allowed (numpy): cast "
                         f"{names[0]} to a floating dtype")


def _pow_factor(xp, x, factor):
    check_int_power(x, factor, ("x's values", "factor"))
    return x ** factor


def _pow_factor_grad(xp, x, out, g, factor):
    if factor == 0:                  # x ** 0 is constant: 0, not 0 * 0 ** -1 = nan at x = 0
        return g * xp.zeros((), g.dtype)
    return g * _conj(xp, xp.asarray(factor * x ** (factor - 1)))


def _scale(xp, x, scale=1.0, bias=0.0, bias_after_scale=True):
    return x * scale + bias if bias_after_scale else (x + bias) * scale


def _scale_grad(xp, x, out, g, scale=1.0, bias=0.0, bias_after_scale=True):
    return g * scale.conjugate()            # a Python scalar stays weak (NEP 50)


UNARY_TABLE = (
    Unary("abs", _ufunc("abs"), _abs_grad),
    Unary("neg", _ufunc("negative"), lambda xp, x, out, g: -g, linear=True),
    Unary("exp", _ufunc("exp"), _times(lambda xp, x, out: out)),
    Unary("log", _ufunc("log"), _over(lambda xp, x, out: x)),
    Unary("sqrt", _ufunc("sqrt"), _over(lambda xp, x, out: 2 * out)),
    Unary("square", _ufunc("square"), _times(lambda xp, x, out: 2 * x)),
    Unary("sin", _ufunc("sin"), _times(lambda xp, x, out: xp.cos(x))),
    Unary("cos", _ufunc("cos"), _times(lambda xp, x, out: -xp.sin(x))),
    Unary("tan", _ufunc("tan"), _times(lambda xp, x, out: 1 + out * out)),
    Unary("sinh", _ufunc("sinh"), _times(lambda xp, x, out: xp.cosh(x))),
    Unary("tanh", _ufunc("tanh"), _times(lambda xp, x, out: 1 - out * out)),
    Unary("asin", _ufunc("arcsin"), _over(lambda xp, x, out: xp.sqrt(1 - x * x))),
    Unary("asinh", _ufunc("arcsinh"), _over(lambda xp, x, out: xp.sqrt(x * x + 1))),
    Unary("atan", _ufunc("arctan"), _over(lambda xp, x, out: 1 + x * x)),
    Unary("atanh", _ufunc("arctanh"), _over(lambda xp, x, out: 1 - x * x)),
    Unary("expm1", _ufunc("expm1"), _times(lambda xp, x, out: out + 1)),
    Unary("log1p", _ufunc("log1p"), _over(lambda xp, x, out: 1 + x)),
    Unary("deg2rad", _ufunc("deg2rad"), lambda xp, x, out, g: g * (math.pi / 180),
          linear=True),
    Unary("rad2deg", _ufunc("rad2deg"), lambda xp, x, out, g: g * (180 / math.pi),
          linear=True),
    Unary("sigmoid", _sigmoid, _times(lambda xp, x, out: out * (1 - out))),
    Unary("relu", _relu, _mask_grad(lambda xp, x: x > 0)),
    Unary("relu6", lambda xp, x: _clip(xp, x, 0, 6),
          _mask_grad(lambda xp, x: (x > 0) & (x < 6))),
    Unary("leaky_relu", _leaky_relu, _leaky_relu_grad, params=("negative_slope",)),
    Unary("pow", _pow_factor, _pow_factor_grad, params=("factor",)),
    Unary("scale", _scale, _scale_grad, params=("scale", "bias", "bias_after_scale")),
    Unary("clip", _clip, _mask_grad(_inside), params=("min", "max")),
    Unary("isnan", _ufunc("isnan")),
)


BOTH = (True, True)


def _sides(x_rule, y_rule):
    """A binary derivative from one rule per input ``rule(xp, x, y, out, g)``, each run
    only when needed."""
    def grad(xp, x, y, out, g, need=BOTH):
        return (x_rule(xp, x, y, out, g) if need[0] else None,
                y_rule(xp, x, y, out, g) if need[1] else None)
    return grad


def _pow_x(xp, x, y, out, g):
    """g * y * x**(y-1), and 0 where y == 0 (x**0 is constant; torch's pow_backward_self),
    where the formula would give 0 * inf = nan at x == 0."""
    with quiet(xp, divide="ignore", invalid="ignore"):
        grad = g * _conj(xp, y * x ** (y - 1))
    return xp.where(y == 0, xp.zeros((), grad.dtype), grad)


def _pow_y(xp, x, y, out, g):
    """g * out * log(x), and 0 where x == 0 and y is real and >= 0 (torch's
    pow_backward_exponent: 0**y is flat there, not 0 * -inf = nan)."""
    with quiet(xp, divide="ignore", invalid="ignore"):
        grad = g * _conj(xp, out * xp.log(x))
    flat = (x == 0) & (xp.real(y) >= 0)
    if y.dtype.kind == "c":
        flat &= xp.imag(y) == 0
    return xp.where(flat, xp.zeros((), grad.dtype), grad)


def _divide(xp, x, y):
    """``x / y``; a complex x over 0 is numpy's on cupy too (CUDA's complex division
    gives nan+nanj there)."""
    out = xp.divide(x, y)
    if xp is np or out.dtype.kind != "c":
        return out
    return xp.where(y == 0, _over_zero(xp, x, y, out), out)


def _over_zero(xp, x, y, out):
    """numpy's complex ``x / 0`` (Smith's algorithm's zero branch): each part of x over
    the absolute value of the same part of y, so ``(1+1j)/0`` is ``inf+infj``."""
    x = xp.asarray(x).astype(out.dtype, copy=False)
    y = xp.asarray(y)
    z = xp.empty(out.shape, out.dtype)
    z.real[...] = x.real / xp.abs(y.real)
    z.imag[...] = x.imag / xp.abs(y.imag)
    return z


_divide.cpu = np.divide


def _divide_grad(xp, x, y, out, g, need=BOTH):
    """x_grad = g / conj(y), computed once; y_grad = -x_grad * conj(out)."""
    gx = _divide(xp, g, _conj(xp, y))
    return gx if need[0] else None, -gx * _conj(xp, out) if need[1] else None


def _pick_grad(x_wins):
    """maximum/minimum: g goes to x where ``x_wins(x, y)``, to y where ``x_wins(y, x)``,
    half to each at a tie, and to neither where x or y is NaN (Paddle 3.3, torch)."""
    def grad(xp, x, y, out, g, need=BOTH):
        half = xp.where(x == y, g * 0.5, xp.zeros((), g.dtype))
        return (xp.where(x_wins(x, y), g, half) if need[0] else None,
                xp.where(x_wins(y, x), g, half) if need[1] else None)
    return grad


def _binary_ufunc(name):
    """``xp.<name>(x, y)``, with ``cpu`` as :func:`_ufunc`'s."""
    fn = lambda xp, x, y: getattr(xp, name)(x, y)    # noqa: E731
    fn.cpu = getattr(np, name)
    return fn


BINARY_TABLE = (
    Binary("add", _binary_ufunc("add"), _sides(lambda xp, x, y, out, g: g,
                                               lambda xp, x, y, out, g: g), ("P, P -> P",),
           reads_operands=False),
    Binary("subtract", _binary_ufunc("subtract"),
           _sides(lambda xp, x, y, out, g: g, lambda xp, x, y, out, g: -g), ("P, P -> P",),
           reads_operands=False),
    Binary("multiply", _binary_ufunc("multiply"),
           _sides(lambda xp, x, y, out, g: g * _conj(xp, y),
                  lambda xp, x, y, out, g: g * _conj(xp, x)),
           ("P, B -> P if finite(y)", "B, P -> P if finite(x)")),
    Binary("divide", _divide, _divide_grad, ("P, B -> P if nonzero(y)",)),
    Binary("pow", _binary_ufunc("power"), _sides(_pow_x, _pow_y)),
    Binary("maximum", _binary_ufunc("maximum"), _pick_grad(lambda x, y: x > y)),
    Binary("minimum", _binary_ufunc("minimum"), _pick_grad(lambda x, y: x < y)),
    Binary("equal", _binary_ufunc("equal")),
    Binary("not_equal", _binary_ufunc("not_equal")),
    Binary("less_than", _binary_ufunc("less")),
    Binary("less_equal", _binary_ufunc("less_equal")),
    Binary("greater_than", _binary_ufunc("greater")),
    Binary("greater_equal", _binary_ufunc("greater_equal")),
)

UNARY = {op.name: op for op in UNARY_TABLE}
BINARY = {op.name: op for op in BINARY_TABLE}
FAMILIES = {"unary": UNARY, "binary": BINARY}


def result_dtype(op, entry, *dtypes_and_params):
    """The dtype ``entry`` gives for inputs of these dtypes, found by running it on 0-size arrays.

    This is numpy's own promotion (NEP 50: Python scalars among the params
    are weak).  A dtype the ufunc does not take raises TypeError naming ``op``.
    The answer is cached per (op, dtypes, params).
    """
    # typed keys: 1, 1.0 and True are equal as keys but promote differently
    key = dtypes_and_params if len(dtypes_and_params) <= 2 and isinstance(entry, Binary) \
        or len(dtypes_and_params) == 1 else tuple((type(v), v) for v in dtypes_and_params)
    try:
        return _cached_dtype(op, entry, key)
    except TypeError as exc:  # an unhashable param
        if "unhashable" not in str(exc):
            raise
        return _run_on_empty(op, entry, dtypes_and_params)


@functools.lru_cache(maxsize=4096)
def _cached_dtype(op, entry, key):
    params = key if all(isinstance(k, np.dtype) for k in key) else tuple(v for _, v in key)
    return _run_on_empty(op, entry, params)


def _run_on_empty(op, entry, dtypes_and_params):
    n = 1 if isinstance(entry, Unary) else 2
    dtypes, params = dtypes_and_params[:n], dtypes_and_params[n:]
    empties = [np.empty(0, d) for d in dtypes]
    try:
        with np.errstate(all="ignore"):
            return np.asarray(entry.fn(np, *empties, *params)).dtype
    except (TypeError, OverflowError) as exc:
        names = " and ".join(np.dtype(d).name for d in dtypes)
        if isinstance(exc, OverflowError) and params:
            raise TypeError(f"{op}: dtype {names} cannot hold the arguments "
                            f"{reprlib.repr(list(params))}: {exc}") from None
        raise TypeError(f"{op}: dtype {names} is not supported: {exc}") from None
