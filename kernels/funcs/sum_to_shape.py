"""sum_to_shape: reduce a broadcast gradient back to its input's shape.

The one place that undoes a broadcast: expand's backward uses it, and an
autograd rule for any broadcasting op can too.
"""
import contextlib

import numpy as np

from ..core.xp import xp_of
from ..gpu.backend import device
from ..gpu.sum_axis import SUM_WORK, sum_axis
from . import pool
from .broadcast import coalesce_dims
from .shape import c_strides, prod
from .threads import (can_limit_blas, last_level_cache_bytes, run_parallel,
                      single_threaded_blas, split_index)


def broadcast_axes(shape, target, op="sum_to_shape"):
    """Axes of ``shape`` that broadcasting ``target`` to ``shape`` created or grew.

    Parameters
    ----------
    shape : sequence of int
        The broadcast (larger) shape.
    target : sequence of int
        The original shape: trailing-aligned, each dim equal to shape's or 1.
    op : str

    Returns
    -------
    tuple of int
        The new leading axes and the axes where target has 1 and shape not.

    Raises
    ------
    ValueError
        If ``target`` does not broadcast to ``shape``.

    Examples
    --------
    >>> broadcast_axes((2, 1, 4, 4, 3, 5), (4, 1, 3, 5))
    (0, 1, 3)
    """
    new = len(shape) - len(target)
    if new < 0 or any(t not in (s, 1) for s, t in zip(shape[new:], target)):
        raise ValueError(f"{op}: shape {list(target)} does not broadcast to {list(shape)}")
    return tuple(range(new)) + tuple(new + i for i, t in enumerate(target)
                                     if t == 1 and shape[new + i] != 1)


def sum_to_shape(g, shape):
    """Sum ``g`` over the axes that broadcasting ``shape`` to ``g.shape`` added.

    Parameters
    ----------
    g : array (numpy or cupy)
        A gradient of the broadcast shape.
    shape : sequence of int
        The shape to reduce to (see :func:`broadcast_axes`).

    Returns
    -------
    array of ``shape`` and g's dtype; a view of ``g`` when nothing is summed.

    Notes
    -----
    The dims are coalesced into alternating summed and kept runs, and the
    innermost summed run is reduced first, repeatedly (on cupy, see
    :func:`_sum_gpu`).  On numpy, a summed run at or next to the end is a
    product with a ones vector (BLAS streams
    memory faster than ``np.add.reduce`` does) for float and complex dtypes
    where :func:`_use_blas` measured a win and threadpoolctl can hold BLAS
    to one thread; the rest use ``np.add.reduce``.  Work is split over
    threads along a leading kept run.

    Examples
    --------
    >>> import numpy as np
    >>> sum_to_shape(np.ones((2, 3, 4)), (3, 1)).tolist()
    [[8.0], [8.0], [8.0]]
    """
    shape = tuple(int(s) for s in shape)
    axes = broadcast_axes(g.shape, shape)
    xp = xp_of(g)
    if not axes:
        return g.reshape(shape)
    if xp is not np:
        return _sum_gpu(g, axes).reshape(shape)
    if g.size == 0:
        return np.zeros(shape, g.dtype)
    acc = _ACCUMULATE.get(g.dtype, g.dtype)
    if acc != g.dtype and prod(g.shape[d] for d in axes) <= FEW_TERMS:
        return _sum_once(g, axes).reshape(shape)
    dims, strides, summed = _runs(g, axes)
    v = np.lib.stride_tricks.as_strided(g, dims, strides, writeable=False)
    return _innermost_first(v, summed, lambda v, p: _sum_dim(v, p, acc)) \
        .reshape(shape).astype(g.dtype, copy=False)


def _runs(g, axes):
    """g's dims coalesced into alternating summed and kept runs: (dims, byte strides,
    which dims are summed)."""
    keep = [1 if d in axes else n for d, n in enumerate(g.shape)]
    marks = [0 if d in axes else s for d, s in enumerate(c_strides(keep))]
    dims, (strides, marks) = coalesce_dims(g.shape, g.strides, marks)
    return dims, strides, [m == 0 for m in marks]


def _innermost_first(v, summed, sum_dim):
    """``v`` summed over its ``summed`` dims, the innermost first: ``sum_dim(v, p)`` drops
    dim ``p``."""
    summed = list(summed)
    while any(summed):
        p = max(d for d, s in enumerate(summed) if s)
        v = sum_dim(v, p)
        del summed[p]
    return v


#: Narrow floats accumulate in double: np.add.reduce adds pairwise only along a
#: contiguous last axis, and BLAS's ones-vector product adds in order, so a
#: float32 sum of 2**26 terms would lose ~1e-2 (a float64 one loses ~1e-16 * n)
#: ... unless each output sums at most this many terms: then one reduction in
#: their own dtype (as numpy's ``g.sum(axes)``) loses at most ~FEW_TERMS * eps.
FEW_TERMS = 256
_ACCUMULATE = {np.dtype(np.float16): np.dtype(np.float64),
               np.dtype(np.float32): np.dtype(np.float64),
               np.dtype(np.complex64): np.dtype(np.complex128)}
