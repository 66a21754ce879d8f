"""Arrays laid end to end along axis 0 into one pooled output, copied on threads.

The concatenations of sparse concat (CSR cols and values, COO values) are
plain copies, each input optionally shifted by a constant (a CSR's cols
joined along the col axis).  On numpy every input is cut into pieces
(:func:`kernels.funcs.threads.split_index`) and all pieces of all inputs
are copied, cast and shifted in one pass each, on threads
(:func:`kernels.funcs.threads.run_parallel`) when the whole join is large
enough to thread, else one after the other: no ``astype`` temporaries,
and the output comes from :mod:`kernels.funcs.pool` instead of fresh pages.
"""
import numpy as np

from ..core.xp import xp_of
from . import pool
from .threads import run_parallel, split_index


def join(arrays, dtype, shifts=None):
    """``concatenate([a + s for a, s in zip(arrays, shifts)])`` in ``dtype``.

    Parameters
    ----------
    arrays : list of arrays
        One xp, one shape past axis 0.
    dtype : dtype
        The output's; every input is cast to it before its shift is added.
    shifts : list of int, optional
        A constant added to each input (0: copied as it is).

    Examples
    --------
    >>> join([np.array([1, 2], np.int32), np.array([0])], np.int64, [0, 10]).tolist()
    [1, 2, 10]
    """
    return joins([(arrays, dtype, shifts)])[0]


def joins(groups):
    """:func:`join` of each ``(arrays, dtype, shifts)`` group, all copied in one pass on
    threads (a CSR concat's cols, values and crows: one wake of the threads, not three).

    Examples
    --------
    >>> a, b = joins([([np.array([1]), np.array([2])], np.int64, None),
    ...               ([np.array([0.5]), np.array([1.5])], np.float32, None)])
    >>> a.tolist(), b.dtype.name
    ([1, 2], 'float32')
    """
    xp = xp_of(groups[0][0][0])
    if xp is not np:
        return [xp.concatenate([a.astype(dtype) + s if s else a.astype(dtype, copy=False)
                                for a, s in zip(arrays, shifts or [0] * len(arrays))])
                for arrays, dtype, shifts in groups]
    outs = [pool.empty((sum(a.shape[0] for a in arrays),) + arrays[0].shape[1:], dtype)
            for arrays, dtype, _ in groups]
    threaded = split_index((sum(o.nbytes for o in outs),), sum(o.nbytes for o in outs),
                           candidates=[0]) != [()]
    pieces = []
    for (arrays, _, shifts), out in zip(groups, outs):
        pos = 0
        for a, s in zip(arrays, shifts or [0] * len(arrays)):
            dst = out[pos:pos + a.shape[0]]
            cuts = split_index(a.shape, dst.nbytes, candidates=[0]) if threaded else [()]
            pieces += [(dst[p], a[p], s) for p in cuts]
            pos += a.shape[0]
    if threaded:
        run_parallel(_copy, pieces)
    else:
        for piece in pieces:
            _copy(piece)
    return outs


def _copy(piece):
    dst, src, shift = piece
    if shift:
        np.add(src, dst.dtype.type(shift), out=dst, casting="unsafe")
    else:
        np.copyto(dst, src, casting="unsafe")
