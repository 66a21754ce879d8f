"""Shape rules of the creation ops and cast (defaults follow numpy's dtypes)."""
import math
import numbers

import numpy as np

from ..core.dtypes import canonical_dtype
from ..core.meta import MetaTensor
from ..core.size import check_output_size
from ..core.xp import xp_of


def _shape(shape, op):
    for s in shape:
        if s < 0:
            raise ValueError(f"{op}: shape {list(shape)} has a negative dim {s}; expected "
                             "sizes >= 0")
    return tuple(shape)


#: The range of int64, the dtype a Python int takes.
INT64 = np.iinfo(np.int64)


def _fill_dtype(fill_value, dtype, op):
    if dtype is None and type(fill_value) is int and not INT64.min <= fill_value <= INT64.max:
        raise ValueError(f"{op}: fill_value {fill_value} is out of the range of int64 (the "
                         f"dtype a Python int takes); expected a value in [{INT64.min}, "
                         f"{INT64.max}], or a dtype that holds it (dtype='float64')")
    dt = canonical_dtype(np.asarray(fill_value).dtype if dtype is None else dtype, op)
    check_fill(fill_value, dt, op)
    return dt


def check_fill(value, dtype, op, arg="fill_value"):
    """ValueError naming ``op`` unless the scalar ``value`` becomes a number of ``dtype``.

    numpy raises OverflowError for an int out of an integer dtype's range,
    casts NaN, ±inf and out-of-range floats silently to arbitrary integers,
    and drops a complex value's imaginary part with a ComplexWarning; each of
    these raises here.  A float inside an integer dtype's range truncates
    toward zero, as numpy's cast; any value becomes a bool (its truth); a
    finite value too large for a float dtype becomes ``inf``, as in numpy,
    torch and Paddle (``full([1], 70000.0, dtype='float16')`` is inf).
    """
    if dtype.kind == "b" or isinstance(value, (bool, np.bool_)):
        return
    if isinstance(value, (complex, np.complexfloating)) and dtype.kind != "c":
        raise ValueError(f"{op}: {arg} {value!r} is complex and dtype {dtype.name} is real "
                         "(numpy would drop the imaginary part); expected a real number (take "
                         ".real), or a complex dtype")
    if dtype.kind not in "iu":
        return
    if not math.isfinite(value):
        raise ValueError(f"{op}: {arg} {value!r} cannot become {dtype.name}; expected a "
                         "finite number")
    info = np.iinfo(dtype)
    if not info.min <= int(value) <= info.max:          # int() truncates, as the cast
        raise ValueError(f"{op}: {arg} {value!r} is out of the range of {dtype.name}; "
                         f"expected a value in [{info.min}, {info.max}]")


def cast_values(array, dtype, op, arg="data"):
    """A copy of ``array`` (numpy or cupy) as ``dtype``, checked as :func:`check_fill`
    checks a scalar.

    ValueError naming ``op`` and ``arg`` where a value would not survive the
    cast: a complex array into a real dtype, NaN, ±inf or a value out of range
    into an integer dtype (numpy wraps or makes arbitrary integers).  A float
    inside an integer dtype's range truncates toward zero and a finite value
    too large for a float dtype becomes inf, as numpy's ``astype``.
    """
    src = array.dtype
    if src != dtype and dtype.kind != "b" and array.size:
        if src.kind == "c" and dtype.kind != "c":
            raise ValueError(f"{op}: {arg} of dtype {src.name} cannot become {dtype.name}: "
                             "the imaginary parts would be lost; expected real data (take "
                             ".real first), or a complex dtype")
        if dtype.kind in "iu" and src.kind in "fiu":
            if src.kind == "f" and not bool(xp_of(array).isfinite(array).all()):
                raise ValueError(f"{op}: {arg} holds NaN or inf, which {dtype.name} cannot "
                                 "hold; expected finite numbers")
            lo, hi, info = int(array.min()), int(array.max()), np.iinfo(dtype)
            if lo < info.min or hi > info.max:          # int() truncates, as the cast
                raise ValueError(f"{op}: {arg} holds {lo if lo < info.min else hi}, a value "
                                 f"out of the range of dtype {dtype.name} (it holds "
                                 f"[{info.min}, {info.max}])")
    with np.errstate(over="ignore"):
        return array.astype(dtype)