_BLAS = tuple(np.dtype(t) for t in (np.float64, np.complex128))
#: Below this many bytes, np.add.reduce wins (no BLAS set-up).
MIN_BLAS_BYTES = 1 << 20


#: A kept run after a summed one shorter than this sums through cupy's reduction:
#: sum_axis.cu's threads would read it B values apart, uncoalesced.
MIN_GPU_ROW = 32


def _sum_gpu(g, axes):
    """On cupy: the coalesced summed runs reduced innermost first, each by ``sum_axis.cu``
    where the kept run after it coalesces its loads (float and complex dtypes), else by
    cupy's sum in the CPU's accumulation dtype.  (cupy's own reduction over a middle
    axis ran at a third of torch's speed on an H200.)"""
    xp = xp_of(g)
    acc = _ACCUMULATE.get(g.dtype, g.dtype)
    if g.dtype not in SUM_WORK or g.size == 0:
        return xp.sum(g, axis=axes, dtype=acc).astype(g.dtype, copy=False)
    g = xp.ascontiguousarray(g)
    dims, _, summed = _runs(g, axes)
    return _innermost_first(g.reshape(dims), summed, lambda v, p: _sum_gpu_dim(v, p, acc))


def _sum_gpu_dim(v, p, acc):
    """Contiguous cupy ``v`` summed over dim ``p``, by sum_axis.cu where the dims after
    ``p`` hold at least MIN_GPU_ROW values, else by cupy's sum in ``acc``."""
    shape = v.shape[:p] + v.shape[p + 1:]
    v = v.reshape(prod(v.shape[:p]), v.shape[p], prod(v.shape[p + 1:]))
    out = sum_axis(device(), v) if v.shape[2] >= MIN_GPU_ROW \
        else xp_of(v).sum(v, axis=1, dtype=acc).astype(v.dtype, copy=False)
    return out.reshape(shape)


def _sum_once(g, axes):
    """``g`` summed over ``axes`` in its own dtype, one np.add.reduce per block of a kept
    axis, on threads (kept dims stay, as size 1 where summed)."""
    keep = tuple(1 if d in axes else n for d, n in enumerate(g.shape))
    out = pool.empty(keep, g.dtype)
    kept = [d for d in range(g.ndim) if d not in axes]
    parts = split_index(g.shape, g.nbytes, candidates=kept)
    run_parallel(lambda part: np.add.reduce(g[part], axis=axes, keepdims=True,
                                            out=out[part] if part else out), parts)
    return out


def _use_blas(v, p):
    """Whether a product with ones sums ``v`` over dim ``p`` faster than np.add.reduce.

    Measured here: it wins when ``p`` is the last dim, when many rows are
    summed (>= 32), or when the kept run after ``p`` is short (<= 4 KiB);
    np.add.reduce wins at summing a few long rows.
    """
    return (v.dtype in _BLAS and v.ndim >= 2 and p >= v.ndim - 2
            and v.nbytes >= MIN_BLAS_BYTES
            and (p == v.ndim - 1 or v.shape[p] >= 32 or v.shape[-1] * v.itemsize <= 4096))


def _sum_dim(v, p, acc):
    """A new ``acc`` array: ``v`` summed over dim ``p``, on threads along the dims before it."""
    out = pool.empty(v.shape[:p] + v.shape[p + 1:], acc)
    blas = v.dtype == acc and _use_blas(v, p) and can_limit_blas()
    ones = np.ones(v.shape[p] if blas else 0, v.dtype)

    def run(part):
        src, dst = v[part], out[part] if part else out  # a 0-d out[()] is a scalar
        if not blas:
            np.add.reduce(src, axis=p, dtype=acc, out=dst)
        elif p == v.ndim - 1:
            np.matmul(src, ones, out=dst)
        else:
            np.matmul(ones[None, :], src, out=dst[..., None, :])

    with single_threaded_blas() if blas else contextlib.nullcontext():
        run_parallel(run, split_index(v.shape, v.nbytes, candidates=range(p)))
    return out


