"""Shape arithmetic: element counts, C strides, axis normalisation."""
import math

from ..core.size import INT64_LIMIT  # noqa: F401  (shape arithmetic checks against it)


def prod(shape):
    """The product of ``shape`` as a Python int (1 for an empty shape)."""
    return math.prod(map(int, shape))


def c_strides(shape):
    """Element strides of a C-contiguous array of ``shape``."""
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= max(int(s), 1)
    return tuple(reversed(strides))


def normalize_axis(axis, ndim, op, arg="axis"):
    """Map ``axis`` in [-ndim, ndim) to [0, ndim) or raise ValueError naming the op."""
    if not -ndim <= axis < ndim or ndim == 0:
        expected = f"a value in [{-ndim}, {ndim})" if ndim else "none (it has no axes)"
        raise ValueError(f"{op}: {arg} {axis} is out of range for a tensor of rank {ndim}; "
                         f"expected {expected}")
    return axis % ndim


def check_numel(shape, op):
    """Raise ValueError if ``shape`` has more than 2**63 - 1 elements."""
    n = prod(shape)
    if n >= INT64_LIMIT:
        raise ValueError(f"{op}: shape {list(shape)} has {n} elements, more than "
                         f"2**63 - 1 can index")
    return n
