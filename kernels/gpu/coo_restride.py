"""Launcher of ``coo_restride.cu``: COO coordinates after a reshape."""
import math

import numpy as np

from .launch import INT32_MAX, divisors, i64, index_suffix, launch

_RESTRIDE_PAIRS = {("i32", "i32"), ("i32", "i64"), ("i64", "i64")}


def _c_strides(shape):
    """C-order strides, in elements, of ``shape``."""
    strides = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    return strides


def _shared_dims(old, new):
    """How many leading and then trailing dims ``old`` and ``new`` share."""
    lead = 0
    while lead < min(len(old), len(new)) and old[lead] == new[lead]:
        lead += 1
    trail = 0
    while (trail < min(len(old), len(new)) - lead
           and old[-1 - trail] == new[-1 - trail]):
        trail += 1
    return lead, trail


def coo_restride(backend, indices, old_shape, new_shape, order="C",
                 index_dtype=None, grid=None, block=None):
    """New COO coordinates of every nonzero after a reshape.

    Parameters
    ----------
    backend : CupyBackend or an emulator with the same interface
    indices : xp array, int32 or int64, shape ``[len(old_shape), nnz]``
    old_shape, new_shape : sequence of int
        Concrete shapes with the same number of elements.
    order : {'C', 'F'}
        Index order of the reshape; 'F' reverses the dims on the host.
    index_dtype : dtype, optional
        Output dtype; by default the input's, or int64 when a new dim is
        ``>= 2**31``. int32 -> int64 is allowed, int64 -> int32 is not.

    Returns
    -------
    xp array, shape ``[len(new_shape), nnz]``
        Dims shared at the front and back of both shapes are copied; the
        rest go through a 64-bit flat offset, so int32 coordinates of a huge
        tensor do not overflow.
    """
    old = tuple(int(s) for s in old_shape)
    new = tuple(int(s) for s in new_shape)
    if order not in ("C", "F"):
        raise ValueError(f"coo_restride: order {order!r} is not 'C' or 'F'")
    if math.prod(old) != math.prod(new):
        raise ValueError(f"coo_restride: shape {list(new)} does not hold "
                         f"the {math.prod(old)} elements of {list(old)}")
    if indices.ndim != 2 or indices.shape[0] != len(old):
        raise ValueError(f"coo_restride: indices shape {list(indices.shape)} "
                         f"is not [{len(old)}, nnz]")
    in_suffix = index_suffix("coo_restride", "indices", indices.dtype)
    if index_dtype is None:
        index_dtype = np.int64 if any(s > INT32_MAX for s in new) else indices.dtype
    out_suffix = index_suffix("coo_restride", "index_dtype", index_dtype)
    if (in_suffix, out_suffix) not in _RESTRIDE_PAIRS:
        raise ValueError(f"coo_restride: index_dtype {np.dtype(index_dtype)} "
                         f"cannot hold {indices.dtype} coordinates")
    if order == "F":
        indices, old, new = indices[::-1], old[::-1], new[::-1]
    xp = backend.xp
    indices = xp.ascontiguousarray(indices)
    nnz = indices.shape[1]
    lead, trail = _shared_dims(old, new)
    out = xp.empty((len(new), nnz), dtype=index_dtype)
    args = (indices, out, np.int64(nnz), np.int32(len(old)), np.int32(len(new)),
            np.int32(lead), np.int32(trail),
            i64(backend, _c_strides(old[lead:len(old) - trail])),
            divisors(backend, new[lead + 1:len(new) - trail]))   # the first needs none
    launch(backend, "coo_restride.cu", f"coo_restride_{in_suffix}_{out_suffix}",
            nnz, args, grid, block)
    return xp.ascontiguousarray(out[::-1]) if order == "F" else out
