"""``Tensor.__getitem__``: numpy's indexing lowered to basic_index and gather.

A key is split into basic entries (ints, slices, None, ``...``) and at most
one integer array or tensor.  The basic part is one ``basic_index`` call, a
view: ints become one-element windows whose dims it drops, each None a new
dim.  An integer array then ``gather``s along its dim, where numpy keeps the
result dims, unless ints and the array are apart in the key: numpy then puts
the array's dims first (a transpose).

A key of Python ints, None, ``...`` and slices of ints is planned once per
(key, shape): the plan (basic_index's attributes) is remembered, so a loop's
``x[i]`` costs one dict lookup and one dispatch.  Slices are hashable only
from Python 3.12, so the remembered key spells them as tuples.
"""
import operator

import numpy as np

from kernels.core import dispatch
from kernels.core.dispatch import Ints
from kernels.core.dtypes import INDEX, big_python_ints, is_int
from kernels.core.size import MAX_DIMS
from kernels.core.tensor import TensorBase
from kernels.funcs.gather_view import checked_index

from ._ops import api_op, op_spec

OP = "getitem"
INT64_MAX = np.iinfo(np.int64).max


def _indexed(k):
    """An object with ``__index__`` (not a bool, an array of any library, or a known kind
    of key) as its int, as numpy takes it; anything else as it is (an unknown kind is
    then refused by name)."""
    if isinstance(k, (bool, np.bool_, np.generic, slice, list, tuple)) or k is None \
            or k is Ellipsis or is_int(k) or _is_array(k) \
            or not hasattr(type(k), "__index__") or hasattr(k, "__array__") \
            or hasattr(k, "shape"):
        return k
    try:
        return operator.index(k)
    except (TypeError, ValueError, OverflowError):
        return k


def _is_array(k):
    return isinstance(k, (TensorBase, np.ndarray))


def _as_index_array(k):
    """An array index (a list, numpy array or Tensor) as an int32 or int64 numpy array or
    dense Tensor, else None.

    As numpy: any integer dtype indexes (widened to int64) and ``[]`` is an empty
    integer index.  A boolean mask or a non-integer array raises TypeError.
    """
    if isinstance(k, list):
        try:
            array = np.asarray(k)
        except ValueError as exc:
            raise ValueError(f"{OP}: the list index {k!r} is not a rectangular array of "
                             f"integers: {exc}") from None
        if big_python_ints(k, array):           # numpy made it float64 or object
            raise IndexError(f"{OP}: the list index holds a Python int out of the range "
                             f"of int64; expected values below {INT64_MAX + 1}")
        k = array.astype(np.int64) if array.size == 0 else array
    elif not _is_array(k):
        return None
    if k.dtype.kind == "b":
        raise TypeError(f"{OP}: a boolean mask index is not supported, got a bool array of "
                        f"shape {list(k.shape)}; expected an integer array "
                        "(numpy.nonzero(mask) gives one)")
    if k.dtype.kind not in "iu":
        raise TypeError(f"{OP}: an array index must hold integers, got dtype {k.dtype}")
    return k if k.dtype in INDEX else _widened(k)


def _widened(k):
    """An integer index of another dtype as int64 (a uint64 beyond int64 is out of range)."""
    if isinstance(k, TensorBase):
        return api_op("cast")(k, "int64")   # int8, int16, uint8: every value fits
    if k.dtype == np.uint64 and k.size and int(k.max()) > INT64_MAX:
        raise IndexError(f"{OP}: index {int(k.max())} is out of range; expected values "
                         f"below {INT64_MAX + 1}")
    return k.astype(np.int64)


def _entries(key, ndim):
    """The key as a list with ``...`` expanded to full slices and its array index, if
    any, made an int32/int64 array (:func:`_as_index_array`)."""
    key = [_as_index_array(k) if isinstance(k, list) or _is_array(k) else _indexed(k)
           for k in (key if isinstance(key, tuple) else (key,))]
    arrays = sum(map(_is_array, key))
    if arrays > 1:
        raise IndexError(f"{OP}: only one integer array index is supported, got {arrays}")
    for k in key:
        if not (is_int(k) or k is None or k is Ellipsis or isinstance(k, slice)
                or _is_array(k)):
            raise TypeError(f"{OP}: index {k!r} of type {type(k).__name__} is not supported; "
                            "expected ints, slices, None, ... or one integer array")
        if isinstance(k, slice):
            _check_slice(k)
    if sum(k is Ellipsis for k in key) > 1:
        raise IndexError(f"{OP}: an index can only have a single ellipsis ('...')")
    used = sum(k is not None and k is not Ellipsis for k in key)
    if used > ndim:
        raise IndexError(f"{OP}: too many indices: {used} for a tensor of rank {ndim}")
    dims = ndim - sum(map(is_int, key)) + sum(k is None for k in key)
    if dims > MAX_DIMS:             # before the plan, whose work grows with the key
        raise ValueError(f"{OP}: the output would have {dims} dims; a tensor has at most "
                         f"{MAX_DIMS} (numpy's limit)")
    out = []
    for k in key:
        out.extend([slice(None)] * (ndim - used) if k is Ellipsis else [k])
    if not any(k is Ellipsis for k in key):
        out.extend([slice(None)] * (ndim - used))
    return out


