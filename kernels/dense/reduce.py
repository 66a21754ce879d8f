"""Dense reductions: sum, mean, max, min, prod, argmax, argmin, with backward.

max and min send the gradient of each slice to one arg-extremum, the first
in C order of the reduced dims (as Paddle: ties do not share it).  prod's
gradient is the product of the other elements of the slice, from exclusive
cumulative products on both sides, so zeros need no division.
"""
import numpy as np

from ..core.dtypes import ALL
from ..core.owned import readable
from ..core.registry import register_kernel
from ..core.xp import xp_of
from ..funcs.broadcast import expand_copy
from ..funcs.sum_to_shape import grad_in_dtype
from ..funcs.threads import MIN_BYTES_PER_THREAD, run_parallel, split_index
from ..infermeta.reduce import _axes, reduced_shape, sum_dtype, sum_keepdim_shape

BACKENDS = ("cpu", "gpu")


def small(x):
    """True for a numpy x below the threading size: a kernel then calls its ufunc's own
    ``reduce`` once, positionally (no ``fromnumeric`` wrapper, no keyword parsing)."""
    return type(x) is np.ndarray and x.nbytes < 2 * MIN_BYTES_PER_THREAD


def reduce(fn, x, axes, keepdim, **kw):
    """numpy reduction ``fn`` (``np.sum``, ``np.mean``, ...) of x over ``axes`` on threads.

    A large CPU input is cut along a kept axis before the first reduced one
    (each block stays a run of whole slices; cutting a later axis would make
    numpy's reduction loops stride); each thread reduces its block into its
    part of the output, so every output element is computed exactly as one
    numpy call would.  Other inputs, and GPU arrays, make one call.
    """
    xp = xp_of(x)
    if small(x) or xp is not np or not axes or min(axes) == 0:
        return fn(x, axis=axes, keepdims=keepdim, **kw)     # a scalar is wrapped by dispatch
    parts = split_index(x.shape, x.nbytes, candidates=range(min(axes)))
    if len(parts) == 1:
        return fn(x, axis=axes, keepdims=keepdim, **kw)
    kept = [d for d in range(x.ndim) if d not in axes]
    dtype = fn(x[(slice(0, 1),) * x.ndim], axis=axes, **kw).dtype
    out = np.empty(tuple(1 if d in axes else n for d, n in enumerate(x.shape)), dtype)
    run_parallel(lambda part: fn(x[part], axis=axes, keepdims=True, out=out[part], **kw), parts)
    return out if keepdim else out.reshape(tuple(x.shape[d] for d in kept))


@register_kernel("sum", backends=("cpu", "gpu"), dtypes=ALL)
def sum_(x, axis, keepdim=False):
    """Sum over the normalised ``axis`` tuple (from the infer-meta) with numpy's
    accumulator dtype."""
    dtype = sum_dtype(x.dtype)
    if small(x):
        return np.add.reduce(x, axis, dtype, None, keepdim)
    return reduce(xp_of(x).sum, x, axis, keepdim, dtype=dtype)


@register_kernel("sum_grad", backends=("cpu", "gpu"), dtypes=ALL)
def sum_grad(x, out_grad, axis=None, keepdim=False):
    """Expand out_grad back over the summed axes, cast to x's dtype."""
    g = out_grad.reshape(sum_keepdim_shape(x.shape, axis)).astype(x.dtype, copy=False)
    return expand_copy(g, x.shape)


@register_kernel("mean", backends=BACKENDS, dtypes=ALL)
def mean(x, axis, keepdim=False):
    """numpy's mean over the normalised ``axis`` tuple (from the infer-meta)."""
    fast = x.dtype.char in _SUM_THEN_DIVIDE and x.size and type(x) is np.ndarray
    if fast and x.nbytes < 2 * MIN_BYTES_PER_THREAD:     # small(x), inline: a per-call path
        return _sum_then_divide(x, axis, keepdim)
    return reduce(_sum_then_divide if fast else xp_of(x).mean, x, axis, keepdim)


#: Type characters of the dtypes whose numpy mean is their own-dtype sum divided by the
#: count, and the largest count each dtype holds exactly.
_SUM_THEN_DIVIDE = {"f": 1 << 24, "d": 1 << 53, "F": 0, "D": 0}


def _sum_then_divide(x, axis, keepdims=False, out=None):
    """np.mean for a non-empty float or complex x, without its Python set-up.

    numpy divides the sum by an ``intp`` count, in float64 for float32 sums.
    A float32 division by a count that float32 holds exactly gives the same
    bits (double rounding is innocuous for division when the wider format
    has at least 2p + 2 bits: Figueroa, "When is double rounding
    innocuous?", 1995), and skips the float64 loop and the cast back; complex
    sums keep numpy's intp divisor.
    """
    total = np.add.reduce(x, axis, None, out, keepdims)      # positional: no keyword parsing
    count = x.size // total.size
    if count > _SUM_THEN_DIVIDE[x.dtype.char]:
        count = np.intp(count)
    elif type(total) is np.ndarray:
        np.true_divide(total, _divisor(count, total.dtype), out=total)
        return total
    if type(total) is np.ndarray:
        total /= count
        return total
    return total.dtype.type(total / count)


#: (count, dtype) -> the count as a 0-d array of that dtype: a ufunc reads it at once,
#: where it converts a Python int on every call (0.36 against 0.73 us).
_DIVISORS = {}


