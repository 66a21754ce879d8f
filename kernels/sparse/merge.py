"""The union or intersection of two canonical CSR patterns, block by block of rows.

Two CSR matrices whose rows are sorted and free of duplicates are merged row
by row in one pass, as in the classic sparse addition (Saad, *Iterative
Methods for Sparse Linear Systems*, 2nd ed., section 3.4; scipy.sparse's
``csr_plus_csr`` walks the same way).  Unlike scipy's walk, which drops the
sums that are zero, the loops here keep every entry of the union (or of the
intersection): explicit zeros of the operands and cancellations stay
stored, as Paddle and torch keep them.

The loops are compiled (:mod:`kernels.funcs.jit`) and read the index arrays
through unsigned views of them, so that no index pays a negative-index
check: on one thread, two 65536^2 float32 CSR operands of 1e6 entries each
(int64 indices, AMD EPYC VM, 2026-11-28) add in 8.4 ms, against 11.8 for
scipy's ``a + b`` in the same process and 11.8 for the signed loop.  A
forward add, subtract or multiply computes the values in the walk, each sum
as numpy would (``a + 0``, ``0 - b`` where one operand has no entry); every
other use (other ops, values with dense dims, gradients) gets where each
operand's entries land (:class:`Part`) and combines the values from there
(:func:`at`, :func:`back`).

The loops release the GIL, so blocks of rows, cut to equal shares of both
operands' entries, are walked on threads
(:func:`kernels.funcs.threads.run_parallel`) into pooled buffers
(:mod:`kernels.funcs.pool`: on fresh pages the first-touch faults cost a walk
a third of its time), then copied into place.  This serves the CPU side of
sparse-with-sparse add, subtract, multiply and divide of same-shape operands
and their gradients (:mod:`kernels.sparse.binary`).
"""
from typing import NamedTuple

import numpy as np

from ..core.owned import recall, remember
from ..funcs import jit, pool
from ..funcs.jit import loop
from ..funcs.threads import balanced_cuts, block_count, run_parallel

try:
    from scipy.sparse._sparsetools import csr_has_canonical_format as _has_canonical_format
except (ImportError, AttributeError):       # a scipy without it: is_canonical says False
    _has_canonical_format = None

#: Bytes the walk touches per operand entry (column and value read, column and value written).
_BYTES_PER_ENTRY = 24


class Part(NamedTuple):
    """A block of rows: result entries ``[s, e)`` from a's ``[a0, a1)`` and b's ``[b0, b1)``.

    ``ia``/``ib``: in a union, where in the block a's (b's) entries are; in
    an intersection, where in a's (b's) share each of the block's entries is.
    """

    s: int
    e: int
    a0: int
    a1: int
    b0: int
    b1: int
    ia: np.ndarray
    ib: np.ndarray


class Merged(NamedTuple):
    """The result's row pointers and columns, its blocks, and whether it is the union.

    ``values`` are the sums (or differences, or products) when :func:`merge`
    was asked for them (then ``parts`` is empty), else None.
    """

    indptr: np.ndarray
    cols: np.ndarray
    parts: list
    union: bool
    values: np.ndarray = None


def usable(na, nb, n_rows):
    """True if the compiled walk is there and the row pointers are not far larger than the
    entries (the walk visits every row)."""
    return jit.available() and n_rows <= 4 * (na + nb) + 1024


def computes(op, av, bv):
    """True if the walk computes ``av op bv`` itself: a forward add, subtract or multiply
    of 1-D values of one dtype that :func:`kernels.funcs.jit.compiles`, but for a complex
    product (numba's rounds differently from numpy's: the positions and numpy serve)."""
    if op not in ("add", "subtract", "multiply") or av.ndim != 1 or av.dtype != bv.dtype:
        return False
    return jit.compiles(av.dtype) and not (op == "multiply" and av.dtype.kind == "c")


def _cuts(ap, bp):
    """Row boundaries of blocks holding about equal shares of both operands' entries."""
    nbytes = (int(ap[-1]) + int(bp[-1])) * _BYTES_PER_ENTRY
    if block_count(nbytes) < 2:
        return [0, ap.shape[0] - 1]
    return balanced_cuts(ap.astype(np.int64) + bp, nbytes)