def _check_slice(k):
    """TypeError naming getitem for a slice bound that is not an integer or None (numpy's
    rule: ``x[1.0:2]`` raises)."""
    for part in ("start", "stop", "step"):
        v = getattr(k, part)
        if v is None or is_int(v) or (isinstance(v, (bool, np.bool_)) and part == "step"):
            continue
        if isinstance(v, TensorBase) or hasattr(type(v), "__index__"):
            try:
                v.__index__()
                continue
            except (TypeError, ValueError):
                pass
        got = f"a {v.dtype.name} tensor of shape {v.shape}" if isinstance(v, TensorBase) \
            else f"{v!r} of type {type(v).__name__}"
        raise TypeError(f"{OP}: a slice's {part} must be an integer or None (as in numpy), "
                        f"got {got}")


def _plan(entries, shape):
    """(basic_index's window lists, int dims to drop, None dims to add, the array's dim
    in the basic result and in x (None, None without an array))."""
    axes, starts, ends, strides = [], [], [], []
    drop, new, pos, at, dim, out_dim = [], [], None, None, 0, 0
    for k in entries:
        if k is None:
            new.append(out_dim)
            out_dim += 1
            continue
        n = shape[dim]
        if is_int(k):
            if not -n <= k < n:
                raise IndexError(f"{OP}: index {k} is out of bounds for axis {dim} with size {n}")
            k = int(k) % n
            axes.append(dim), starts.append(k), ends.append(k + 1), strides.append(1)
            drop.append(dim)
        else:
            if isinstance(k, slice) and k != slice(None):
                step = 1 if k.step is None else operator.index(k.step)
                if step == 0:
                    raise ValueError(f"{OP}: slice step cannot be zero")
                start, stop, _ = k.indices(n)
                axes.append(dim), strides.append(step)   # -1 after indices(): before 0
                starts.append(start if start >= 0 else -n - 1)
                ends.append(stop if stop >= 0 else -n - 1)
            elif not isinstance(k, slice):
                pos, at = out_dim, dim
            out_dim += 1
        dim += 1
    return (axes, starts, ends, strides), drop, new, (pos, at)


def _advanced_apart(entries):
    """numpy puts the array's dims first when ints and the array are not adjacent."""
    marks = [i for i, k in enumerate(entries) if is_int(k) or _is_array(k)]
    return marks[-1] - marks[0] + 1 != len(marks)


#: (key with slices as tuples, shape) -> basic_index's attributes, or None for ``x`` itself.
_PLANS = {}
_PLANS_SIZE = 1024
_MISSING = object()


def _plain(k):
    """A basic key entry in a hashable form, or _MISSING if it is not a plain one."""
    t = type(k)
    if t is int or k is None or k is Ellipsis:
        return k
    if t is slice and all(type(v) is int or v is None for v in (k.start, k.stop, k.step)):
        return (k.start, k.stop, k.step)
    return _MISSING


def _remembered(key, shape):
    """The key of :data:`_PLANS` for a plain basic key, else None."""
    key = key if type(key) is tuple else (key,)
    plain = tuple(map(_plain, key))
    return None if _MISSING in plain else (plain, shape)


def getitem(x, key):
    """``x[key]`` (see the module docstring); a global x's key is planned afresh
    on its logical shape, and the ops run under their SBP rules."""
    if x.is_global:
        return _lowered(x, key, None)
    memo = _remembered(key, x._array.shape)
    attrs = _PLANS.get(memo, _MISSING)
    if attrs is _MISSING:
        return _lowered(x, key, memo)
    return _basic(x, attrs)


def _basic(x, attrs):
    """basic_index of x with a plan's attributes (None: x itself), run straight."""
    return x if attrs is None else dispatch.run(op_spec("basic_index"), [x], attrs)


def _lowered(x, key, memo):
    """``x[key]`` planned from the start; a plain key's plan is remembered under ``memo``."""
    entries = _entries(key, x.ndim)
    window, drop, new, (pos, at) = _plan(entries, x.shape)
    attrs = (*map(Ints, window), Ints(drop), Ints(new)) if window[0] or new else None
    if memo is not None:
        if len(_PLANS) >= _PLANS_SIZE:
            _PLANS.clear()
        _PLANS[memo] = attrs
    out = _basic(x, attrs)
    if pos is None:
        return out
    index = next(k for k in entries if _is_array(k))
    out = _gathered(out, index, pos, x.shape[at], at)
    if pos and _advanced_apart(entries):
        k = np.ndim(index)
        order = list(range(pos, pos + k)) + list(range(pos)) + list(range(pos + k, out.ndim))
        out = api_op("transpose")(out, order)
    return out


def _gathered(x, index, axis, size, at):
    """gather of the basic result along ``axis``; an index out of range raises
    IndexError naming getitem and x's dim ``at`` of ``size``, as the caller wrote it."""
    try:
        return api_op("gather")(x, index, axis=axis)
    except IndexError:
        checked_index(index.numpy() if isinstance(index, TensorBase) else index, size, at, OP)
        raise