def _divisor(count, dtype):
    """``count`` as a 0-d array of float ``dtype``, which holds it exactly (remembered)."""
    found = _DIVISORS.get((count, dtype))
    if found is None:
        if len(_DIVISORS) >= 256:
            _DIVISORS.clear()
        found = _DIVISORS[count, dtype] = np.array(count, dtype)
    return found


@register_kernel("mean_grad", backends=BACKENDS, dtypes=ALL)
def mean_grad(x, out_grad, axis=None, keepdim=False):
    """out_grad / count, spread over the reduced axes; x is metadata only."""
    axes = _axes(x.ndim, axis, "mean")
    count = 1
    for a in axes:
        count *= x.shape[a]
    g = out_grad.reshape(sum_keepdim_shape(x.shape, axis, "mean")) / max(count, 1)
    return expand_copy(grad_in_dtype(g, x.dtype), x.shape)


def _extreme(name, ufunc):
    @register_kernel(name, backends=BACKENDS, dtypes=ALL)
    def forward(x, axis, keepdim=False):
        if small(x):
            return ufunc.reduce(x, axis, None, None, keepdim)
        return reduce(getattr(xp_of(x), name), x, axis, keepdim)
    forward.__name__ = name
    forward.__doc__ = f"numpy's {name} over the normalised ``axis`` tuple; x's dtype."
    return forward


max_, min_ = _extreme("max", np.maximum), _extreme("min", np.minimum)


def _slices(x, axes):
    """x with the reduced axes moved last and merged: shape (rest..., n)."""
    xp = xp_of(x)
    kept = [d for d in range(x.ndim) if d not in axes]
    moved = xp.transpose(x, kept + list(axes))
    n = 1
    for d in axes:
        n *= x.shape[d]
    return moved.reshape(tuple(x.shape[d] for d in kept) + (n,)), kept


def _unslice(v, x, axes, kept):
    """The inverse of :func:`_slices` for an array of v's shape."""
    xp = xp_of(v)
    v = v.reshape(tuple(x.shape[d] for d in kept) + tuple(x.shape[d] for d in axes))
    order = kept + list(axes)
    return xp.transpose(v, [order.index(d) for d in range(x.ndim)]).copy()


def _extreme_grad(name, arg):
    @register_kernel(name + "_grad", backends=BACKENDS, dtypes=ALL)
    def backward(x, out_grad, axis=None, keepdim=False):
        xp = xp_of(x)
        axes = _axes(x.ndim, axis, name)
        v, kept = _slices(x, axes)
        pick = getattr(xp, arg)(readable(v), axis=-1)[..., None]
        g = grad_in_dtype(out_grad.reshape(pick.shape), x.dtype)
        grad = xp.where(xp.arange(v.shape[-1]) == pick, g, xp.zeros((), x.dtype))
        return _unslice(grad, x, axes, kept)
    backward.__name__ = name + "_grad"
    backward.__doc__ = (f"out_grad at the first arg{name} of each slice (the issue's rule; "
                        "Paddle 3.3 shares it among ties), zeros elsewhere.")
    return backward


max_grad, min_grad = _extreme_grad("max", "argmax"), _extreme_grad("min", "argmin")


@register_kernel("prod", backends=BACKENDS, dtypes=ALL)
def prod(x, axis, keepdim=False):
    """numpy's prod over the normalised ``axis`` tuple in :func:`sum_dtype` (bool and small
    integers, uint8 included, accumulate in int64)."""
    dtype = sum_dtype(x.dtype)
    if small(x):
        return np.multiply.reduce(x, axis, dtype, None, keepdim)
    return reduce(xp_of(x).prod, x, axis, keepdim, dtype=dtype)


@register_kernel("prod_grad", backends=BACKENDS, dtypes=ALL)
def prod_grad(x, out_grad, axis=None, keepdim=False):
    """out_grad times the product of the slice's other elements (exclusive cumprods)."""
    xp = xp_of(x)
    axes = _axes(x.ndim, axis, "prod")
    v, kept = _slices(x, axes)
    if v.shape[-1] == 0:
        return xp.zeros(x.shape, x.dtype)
    ones = xp.ones(v.shape[:-1] + (1,), v.dtype)
    left = xp.cumprod(xp.concatenate([ones, v[..., :-1]], axis=-1), axis=-1)
    right = xp.flip(xp.cumprod(xp.concatenate([ones, xp.flip(v, -1)[..., :-1]], axis=-1),
                               axis=-1), -1)
    others = left * right
    others = xp.conj(others) if others.dtype.kind == "c" else others
    g = out_grad.reshape(v.shape[:-1] + (1,)) * others
    return _unslice(grad_in_dtype(g, x.dtype), x, axes, kept)


def _arg(name):
    @register_kernel(name, backends=BACKENDS, dtypes=ALL)
    def forward(x, axis=None, keepdim=False):
        xp = xp_of(x)
        if axis is None:
            flat = getattr(xp, name)(readable(x).reshape(-1))
            return xp.asarray(flat, dtype=xp.int64).reshape(reduced_shape(
                x.shape, tuple(range(x.ndim)), keepdim))
        out = getattr(readable(x), name)(axis=axis, keepdims=keepdim)    # the array's own
        return out if out.dtype == np.int64 else out.astype(np.int64)
    forward.__name__ = name
    forward.__doc__ = f"numpy's {name} as int64; axis None gives the flat index."
    return forward


argmax, argmin = _arg("argmax"), _arg("argmin")