def merge(ap, aj, bp, bj, union=True, values=None, known=(False, False)):
    """The union (or intersection) of CSR patterns a (``ap``, ``aj``) and b (``bp``, ``bj``).

    Parameters
    ----------
    ap, aj, bp, bj : 1-D arrays
        Row pointers and columns of one shape, one index dtype (int32 or int64)
        for all four.
    union : bool
        False: the intersection.
    values : tuple, optional
        ``(op, av, bv)``: the union's values ``av + bv`` (op ``'add'``) or
        ``av - bv`` (``'subtract'``), or the intersection's ``av * bv``
        (``'multiply'``), computed in the walk (see :func:`computes`).
    known : (bool, bool)
        True for an operand whose rows are known sorted and free of duplicates
        (a coalesced COO, a CSR :func:`known_canonical` found): its check is skipped.

    Returns
    -------
    Merged or None
        None when a row of either operand is unsorted or holds a column twice.

    Examples
    --------
    >>> import numpy as np
    >>> a, b = (np.array([0, 2]), np.array([0, 3])), (np.array([0, 2]), np.array([1, 3]))
    >>> m = merge(*a, *b)
    >>> m.cols.tolist(), m.parts[0].ia.tolist(), m.parts[0].ib.tolist()
    ([0, 1, 3], [0, 2], [1, 2])
    >>> m = merge(*a, *b, union=False)
    >>> m.cols.tolist(), m.parts[0].ia.tolist(), m.parts[0].ib.tolist()
    ([3], [1], [1])
    >>> merge(*a, *b, values=("subtract", np.array([1.0, 0.0]), np.array([0.0, 2.0]))).values
    array([ 1.,  0., -2.])
    """
    signed = ap.dtype
    a, b = jit.unsigned(ap, aj), jit.unsigned(bp, bj)
    cuts = _cuts(ap, bp)
    blocks = [None] * (len(cuts) - 1)

    def walk(i):
        blocks[i] = _walk(a, b, cuts[i], cuts[i + 1], union, values, known)

    run_parallel(walk, range(len(blocks)))
    if None in blocks:
        return None
    return _assemble(blocks, cuts, signed, union, values is not None)


def _walk(a, b, lo, hi, union, values, known):
    """Rows [lo, hi) merged: (local row pointers, columns, the values or a :class:`Part`,
    the operands' entry ranges), indices signed again; None if a row is not canonical."""
    (ap, aj), (bp, bj) = a, b
    if not ((known[0] or _rising(ap, aj, lo, hi, jit.one(ap)))
            and (known[1] or _rising(bp, bj, lo, hi, jit.one(bp)))):
        return None
    span = (int(ap[lo]), int(ap[hi]), int(bp[lo]), int(bp[hi]))
    cp = np.empty(hi - lo + 1, ap.dtype)
    walk = _located if values is None else _computed
    cj, extra = walk(a, b, lo, hi, cp, union, values, span)
    signed = jit.SIGNED[ap.dtype]
    return cp.view(signed), cj.view(signed), extra, span


def _size(union, span):
    """Entries a block's result can hold at most."""
    a0, a1, b0, b1 = span
    return (a1 - a0) + (b1 - b0) if union else min(a1 - a0, b1 - b0)


def _computed(a, b, lo, hi, cp, union, values, span):
    """The block's columns and values ``av op bv`` (see :func:`merge`)."""
    (ap, aj), (bp, bj), (op, av, bv) = a, b, values
    size, one = _size(union, span), jit.one(ap)
    cj, cv = _outputs(size, aj.dtype, av.dtype)
    if union:
        _UNION_VALUES[op](ap, aj, av, bp, bj, bv, lo, hi, cp, cj, cv, av.dtype.type(0), one)
    else:
        _MEET_VALUES(ap, aj, av, bp, bj, bv, lo, hi, cp, cj, cv, _NONE, _NONE, one)
    n = int(cp[-1])
    if 2 * n < size:                      # an intersection far smaller than its buffers
        return cj[:n].copy(), cv[:n].copy()
    return cj[:n], cv[:n]


def _located(a, b, lo, hi, cp, union, values, span):
    """The block's columns and a :class:`Part` saying where each operand's entries are."""
    (ap, aj), (bp, bj) = a, b
    size, one, (a0, a1, b0, b1) = _size(union, span), jit.one(ap), span
    cj = pool.empty((size,), aj.dtype)
    if union:
        ia, ib = np.empty(a1 - a0, ap.dtype), np.empty(b1 - b0, ap.dtype)
        _union_positions(ap, aj, bp, bj, lo, hi, cp, cj, ia, ib, one)
    else:
        ia, ib = np.empty(size, ap.dtype), np.empty(size, ap.dtype)
        _MEET_POSITIONS(ap, aj, _NONE, bp, bj, _NONE, lo, hi, cp, cj, _NONE, ia, ib, one)
    n, signed = int(cp[-1]), jit.SIGNED[ap.dtype]
    if not union:
        ia, ib = ia[:n], ib[:n]
    return cj[:n], Part(0, n, *span, ia.view(signed), ib.view(signed))


