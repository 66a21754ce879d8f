"""Flat-index restriding: the coordinates of stored entries after a reshape.

A stored entry at coordinates ``idx`` of an array of ``old_shape`` sits at the
flat offset ``sum(idx[d] * old_stride[d])``; after the reshape it sits at the
coordinates that the same offset has in ``new_shape`` (a divmod chain by the
new dims).  Two things make this fast and safe:

* **Dimension grouping.**  The reshape splits into independent groups at every
  prefix where old and new shapes have the same element count (the
  outer/processed/inner split of OneFlow's gather-primitive article,
  generalised).  A group whose single old dim equals its single new dim --
  for example the trailing 1000 of (1000, 1000, 1000) -> (1000000, 1000) --
  is copied, a group of several old
  dims and one new dim is a multiply-add with no division, and only the dims
  that really change are divided.  Size-1 dims belong to no group: old ones
  are ignored, new ones get coordinate 0.
* **Index dtype safety.**  The output keeps the input's index dtype unless a
  new dim is 2**31 or more; this is decided from the shapes, never from the
  data.  A group's flat offset is computed in int64, except where the output
  is int32 and the group's element count proves that no offset exceeds it:
  there int32 arithmetic is exact, and about three times as fast.

The code is xp-generic: numpy and cupy use their ufuncs' ``out=``, so beyond
the output the kernel allocates at most one scratch row (for groups that
divide); a namespace without ``out=`` (array-api-strict) takes the same steps
through temporaries.  With numpy the entries are split over threads
(:mod:`kernels.funcs.threads`; numpy's ufuncs release the GIL) and each thread
works in blocks of :data:`BLOCK` entries, so the several passes of a group
reread cached data and the scratch row is one block long.
"""
import functools

import numpy as np

from ..core.xp import xp_of
from .shape import c_strides, prod
from .threads import run_parallel, split_index

INT32_MAX = 2 ** 31 - 1
_INT64 = np.dtype(np.int64)
#: Entries per step of the numpy path: a block's rows stay in cache between passes.
BLOCK = 1 << 17
#: Up to this many entries (on numpy) one ravel/unravel pair is cheaper than grouping.
SMALL_NNZ = 1 << 10
#: Flat offsets up to this bound fit numpy's int64 ravel_multi_index.
INT64_SAFE = 2 ** 62


def namespace(array):
    """The array namespace of ``array``: numpy, cupy or array-api-strict."""
    get = getattr(array, "__array_namespace__", None)
    return get() if get is not None else xp_of(array)


def index_dtype(shape, dtype, extent=0, xp=np):
    """The index dtype for coordinates in ``shape``: ``dtype`` unless too small.

    Parameters
    ----------
    shape : sequence of int
        The shape the coordinates index.
    dtype : numpy dtype
        The current index dtype (int32 or int64).
    extent : int
        Another count the indices must hold (a CSR's nnz for its crows).
    xp : module
        The array namespace whose int64 to return.

    Returns
    -------
    dtype
        int64 when a dim (or ``extent``) exceeds int32; int32 when a narrower
        ``dtype`` (int8, int16, uint8: what ``cast`` allows) cannot hold it; else
        ``dtype``.

    Examples
    --------
    >>> np.dtype(index_dtype((2**31, 4), np.int32)).name
    'int64'
    >>> np.dtype(index_dtype((5, 4), np.int32)).name
    'int32'
    """
    if getattr(dtype, "itemsize", 0) == 8:       # int64 holds every extent
        return dtype
    need = max([int(extent)] + [int(s) for s in shape])
    if need > INT32_MAX:
        return xp.int64
    if need > _int_max(xp, dtype):             # int8/int16/uint8 (from cast): widen
        return xp.int32
    return dtype


@functools.lru_cache(maxsize=64)
def _int_max(xp, dtype):
    return xp.iinfo(dtype).max


@functools.lru_cache(maxsize=256)
def _few_plan(old_shape, new_shape, order):
    """How :func:`restride` maps a few entries from ``old_shape`` to ``new_shape`` (tuples),
    or None when a flat offset may not fit int64: (the old shape's element strides in
    ``order`` as a read-only ``(1, ndim)`` int64 row, whether the new coordinates need
    int64)."""
    if prod(old_shape) > INT64_SAFE:
        return None
    strides = c_strides(old_shape) if order == "C" else c_strides(old_shape[::-1])[::-1]
    row = np.array([strides], np.int64)
    row.setflags(write=False)
    return row, max(new_shape, default=0) > INT32_MAX


