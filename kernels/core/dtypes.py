"""The dtypes phisparse supports, and their families."""
import numbers

import numpy as np

BOOL = (np.dtype(np.bool_),)
INTS = tuple(np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64, np.uint8))
FLOATS = tuple(np.dtype(t) for t in (np.float16, np.float32, np.float64))
COMPLEX = tuple(np.dtype(t) for t in (np.complex64, np.complex128))
ALL = BOOL + INTS + FLOATS + COMPLEX
INDEX = (np.dtype(np.int32), np.dtype(np.int64))


def canonical_dtype(dtype, op="to_tensor", arg="dtype"):
    """Return ``dtype`` as a supported native-order ``np.dtype`` or raise TypeError.

    A byte-swapped dtype ('>f4' on a little-endian machine) maps to its
    native twin: data in it is converted, not rejected.
    """
    if dtype is None:                     # np.dtype(None) is float64: no default here
        raise TypeError(f"{op}: {arg} None is not a dtype; expected one of "
                        f"{[d.name for d in ALL]}")
    try:
        dt = np.dtype(dtype)
    except TypeError as exc:
        raise TypeError(f"{op}: {arg} {dtype!r} is not a dtype; expected one of "
                        f"{[d.name for d in ALL]}") from exc
    if not dt.isnative:
        dt = dt.newbyteorder("=")
    if dt not in ALL:
        raise TypeError(f"{op}: {arg} {dt.name} is not supported; expected one of "
                        f"{[d.name for d in ALL]}")
    return dt


def additive_identity(dtype):
    """The value ``z`` of ``dtype`` with ``x + z == x`` bit for bit for every x: -0.0 for
    floating dtypes and -0.0-0.0j for complex ones (IEEE 754: -0.0 + -0.0 is -0.0,
    where +0.0 would turn it into +0.0), else 0.  A partial_sum's zero addends are
    this value."""
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        return dtype.type(complex(-0.0, -0.0))     # both components
    return dtype.type(-0.0) if dtype.kind == "f" else dtype.type(0)


def is_differentiable(dtype):
    """Only floating and complex tensors carry gradients."""
    return np.dtype(dtype) in FLOATS + COMPLEX


def is_int(v):
    """A Python or numpy integer scalar: not a bool, nor numpy's timedelta64 (both count as
    integers to ``numbers.Integral``)."""
    return isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_, np.timedelta64))


def big_python_ints(data, array):
    """Whether ``data`` (a scalar, or nested lists or tuples) holds only Python ints, some
    beyond int64, which made numpy's ``array`` of them uint64, object or (``[2**63, 1]``)
    float64: what to_tensor, the sparse constructors' indices and an index list report
    as out of range rather than as a dtype."""
    if not isinstance(data, (int, list, tuple)) \
            or array.dtype not in (np.uint64, np.float64, object):
        return False
    if array.dtype != object and not (array.size and np.abs(array).max() >= 2.0 ** 63):
        return False                     # (a float list is not walked in Python)
    leaves = list(_leaves(data))
    return all(isinstance(v, int) for v in leaves) \
        and any(not -2 ** 63 <= v < 2 ** 63 for v in leaves)


def _leaves(data):
    """The scalars of ``data``, a scalar or nested lists and tuples."""
    if not isinstance(data, (list, tuple)):
        yield data
        return
    for item in data:
        yield from _leaves(item)