def _outputs(size, index_dtype, value_dtype):
    """A walk's column and value outputs for ``size`` entries, carved from one pooled
    buffer: together they reach the pool's size where the values alone (float32 of
    a few million entries) would come from fresh pages."""
    if size * 16 < pool.MIN_BYTES:     # below the pool's floor: two plain arrays
        return np.empty(size, index_dtype), np.empty(size, value_dtype)
    cols = size * np.dtype(index_dtype).itemsize
    cut = -(-cols // 16) * 16         # the values start aligned for any dtype
    buf = pool.empty((cut + size * np.dtype(value_dtype).itemsize,), np.uint8)
    return buf[:cols].view(index_dtype), buf[cut:].view(value_dtype)


# The loops.  Every index is unsigned (a row pointer, a column, a position), and every
# step adds ``one`` of the index dtype: numba would make an unsigned index plus an int
# literal a float.  Rows are walked as the validated row pointers say; a loop writes the
# block's local row pointers ``cp`` (cp[0] = 0) and never more entries than its bound.
@loop
def _rising(p, j, lo, hi, one):
    """True if the columns of rows [lo, hi) rise strictly within each row (scipy's
    ``has_canonical_format``: sorted, no duplicates)."""
    for i in range(lo, hi):
        e, end = p[i] + one, p[i + 1]
        while e < end:
            if j[e] <= j[e - one]:
                return False
            e += one
    return True


def _union_values_loop(subtract):
    """The loop of the union and its values ``a + b``, or ``a - b`` with ``subtract``, a
    constant of the compiled loop: a runtime flag let LLVM fold ``c ? a - b : a + b``
    into ``a + (c ? -b : b)``, which flips the sign of a NaN in b (numpy keeps it)."""
    def _union_values(ap, aj, av, bp, bj, bv, lo, hi, cp, cj, cv, zero, one):
        """Rows [lo, hi) of the union and its values; an entry of one operand meets the
        other's implicit ``zero``, as in numpy (``-0.0 + 0.0`` is ``+0.0``)."""
        n = one - one
        cp[0] = n
        for i in range(lo, hi):
            p, pe, q, qe = ap[i], ap[i + 1], bp[i], bp[i + 1]
            while p < pe and q < qe:
                ca, cb = aj[p], bj[q]
                if ca < cb:
                    cj[n], cv[n] = ca, (av[p] - zero) if subtract else (av[p] + zero)
                    p += one
                elif cb < ca:
                    cj[n], cv[n] = cb, (zero - bv[q]) if subtract else (zero + bv[q])
                    q += one
                else:
                    cj[n], cv[n] = ca, (av[p] - bv[q]) if subtract else (av[p] + bv[q])
                    p += one
                    q += one
                n += one
            while p < pe:
                cj[n], cv[n] = aj[p], (av[p] - zero) if subtract else (av[p] + zero)
                p += one
                n += one
            while q < qe:
                cj[n], cv[n] = bj[q], (zero - bv[q]) if subtract else (zero + bv[q])
                q += one
                n += one
            cp[i - lo + 1] = n
    return loop(_union_values)


#: The union loops by op.
_UNION_VALUES = {"add": _union_values_loop(False), "subtract": _union_values_loop(True)}


@loop
def _union_positions(ap, aj, bp, bj, lo, hi, cp, cj, ia, ib, one):
    """Rows [lo, hi) of the union, and where in it each entry of a (``ia``) and of b
    (``ib``) lands, counted from the block's first entries."""
    n, a0, b0 = one - one, ap[lo], bp[lo]
    cp[0] = n
    for i in range(lo, hi):
        p, pe, q, qe = ap[i], ap[i + 1], bp[i], bp[i + 1]
        while p < pe or q < qe:
            take_a = q == qe or (p < pe and aj[p] <= bj[q])
            take_b = p == pe or (q < qe and bj[q] <= aj[p])
            if take_a:
                cj[n], ia[p - a0] = aj[p], n
                p += one
            if take_b:
                cj[n], ib[q - b0] = bj[q], n
                q += one
            n += one
        cp[i - lo + 1] = n


def _meet_loop(positions):
    """The loop of the intersection: with ``positions`` (a constant of the compiled
    loop) where in a's (``ia``) and b's (``ib``) share of the block each entry is, else
    its products ``a * b`` (``cv``); the arrays of the other kind are not touched."""
    def _meet(ap, aj, av, bp, bj, bv, lo, hi, cp, cj, cv, ia, ib, one):
        """Rows [lo, hi) of the intersection."""
        n, a0, b0 = one - one, ap[lo], bp[lo]
        cp[0] = n
        for i in range(lo, hi):
            p, pe, q, qe = ap[i], ap[i + 1], bp[i], bp[i + 1]
            while p < pe and q < qe:
                ca, cb = aj[p], bj[q]
                if ca == cb:
                    cj[n] = ca
                    if positions:
                        ia[n], ib[n] = p - a0, q - b0
                    else:
                        cv[n] = av[p] * bv[q]
                    n += one
                p += one if ca <= cb else one - one
                q += one if cb <= ca else one - one
            cp[i - lo + 1] = n
    return loop(_meet)


_MEET_VALUES, _MEET_POSITIONS = _meet_loop(False), _meet_loop(True)
#: The arrays a loop is handed but does not touch (the other kind's outputs).
_NONE = np.zeros(0, np.int8)


def _assemble(blocks, cuts, dtype, union, computed):
    """One Merged from the blocks' local results (copied into place on threads)."""
    if len(blocks) == 1:                     # the walk's own arrays
        cp, cj, extra = blocks[0][:3]
        return Merged(cp, cj, [], union, extra) if computed else Merged(cp, cj, [extra], union)
    starts = np.cumsum([0] + [int(b[0][-1]) for b in blocks]).tolist()
    indptr, cols = np.empty(cuts[-1] + 1, dtype), pool.empty((starts[-1],), dtype)
    indptr[0] = 0
    out = pool.empty((starts[-1],), blocks[0][2].dtype) if computed else None

    def place(i):
        cp, cj, extra = blocks[i][:3]
        indptr[cuts[i] + 1:cuts[i + 1] + 1] = cp[1:] + starts[i]
        cols[starts[i]:starts[i + 1]] = cj
        if computed:
            out[starts[i]:starts[i + 1]] = extra

    run_parallel(place, list(range(len(blocks))))
    if computed:
        return Merged(indptr, cols, [], union, out)
    return Merged(indptr, cols, [b[2]._replace(s=s, e=e) for b, s, e in
                                 zip(blocks, starts, starts[1:])], union)


def at(values, part, side, union):
    """Operand ``side``'s (``'a'`` or ``'b'``) values at the block's entries (0 where it has none)."""
    lo, hi, sel = (part.a0, part.a1, part.ia) if side == "a" else (part.b0, part.b1, part.ib)
    if not union:
        return np.take(values[lo:hi], sel, axis=0)
    out = np.zeros((part.e - part.s,) + values.shape[1:], values.dtype)
    out[sel] = values[lo:hi]
    return out


def back(t, part, side, union, g):
    """Write ``t`` (the block's gradient at its entries) to operand ``side``'s gradient ``g``."""
    lo, hi, sel = (part.a0, part.a1, part.ia) if side == "a" else (part.b0, part.b1, part.ib)
    if union:
        g[lo:hi] = np.take(t, sel, axis=0)
    else:
        g[lo:hi][sel] = t


def known_canonical(indptr, cols):
    """True if :func:`remember_canonical` recorded these very (locked) buffers."""
    return recall((cols, indptr), "canonical") is True


def remember_canonical(indptr, cols):
    """Record CSR buffers a walk found canonical (rows sorted, no duplicates), as scipy
    caches ``has_canonical_format`` on a matrix: the check then runs once per tensor.
    Only locked buffers, whose content cannot change, are recorded."""
    remember((cols, indptr), "canonical", True)


def is_canonical(indptr, cols):
    """True if the rows (``indptr``, ``cols``) have strictly rising columns (sorted, no
    duplicates): scipy's ``has_canonical_format``, remembered for locked buffers."""
    if known_canonical(indptr, cols):
        return True
    if _has_canonical_format is None:
        return False
    p, j = indptr, cols
    if j.dtype not in (np.int32, np.int64) or p.dtype != j.dtype:
        p, j = p.astype(np.int64), j.astype(np.int64)
    if not _has_canonical_format(p.shape[0] - 1, p, j):
        return False
    remember_canonical(indptr, cols)
    return True