def _restride_few(rows, strides, new_shape, order, dtype):
    """Few entries: the flat offsets as one product of the old strides' row with the index
    matrix, and the new coordinates by ``np.unravel_index`` (two compiled calls beat the
    dim grouping and threads of :func:`restride`'s general path on a few entries); a new
    matrix in ``dtype``."""
    flat = strides.dot(rows)                       # (1, nnz) int64, a new array
    if len(new_shape) == 1:
        return flat.astype(dtype, copy=False)
    return np.array(np.unravel_index(flat[0], new_shape, order), dtype=dtype)


def group_dims(old_shape, new_shape):
    """Split a reshape into independent groups of dims.

    Parameters
    ----------
    old_shape, new_shape : sequence of int
        Shapes with the same, nonzero, element count.

    Returns
    -------
    list of (tuple of int, tuple of int)
        For each group, the old axes and the new axes it maps between.  The
        products of their sizes are equal; size-1 axes appear in no group.

    Examples
    --------
    >>> group_dims((1000, 1000, 1000), (1000000, 1000))
    [((0, 1), (0,)), ((2,), (1,))]
    >>> group_dims((6, 4, 1, 10), (24, 2, 5))
    [((0, 1), (0,)), ((3,), (1, 2))]
    """
    old = [i for i, s in enumerate(old_shape) if s != 1]
    new = [j for j, s in enumerate(new_shape) if s != 1]
    groups, i, j = [], 0, 0
    while i < len(old):
        gi, gj = [old[i]], [new[j]]
        a, b = old_shape[old[i]], new_shape[new[j]]
        i, j = i + 1, j + 1
        while a != b:
            if a < b:
                gi.append(old[i])
                a *= old_shape[old[i]]
                i += 1
            else:
                gj.append(new[j])
                b *= new_shape[new[j]]
                j += 1
        groups.append((tuple(gi), tuple(gj)))
    return groups


def restride(rows, old_shape, new_shape, order="C", dtype=None, out=None):
    """New coordinates of stored entries after reshaping ``old_shape`` to ``new_shape``.

    Parameters
    ----------
    rows : 2-D array or sequence of 1-D arrays
        One integer row of length nnz per old dim (a COO index matrix, or
        its rows); never written to.
    old_shape, new_shape : sequence of int
        Shapes with the same element count.
    order : {'C', 'F'}
        Read and write coordinates in C (row-major) or Fortran order.
    dtype : dtype, optional
        Output index dtype; default: :func:`index_dtype` of ``new_shape``
        and the rows' dtype.
    out : sequence of 1-D arrays, optional
        One destination per new dim (for example separate arrays, so that a
        caller can keep some and drop others); ``dtype`` is then theirs.

    Returns
    -------
    array or sequence of arrays
        The new index matrix, shape ``(len(new_shape), nnz)``, in the rows'
        namespace; or ``out``, filled.

    Examples
    --------
    >>> rows = [np.array([0, 1, 1]), np.array([2, 0, 3])]
    >>> restride(rows, (2, 4), (4, 2)).tolist()
    [[1, 2, 3], [0, 0, 1]]
    >>> restride(rows, (2, 4), (4, 2), order="F").tolist()
    [[0, 1, 3], [1, 0, 1]]
    """
    matrix = type(rows) is np.ndarray
    if matrix or type(rows[0]) is np.ndarray:
        nnz = rows.shape[1] if matrix else rows[0].shape[0]
        plan = _few_plan(tuple(old_shape), tuple(new_shape), order) if 0 < nnz <= SMALL_NNZ else None
        if plan is not None:
            if out is not None:
                dtype = out[0].dtype
            elif dtype is None:
                dtype = _INT64 if plan[1] else (rows if matrix else rows[0]).dtype
                if dtype.itemsize < 4:                  # int8/int16/uint8 (from cast)
                    dtype = index_dtype(new_shape, dtype)
            few = _restride_few(rows, plan[0], new_shape, order, dtype)
            if out is None:
                return few
            for dst, coord in zip(out, few):
                dst[...] = coord
            return out
    nnz = rows[0].shape[0]
    xp = namespace(rows[0])
    if out is None:
        dtype = index_dtype(new_shape, rows[0].dtype, xp=xp) if dtype is None else dtype
        out = xp.empty((len(new_shape), nnz), dtype=dtype)
        dsts = [out[j, ...] for j in range(len(new_shape))]
    else:
        dsts = list(out)
    rows, old_shape, new_shape = list(rows), tuple(old_shape), tuple(new_shape)
    if order == "F":
        rows, old_shape, new_shape, dsts = rows[::-1], old_shape[::-1], new_shape[::-1], dsts[::-1]
    if nnz == 0 or prod(old_shape) == 0:
        return out
    groups = group_dims(old_shape, new_shape)

    def fill(part):
        for j, size in enumerate(new_shape):
            if size == 1:
                dsts[j][part] = 0
        for gi, gj in groups:
            _group(xp, [rows[i][part] for i in gi], [old_shape[i] for i in gi],
                   [dsts[j][part] for j in gj], [new_shape[j] for j in gj])

    if xp is not np:
        fill(...)
        return out
    # numpy: threads (its ufuncs release the GIL), each walking its share in
    # cache-sized blocks so that a group's passes reread cached data
    pieces = split_index((nnz,), nnz * 8 * (len(rows) + len(dsts)))
    run_parallel(lambda piece: [fill(b) for b in _blocks(piece, nnz)], pieces)
    return out