def zeros_infer_meta(shape, dtype=None):
    """float64 unless ``dtype`` is given (numpy's default)."""
    return check_output_size("zeros", MetaTensor(_shape(shape, "zeros"),
                                                 np.dtype(dtype or np.float64)))


def ones_infer_meta(shape, dtype=None):
    return check_output_size("ones", MetaTensor(_shape(shape, "ones"),
                                                np.dtype(dtype or np.float64)))


def full_infer_meta(shape, fill_value, dtype=None):
    """The fill value's numpy dtype (an int gives int64) unless ``dtype`` is given."""
    return check_output_size("full", MetaTensor(_shape(shape, "full"),
                                                _fill_dtype(fill_value, dtype, "full")))


def arange_length(start, end, step, op="arange"):
    """numpy's arange length: ``ceil((end - start) / step)``, at least 0."""
    if step == 0:
        raise ValueError(f"{op}: step is 0; expected a nonzero step")
    values = []
    for name, v in (("start", start), ("end", end), ("step", step)):
        if not isinstance(v, (numbers.Real, np.bool_)):
            raise TypeError(f"{op}: {name} must be a real number, got {v!r}")
        # np.True_ - 0 fails; numpy float scalars would warn on an overflowing length
        v = int(v) if isinstance(v, (numbers.Integral, np.bool_)) else float(v)
        if not math.isfinite(v) or abs(v) >= 2 ** 63:
            raise ValueError(f"{op}: {name} is {v!r}; expected a finite number below 2**63 "
                             "in magnitude")
        values.append(v)
    start, end, step = values
    length = (end - start) / step           # Python floats: inf for a step too small to count by
    if length >= 2 ** 63:
        raise ValueError(f"{op}: [{start!r}, {end!r}) by step {step!r} has 2**63 values or "
                         "more; expected a length below 2**63")
    return 0 if length <= 0 else math.ceil(length)


def _arange_kind(v):
    """The dtype numpy's arange promotes argument ``v`` as: a bool or an integer as int64
    (uint64, and a Python int past int64, as float64), a float as float64 and a complex
    as complex128 whatever their precision, longer ones as they are (numpy 2 gives
    float64 for three float32 scalars, and int64 for three int32)."""
    dt = np.asarray(v).dtype
    if dt.kind in "biu":
        return np.dtype(np.float64 if dt == np.uint64 else np.int64)
    if dt.kind in "fc":
        return np.result_type(dt, np.float64)
    return dt


def arange_infer_meta(start, end=None, step=1, dtype=None):
    """[start, end) by step (end None: [0, start)) in numpy's dtype (:func:`_arange_kind`)."""
    if end is None:
        start, end = 0, start
    n = arange_length(start, end, step)
    dt = np.result_type(*map(_arange_kind, (start, end, step))) if dtype is None else dtype
    dt = canonical_dtype(dt, "arange")
    if dt.kind == "b":        # numpy refuses it past length 2; Paddle has no bool arange
        raise TypeError(f"arange: dtype {dt.name} is not supported; expected an integer, "
                        "floating or complex dtype")
    if n:                     # numpy computes in dt: the first, the step and the last value
        last = start + (n - 1) * step
        for name, v in (("start", start), ("step", step), ("the last value", last)):
            check_fill(v, dt, "arange", name)
    return check_output_size("arange", MetaTensor((n,), dt))


def like_infer_meta(x, dtype=None):
    """x's shape and place; x's dtype unless ``dtype`` is given."""
    return x.with_(dtype=x.dtype if dtype is None else dtype)


def full_like_infer_meta(x, fill_value, dtype=None):
    """x's shape and place; x's dtype unless ``dtype`` is given, which must hold ``fill_value``."""
    dt = x.dtype if dtype is None else dtype
    check_fill(fill_value, dt, "full_like")
    return x.with_(dtype=dt)


def cast_infer_meta(x, dtype):
    return x.with_(dtype=dtype)
