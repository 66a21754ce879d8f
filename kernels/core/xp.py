"""numpy/cupy helpers: one kernel body serves both through an ``xp`` namespace."""
import numpy as np

from .meta import PLACES


def xp_of(array):
    """The array namespace (numpy or cupy) that owns ``array``."""
    if type(array) is np.ndarray:
        return np
    mod = type(array).__module__
    if mod.startswith("cupy"):
        import cupy
        return cupy
    return np


def place_of(array):
    """'gpu' for a cupy array, else 'cpu'."""
    return "gpu" if type(array).__module__.startswith("cupy") else "cpu"


def gpu_ready():
    """(True, '') if cupy is importable and sees a CUDA device, else (False, reason)."""
    try:
        import cupy
    except ImportError:
        return False, "cupy is not installed (pip install 'phisparse[gpu]')"
    try:
        ok = bool(cupy.is_available())
    except Exception as exc:  # a broken driver must not crash the caller
        return False, f"cupy cannot reach CUDA: {exc}"
    return (True, "") if ok else (False, "cupy is installed but no CUDA GPU is available")


def check_place(place, op):
    """Raise RuntimeError naming what is missing if ``place`` is 'gpu' and no GPU is usable."""
    if place == "gpu":
        ok, why = gpu_ready()
        if not ok:
            raise RuntimeError(f"{op}: place 'gpu' is unavailable: {why}")


def canonical_place(place, op):
    """'cpu', 'gpu' or None for a ``place`` argument; 'cuda' is 'gpu', and ':0' names device 0.

    phisparse uses one GPU (device 0); another device index raises ValueError.
    """
    if place is None:
        return None
    if not isinstance(place, str):
        raise TypeError(f"{op}: place must be a str ('cpu', 'gpu', 'gpu:0', 'cuda', "
                        f"'cuda:0') or None, got {type(place).__name__}")
    name, _, index = place.partition(":")
    name = "gpu" if name == "cuda" else name
    if name not in PLACES or (index and (name == "cpu" or index != "0")):
        raise ValueError(f"{op}: place {place!r} is not one of 'cpu', 'gpu', 'gpu:0', "
                         "'cuda', 'cuda:0'")
    return name


def to_place(array, place, op="to_tensor"):
    """Move ``array`` to ``place`` ('cpu' or 'gpu'), copying only when it must move."""
    if place == place_of(array):
        return array
    if place == "cpu":
        return array.get()
    check_place(place, op)
    import cupy
    return cupy.asarray(array)


def to_numpy(array):
    """A host numpy copy of ``array``."""
    if place_of(array) == "gpu":
        return array.get()
    return np.array(array, copy=True)


#: The dtypes cupy's ``add.at`` (an atomicAdd per element) takes and phisparse lets it
#: sum in: float16 sums in float32 instead (rounded once, as numpy's float16 ufuncs do).
_CUPY_ADD_AT = frozenset(np.dtype(c) for c in "iqIQfd")
#: The low 63 bits: XOR-ing a negative float64's bits with it orders them as int64s.
_LOW63 = np.int64(2**63 - 1)


def add_at(out, index, values):
    """``np.add.at(out, index, values)`` (repeated indices summed) for numpy and cupy arrays.

    cupy's ``add.at`` takes only 32- and 64-bit integers and floats (and
    float16, summed in half precision): a complex ``out`` adds its real and
    imaginary parts as two scatters, float16 sums in float32, and a narrower
    integer or bool ``out`` adds in int64 and casts back, which wraps as numpy's
    sum does (modulo 2**bits) and is numpy's logical or for bool.

    Examples
    --------
    >>> out = np.zeros(3, np.int8)
    >>> add_at(out, np.array([0, 0, 2]), np.array([100, 100, 1], np.int8))
    >>> out.tolist()
    [-56, 0, 1]
    """
    xp = xp_of(out)
    if xp is np or out.dtype in _CUPY_ADD_AT:
        xp.add.at(out, index, values)
    elif out.dtype.kind == "c":
        values = xp.asarray(values)
        add_at(out.real, index, values.real)
        add_at(out.imag, index, values.imag)
    else:
        wide = out.astype(xp.float32 if out.dtype.kind == "f" else xp.int64)
        xp.add.at(wide, index, xp.asarray(values).astype(wide.dtype))
        out[...] = wide.astype(out.dtype)


def segment_max(values, starts):
    """``np.maximum.reduceat(values, starts, axis=0)`` for sorted non-empty segments
    (``starts[0] == 0``) of real values, numpy or cupy; a segment holding NaN is NaN.

    cupy has no ``maximum.reduceat``, and its float64 ``maximum.at`` rounds
    through float32 (seen on cupy 14.2): each value's float64 bits become an
    int64 of the same order (negative ones XOR-ed with the low 63 bits), an
    int64 ``maximum.at`` scatters them into their segment's slot, and the
    winners turn back into floats, exactly; numpy's NaN propagation is put back.

    Examples
    --------
    >>> segment_max(np.array([1.0, 5.0, 2.0, np.nan, 0.0]), np.array([0, 2, 3])).tolist()
    [5.0, 2.0, nan]
    """
    xp = xp_of(values)
    if xp is np:
        return np.maximum.reduceat(values, starts, axis=0)
    seg = xp.zeros(values.shape[0], xp.int64)
    seg[starts[1:]] = 1
    wide = values.astype(xp.float64)
    top = xp.full((starts.shape[0],) + tuple(values.shape[1:]), np.iinfo(np.int64).min)
    xp.maximum.at(top, xp.cumsum(seg), _ordered_bits(xp, wide))
    best = _ordered_bits(xp, top).view(xp.float64)
    has_nan = xp.add.reduceat(xp.isnan(wide).astype(xp.int64), starts, axis=0) > 0
    return xp.where(has_nan, xp.nan, best).astype(values.dtype)


def _ordered_bits(xp, a):
    """float64 ``a``'s bits as int64s in the floats' order, or back (it is its own inverse)."""
    bits = a.view(xp.int64)
    return xp.where(bits < 0, bits ^ _LOW63, bits)