def _blocks(piece, nnz):
    """Consecutive slices of at most :data:`BLOCK` entries covering ``piece``."""
    span = piece[0] if piece else slice(0, nnz)
    return [slice(lo, min(lo + BLOCK, span.stop)) for lo in range(span.start, span.stop, BLOCK)]


def _group(xp, srcs, src_sizes, dsts, dst_sizes):
    """Write one group's new coordinates into ``dsts`` (rows of the output)."""
    if len(srcs) == 1 and len(dsts) == 1:
        _copy(xp, srcs[0], dsts[0])
        return
    if prod(src_sizes) - 1 <= xp.iinfo(dsts[0].dtype).max:
        _divide(xp, srcs, src_sizes, dsts, dst_sizes)
        return
    scratch = [xp.empty(d.shape, dtype=xp.int64) for d in dsts]
    _divide(xp, srcs, src_sizes, scratch, dst_sizes)
    for s, d in zip(scratch, dsts):
        _copy(xp, s, d)


def _divide(xp, srcs, src_sizes, dsts, dst_sizes):
    """Horner's rule for the flat offset, then peel new coordinates from the back.

    Everything is computed in the dtype of ``dsts``, which holds every offset
    of the group.  The offset alternates between ``dsts[0]`` and one scratch
    row so that its last value, the first new coordinate, lands in ``dsts[0]``.
    """
    work = dsts[0].dtype
    writes = (len(srcs) > 1) + len(dsts) - 1
    bufs = [dsts[0], xp.empty(dsts[0].shape, dtype=work) if len(dsts) > 1 else None]
    flat = srcs[0]
    if len(srcs) > 1:
        flat = bufs[(writes - 1) % 2]
        _into(xp, "multiply", srcs[0], src_sizes[1], flat)
        _into(xp, "add", flat, srcs[1], flat)
        for src, size in zip(srcs[2:], src_sizes[2:]):
            _into(xp, "multiply", flat, size, flat)
            _into(xp, "add", flat, src, flat)
        writes -= 1
    for dst, size in zip(dsts[:0:-1], dst_sizes[:0:-1]):
        quot = bufs[(writes - 1) % 2]
        _divmod(xp, flat, size, quot, dst)
        flat, writes = quot, writes - 1


def _divmod(xp, flat, size, quot, rem):
    """``quot = flat // size`` and ``rem = flat % size`` for non-negative ``flat``.

    A power of two is a shift and a mask; any other size is one division
    (libdivide-fast in numpy) and a multiply-subtract, cheaper than ``%``.
    """
    if size & (size - 1) == 0:
        _into(xp, "bitwise_and", flat, size - 1, rem)
        shift = "bitwise_right_shift" if hasattr(xp, "bitwise_right_shift") else "right_shift"
        _into(xp, shift, flat, size.bit_length() - 1, quot)
        return
    _into(xp, "floor_divide", flat, size, quot)
    _into(xp, "multiply", quot, size, rem)
    _into(xp, "subtract", flat, rem, rem)


def _takes_out(xp):
    """numpy and cupy ufuncs write into ``out=``; the bare array API cannot."""
    return hasattr(xp, "ufunc")


def _into(xp, name, a, b, out):
    """``out[...] = xp.<name>(a, b)`` computed in out's dtype, in place where possible."""
    if _takes_out(xp):
        getattr(xp, name)(a, b, out=out, dtype=out.dtype)
        return
    a = xp.astype(a, out.dtype)
    b = b if isinstance(b, int) else xp.astype(b, out.dtype)
    out[...] = getattr(xp, name)(a, b)


def _copy(xp, src, dst):
    """``dst[...] = src`` with a cast to dst's dtype, without a temporary where possible."""
    if _takes_out(xp):
        xp.copyto(dst, src, casting="same_kind")
    else:
        dst[...] = src if src.dtype == dst.dtype else xp.astype(src, dst.dtype)