#: A long float sum is cut into rows, each row is summed in SIMD registers, and the
#: row sums are summed pairwise (np.add.reduce).  Two ways sum the rows:
#:
#: * Up to FLAT_BLAS_BYTES (data that fits in half the last-level cache), rows of
#:   FLAT_BLAS_COLS times a vector of ones: BLAS's matrix-vector product (OpenBLAS
#:   sgemv/dgemv, its own threads, which spin between calls as torch's OpenMP
#:   threads do).  Each element passes through at most FLAT_BLAS_COLS sequential
#:   additions, however the kernel splits a row into lanes.  On an
#:   AMD EPYC VM (2026-11-28, 2 cores, 32 MiB L3, interleaved medians): float32 1e6
#:   values 39 us against 76 the einsum way, 4e6 137 against 226; past the cache it
#:   loses (30 MiB: 848 against 559 us), so larger sums take the einsum way.
#:   Relative to the sum of magnitudes, zero-mean float32 values at 1e6 (medians of
#:   8 seeds): 7.8e-11 against numpy's pairwise 1.1e-10 (rows of 256: 1.6e-10,
#:   rows of 512: 2.5e-10).
#: * Larger, rows of FLAT_COLS by ``np.einsum('ij->i')`` (numpy's sum-of-products
#:   loop: four vectors added, then added to one vector accumulator, then its lanes
#:   pairwise), the rows spread over our threads.  numpy runs that loop at its
#:   baseline width (4 float32 or 2 float64 lanes on x86-64), so an element passes
#:   through two additions in its group of four vectors and at most 16 (float32) or
#:   32 (float64) into its accumulator lane.  Measured as above at 1e6 and 1e7
#:   float32: 9.5e-11 against numpy's 8.8e-11, 2.3e-8 against 2.6e-8 for uniform
#:   [0, 1) values; rows of 1024 were 2.5x numpy's error (64 additions a lane).
#:   Adding rows element-wise into an accumulator in L1 (np.add.reduce along the
#:   rows) loads and stores the accumulator for every element: 93 us against 76.
#:   Threads come from split_index's own floor (4 MiB a thread).
FLAT_COLS = 256
FLAT_BLAS_COLS = 128
FLAT_BLAS_BYTES = min(16 << 20, last_level_cache_bytes() // 2)
#: Shorter sums are one np.add.reduce (a row-wise call costs more than it saves).
FLAT_MIN = 1 << 16
_ONES = {np.dtype(t): np.ones(FLAT_BLAS_COLS, t) for t in (np.float32, np.float64)}
for _v in _ONES.values():
    _v.setflags(write=False)


def sum_flat(v, dtype):
    """The sum of 1-D numpy ``v`` in ``dtype``, a numpy scalar.

    A contiguous float32 or float64 ``v`` of at least :data:`FLAT_MIN` values,
    summed in its own dtype, is summed by rows (see :data:`FLAT_COLS`);
    anything else is one ``np.add.reduce``.  A total of zero whose first value
    is -0.0 is summed again by numpy, so that its sign is numpy's.
    """
    n = v.shape[0]
    if n < FLAT_MIN or v.dtype != dtype or v.dtype.char not in "fd" \
            or v.strides[0] != v.itemsize:
        return np.add.reduce(v, 0, dtype)
    blas = n * v.itemsize <= FLAT_BLAS_BYTES
    cols = FLAT_BLAS_COLS if blas else FLAT_COLS
    whole = n // cols * cols
    rows = v[:whole].reshape(-1, cols)
    sums = np.empty(rows.shape[0] + 1, dtype)
    sums[-1] = np.add.reduce(v[whole:], 0, dtype)
    if blas:
        np.matmul(rows, _ONES[v.dtype], out=sums[:-1])
    else:
        def run(piece):
            s = piece[0] if piece else slice(0, rows.shape[0])
            np.einsum("ij->i", rows[s], out=sums[s])
        run_parallel(run, split_index((rows.shape[0],), n * v.itemsize))
    total = np.add.reduce(sums)
    if total == 0 and np.signbit(v[0]):     # numpy's sum is -0.0 only if every value is
        return np.add.reduce(v, 0, dtype)
    return total


def sum_leading(v, dtype):
    """``v`` summed over its leading axis in ``dtype``, keeping it (shape ``[1, ...]``).

    On the CPU a 1-D v is :func:`sum_flat`; otherwise each thread adds a block
    of rows (np.add.reduce along the leading axis, element-wise into its
    partial sums) and the blocks' partial sums are added last.
    """
    xp = xp_of(v)
    if xp is np and v.ndim == 1:
        return np.full(1, sum_flat(v, dtype), dtype)
    parts = split_index(v.shape, v.nbytes, candidates=[0]) \
        if xp is np else [()]
    if len(parts) == 1:
        return xp.sum(v, axis=0, dtype=dtype, keepdims=True)
    partial = np.empty((len(parts),) + v.shape[1:], dtype)
    run_parallel(lambda i: np.add.reduce(v[parts[i]], axis=0, dtype=dtype, keepdims=True,
                                         out=partial[i:i + 1]), list(range(len(parts))))
    return partial.sum(axis=0, keepdims=True)


def grad_in_dtype(g, dtype, copy=False):
    """Gradient ``g`` in its input's ``dtype``: the real part for a real input (d/dx of a
    real input is the real part of the complex gradient), without numpy's ComplexWarning;
    ``copy``: always a new array (not a view of ``g``)."""
    if g.dtype.kind == "c" and np.dtype(dtype).kind != "c":
        g = g.real
    return g.astype(dtype, copy=copy)
