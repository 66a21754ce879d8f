"""The union of two canonical CSR patterns, with where each entry comes from.

scipy.sparse's compiled ``csr_plus_csr`` (sparsetools) walks two CSR
matrices whose rows are sorted and free of duplicates in one pass per row
and writes their union: the classic sparse addition (Saad, *Iterative
Methods for Sparse Linear Systems*, 2nd ed., section 3.4).  Given *position
codes* instead of values, ``i + 1`` for a's i-th entry and ``(j + 1) << 32``
for b's j-th, the sums it writes are never zero (scipy drops zero sums) and
each decodes to the positions of its sources in a and in b.  So
one compiled pass gives the union pattern and its provenance, explicit zeros
of the operands kept.  The walk releases the GIL, so blocks of rows, cut to
equal shares of entries, run on threads (:func:`kernels.funcs.threads.run_parallel`).

This serves the CPU side of sparse-with-sparse add, subtract, multiply and
divide of same-shape operands and their gradients (:mod:`kernels.sparse.binary`);
other operands take the sort-based merge there.
"""
from typing import NamedTuple

import numpy as np

from ..funcs.threads import MIN_BYTES_PER_PIECE, MIN_BYTES_PER_THREAD, PIECES_PER_THREAD
from ..funcs.threads import num_threads, run_parallel

try:
    from scipy.sparse import _sparsetools
    _WALK = (_sparsetools.csr_plus_csr, _sparsetools.csr_has_canonical_format)
except (ImportError, AttributeError):       # a scipy without them: the numpy merge serves
    _WALK = None

_LOW = np.int64(0xFFFFFFFF)
#: Position codes hold b's positions in the high 31 bits.
MAX_ENTRIES = (1 << 31) - 1
#: Bytes the walk touches per entry of an operand (index, code, written twice).
_BYTES_PER_ENTRY = 24


class Merged(NamedTuple):
    """The union's row pointers and columns, and each entry's position plus one in a and
    in b (intp, numpy's index type; 0: none)."""

    indptr: np.ndarray
    cols: np.ndarray
    ca: np.ndarray
    cb: np.ndarray


def usable(na, nb, n_rows):
    """True if :func:`merge` can take operands of these sizes (CPU, scipy's walk present)."""
    return (_WALK is not None and na <= MAX_ENTRIES and nb <= MAX_ENTRIES
            and n_rows <= 4 * (na + nb) + 1024)


def _cuts(ap, bp):
    """Row boundaries of blocks holding about equal shares of both operands' entries."""
    total = int(ap[-1]) + int(bp[-1])
    nbytes = total * _BYTES_PER_ENTRY
    threads = min(num_threads(), nbytes // MIN_BYTES_PER_THREAD)
    parts = 1 if threads < 2 else max(threads, min(PIECES_PER_THREAD * threads,
                                                   nbytes // MIN_BYTES_PER_PIECE))
    if parts == 1:
        return [0, ap.shape[0] - 1]
    ab = ap.astype(np.int64) + bp
    cuts = np.searchsorted(ab, np.linspace(0, total, parts + 1)[1:-1])
    return [0, *sorted(set(cuts.tolist()) - {0, ap.shape[0] - 1}), ap.shape[0] - 1]


def _walk(ap, aj, bp, bj, ncols, lo, hi):
    """The union of rows [lo, hi): (local indptr, cols, codes), or None if not canonical."""
    plus, canonical = _WALK
    a0, a1, b0, b1 = int(ap[lo]), int(ap[hi]), int(bp[lo]), int(bp[hi])
    la, lb = ap[lo:hi + 1] - ap[lo], bp[lo:hi + 1] - bp[lo]
    rows = hi - lo
    if not (canonical(rows, la, aj[a0:a1]) and canonical(rows, lb, bj[b0:b1])):
        return None
    codes_a = np.arange(a0 + 1, a1 + 1, dtype=np.int64)
    codes_b = np.arange(b0 + 1, b1 + 1, dtype=np.int64) << 32
    size = (a1 - a0) + (b1 - b0)
    cp = np.empty(rows + 1, la.dtype)
    cj = np.empty(size, la.dtype)
    cx = np.empty(size, np.int64)
    plus(rows, ncols, la, aj[a0:a1], codes_a, lb, bj[b0:b1], codes_b, cp, cj, cx)
    return cp, cj, cx


def merge(ap, aj, bp, bj, ncols):
    """The union of CSR patterns a (``ap``, ``aj``) and b (``bp``, ``bj``) of one shape.

    Parameters
    ----------
    ap, aj, bp, bj : 1-D arrays
        Row pointers and columns, one index dtype for all four.
    ncols : int

    Returns
    -------
    Merged or None
        None when a row of either operand is unsorted or holds a column twice.

    Examples
    --------
    >>> import numpy as np
    >>> m = merge(np.array([0, 2]), np.array([0, 3]), np.array([0, 2]), np.array([1, 3]), 4)
    >>> m.cols.tolist(), m.ca.tolist(), m.cb.tolist()
    ([0, 1, 3], [1, 0, 2], [0, 1, 2])
    """
    cuts = _cuts(ap, bp)
    blocks = [None] * (len(cuts) - 1)

    def walk(i):
        blocks[i] = _walk(ap, aj, bp, bj, ncols, cuts[i], cuts[i + 1])

    run_parallel(walk, list(range(len(blocks))))
    if any(b is None for b in blocks):
        return None
    return _assemble(blocks, cuts, ap.dtype)


def _assemble(blocks, cuts, dtype):
    """One Merged from the blocks' local results (their columns and codes copied on threads).

    A code's low and high 32 bits are a's and b's position plus one.
    """
    sizes = [int(cp[-1]) for cp, _, _ in blocks]
    starts = np.cumsum([0] + sizes)
    indptr = np.empty(cuts[-1] + 1, dtype)
    indptr[0] = 0
    n = int(starts[-1])
    cols, ca, cb = np.empty(n, dtype), np.empty(n, np.intp), np.empty(n, np.intp)

    def place(i):
        cp, cj, cx = blocks[i]
        s, e = int(starts[i]), int(starts[i + 1])
        indptr[cuts[i] + 1:cuts[i + 1] + 1] = cp[1:] + s
        cols[s:e] = cj[:e - s]
        np.bitwise_and(cx[:e - s], _LOW, out=ca[s:e])
        np.right_shift(cx[:e - s], 32, out=cb[s:e])

    run_parallel(place, list(range(len(blocks))))
    return Merged(indptr, cols, ca, cb)
