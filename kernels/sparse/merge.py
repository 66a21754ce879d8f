"""The union or intersection of two canonical CSR patterns, block by block of rows.

scipy.sparse's compiled ``csr_plus_csr`` (sparsetools) walks two CSR
matrices whose rows are sorted and free of duplicates in one pass per row
and writes their union: the classic sparse addition (Saad, *Iterative
Methods for Sparse Linear Systems*, 2nd ed., section 3.4).  It drops the
sums that are zero, so it is given values whose sums never are:

- the int8 *flags* 1 for every entry of a and 2 for every entry of b: the
  sums 1, 2 and 3 say where each union entry comes from.  In a union each
  operand's entries appear once and in their storage order, so a's values
  land where the flag has bit 1 and b's where it has bit 2; the intersection
  (flag 3) finds its sources among each operand's own flags;
- for a float sum or difference, the values *tagged* as complex numbers
  ``v + 1j`` (a) and ``w + 2j`` (b): the imaginary part is never zero, and the
  real part is ``v + w`` (or ``v - w``) in the values' own precision, computed
  in the walk; a block of a sum whose values are all positive or all
  negative walks on them untagged (a quarter less time), and so does one
  whose values have one sign but for a few zeros, made NaN so that their
  sums are kept, then recomputed (:func:`_marked`: on one thread, the
  bench's 1e6-entry CSR add, whose operand stores one 0.0, took 8.6-9.4 ms
  instead of 11.5, scipy's 7.3-7.8);
- for a float product, the values themselves: the compiled ``csr_elmul_csr``
  walk writes the intersection and its products.  When a product may be
  zero (a stored zero, or the two smallest magnitudes' product below the
  smallest subnormal), a second walk of the block on int8 ones counts the
  intersection; if the product walk kept fewer entries, the flags serve.

Either way explicit zeros of the operands, and cancellations, stay stored.
The walk releases the GIL, so blocks of rows, cut to equal shares of both
operands' entries, are walked on threads
(:func:`kernels.funcs.threads.run_parallel`), and each block's values can be
computed on threads too (:func:`at`, :func:`back`).  The walks write into
pooled buffers (:mod:`kernels.funcs.pool`), as the assembled result does:
on fresh pages the first-touch faults cost the walk a third of its time and
kept two walks from overlapping (two halves of a 2e6 + 2e6 add: 35.6 ms in
turn, 40.5 on two threads; on written pages 24.2 and 16.0).  This serves the CPU side
of sparse-with-sparse add, subtract, multiply and divide of same-shape
operands and their gradients (:mod:`kernels.sparse.binary`).
"""
import math
from typing import NamedTuple

import numpy as np

from ..core.owned import recall, remember
from ..funcs import pool
from ..funcs.threads import balanced_cuts, block_count, run_parallel

try:
    from scipy.sparse import _sparsetools
    _WALK = {"add": _sparsetools.csr_plus_csr, "subtract": _sparsetools.csr_minus_csr,
             "multiply": _sparsetools.csr_elmul_csr,
             "canonical": _sparsetools.csr_has_canonical_format}
except (ImportError, AttributeError):       # a scipy without them: the sort-based merge serves
    _WALK = None

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

    ``values`` are the sums (or differences) when :func:`merge` was asked for
    them (then ``parts`` is empty), else None.
    """

    indptr: np.ndarray
    cols: np.ndarray
    parts: list
    union: bool
    values: np.ndarray = None


def usable(na, nb, n_rows):
    """True if scipy's walk is present and the row pointers are not far larger than the entries."""
    return _WALK is not None and n_rows <= 4 * (na + nb) + 1024


def _cuts(ap, bp, fine=False):
    """Row boundaries of blocks holding about equal shares of both operands' entries; with
    ``fine``, at least :data:`FINE_BLOCKS` of them on any number of threads."""
    nbytes, at_least = (int(ap[-1]) + int(bp[-1])) * _BYTES_PER_ENTRY, FINE_BLOCKS if fine else 1
    if block_count(nbytes, at_least=at_least) < 2:
        return [0, ap.shape[0] - 1]
    return balanced_cuts(ap.astype(np.int64) + bp, nbytes, at_least=at_least)


#: Blocks a product is cut into when some of its values may give a zero product: each
#: block checks its own, and only those that may are counted by a second walk.  A stored
#: zero among two 65536^2 float32 CSR operands of 1e6 entries each (one thread, AMD EPYC
#: VM, 2026-11-27) took the product from 21.2 to 13.2 ms (scipy 11.0).  A sum gains nothing this way:
#: the blocks' assembly costs what the tags of one block would (16.5 against 16.0 ms).
FINE_BLOCKS = 16


def _walk(ap, aj, bp, bj, ncols, lo, hi, data, fn, known):
    """scipy's walk ``fn`` over rows [lo, hi) with ``data(a0, a1, b0, b1)`` as the operands'
    values: (local indptr, cols, written values, (a0, a1, b0, b1)), or None if not canonical.
    ``known``: for each operand, True if its rows are known sorted and free of duplicates."""
    a0, a1, b0, b1 = int(ap[lo]), int(ap[hi]), int(bp[lo]), int(bp[hi])
    la, lb = _local(ap, lo, hi, a0), _local(bp, lo, hi, b0)
    ja, jb = _part(aj, a0, a1), _part(bj, b0, b1)
    rows, canonical = hi - lo, _WALK["canonical"]
    if not ((known[0] or canonical(rows, la, ja)) and (known[1] or canonical(rows, lb, jb))):
        return None
    da, db, *restore = data(a0, a1, b0, b1)
    size = (a1 - a0) + (b1 - b0)
    cp = np.empty(rows + 1, la.dtype)
    cj, cx = _outputs(size, la.dtype, da.dtype)
    fn(rows, ncols, la, ja, da, lb, jb, db, cp, cj, cx)
    n = int(cp[-1])
    if restore:
        restore[0](la, ja, lb, jb, cp, cj[:n], cx[:n])
    if 2 * n < size:                  # an intersection far smaller than its buffers
        return cp, cj[:n].copy(), cx[:n].copy(), (a0, a1, b0, b1)
    return cp, cj[:n], cx[:n], (a0, a1, b0, b1)


def _local(p, lo, hi, first):
    """Row pointers ``p`` of rows [lo, hi), counted from the block's ``first`` entry
    (``p[lo]``): p itself when the block is all of it and starts at 0."""
    if lo == 0 and hi == p.shape[0] - 1 and first == 0:
        return p
    return p[lo:hi + 1] - first


def _outputs(size, index_dtype, value_dtype):
    """A walk's column and value outputs for ``size`` entries, carved from one pooled
    buffer: together they reach the pool's size where the values alone (float32 of
    a few million entries) would come from fresh pages.  Tagged (complex) values, which
    only live until their real parts are copied out, get a buffer of their own, so that
    the result's columns do not keep them alive (a float64 sum's doubled its memory)."""
    if size * 16 < pool.MIN_BYTES:     # below the pool's floor: two plain arrays
        return np.empty(size, index_dtype), np.empty(size, value_dtype)
    if np.dtype(value_dtype).kind == "c":
        return pool.empty((size,), index_dtype), pool.empty((size,), value_dtype)
    cols = size * np.dtype(index_dtype).itemsize
    cut = -(-cols // 16) * 16         # the values start aligned for any dtype
    buf = pool.empty((cut + size * np.dtype(value_dtype).itemsize,), np.uint8)
    return buf[:cols].view(index_dtype), buf[cut:].view(value_dtype)


def _flags(a0, a1, b0, b1):
    return np.ones(a1 - a0, np.int8), np.full(b1 - b0, 2, np.int8)


def _sources(block, union):
    """A flag walk's block as (local indptr, cols, Part without offsets)."""
    cp, cj, flag, (a0, a1, b0, b1) = block
    if union:
        return cp, cj, Part(0, cj.shape[0], a0, a1, b0, b1,
                            np.flatnonzero((flag & 1).view(bool)),
                            np.flatnonzero((flag >> 1).view(bool)))
    both = np.flatnonzero(flag == 3)
    cp = np.searchsorted(both, cp).astype(cp.dtype)
    return cp, cj.take(both), Part(0, both.shape[0], a0, a1, b0, b1, _shared(flag, 1),
                                    _shared(flag, 2))


def _payload(op, av, bv):
    """Walk data computing ``op``'s values: the values themselves for a product, and for a
    block whose sums cannot be zero (:func:`sums_nonzero` of the block's values, so that
    a stored zero makes only its own block pay for tags); else tagged (:func:`_tagged`)."""
    if op == "multiply":
        return lambda a0, a1, b0, b1: (av[a0:a1], bv[b0:b1])
    if op == "subtract":
        return _tagged(av, bv)

    def data(a0, a1, b0, b1):
        a, b = _part(av, a0, a1), _part(bv, b0, b1)
        facts = _sign_facts(a), _sign_facts(b)     # one scan of a block's slices
        if _one_signed(*facts):
            return a, b
        zeros = _few_zeros(*facts)
        if zeros is not None:
            return (*_marked(a, b, zeros), _restorer(a, b))
        return _tagged(av, bv)(a0, a1, b0, b1)
    return data


#: Stored zeros up to which a sum of one-signed values marks them instead of tagging.
FEW_ZEROS = 64


def _few_zeros(a_facts, b_facts):
    """Where two operands' zeros are, from their :func:`_sign_facts`, when those are the
    only values whose sums may vanish (every other value of both has one sign: no NaN,
    and infinities of one sign add to no NaN) and there are at most :data:`FEW_ZEROS`
    of them; else None."""
    (*_, a_up, a_down, za), (*_, b_up, b_down, zb) = a_facts, b_facts
    if not (a_up and b_up or a_down and b_down) or za is None or zb is None \
            or za.shape[0] + zb.shape[0] > FEW_ZEROS:
        return None
    return za, zb


def _marked(a, b, zeros):
    """Copies of a and b with their zeros made NaN: a sum with a NaN is never zero, so the
    walk keeps every entry, and the NaNs in its output mark the sums to restore."""
    out = []
    for v, z in zip((a, b), zeros):
        if z.shape[0]:
            v = v.copy()
            v[z] = np.nan
        out.append(v)
    return out


def _restorer(a, b):
    """What a block walked on :func:`_marked` values needs after the walk: each NaN of its
    output (a sum holding a marked zero) recomputed from a's and b's own values there,
    as the tagged walk would have summed them (one operand's value alone plus 0)."""
    def restore(la, ja, lb, jb, cp, cj, cx):
        for p in np.flatnonzero(np.isnan(cx)).tolist():
            row = int(np.searchsorted(cp, p, side="right")) - 1
            col = cj[p]
            cx[p] = _value_at(la, ja, a, row, col) + _value_at(lb, jb, b, row, col)
    return restore


def _value_at(indptr, cols, values, row, col):
    """The value stored at (row, col) of a canonical CSR block, or a zero of its dtype."""
    lo, hi = int(indptr[row]), int(indptr[row + 1])
    k = lo + int(np.searchsorted(cols[lo:hi], col))
    return values[k] if k < hi and cols[k] == col else values.dtype.type(0)


def _part(v, lo, hi):
    """``v[lo:hi]``, or v itself when that is all of it (so what is remembered of a
    tensor's values is found again)."""
    return v if (lo, hi) == (0, v.shape[0]) else v[lo:hi]


def sums_nonzero(av, bv):
    """True if no value of ``av``, of ``bv`` or sum of one of each can be zero: all of them
    positive, or all negative (a NaN makes both tests fail).

    Examples
    --------
    >>> import numpy as np
    >>> sums_nonzero(np.float32([1e-30, 2]), np.float32([3]))
    True
    >>> sums_nonzero(np.float32([1, 2]), np.float32([-1]))
    False
    """
    return _one_signed(_sign_facts(av), _sign_facts(bv))


def _one_signed(a_facts, b_facts):
    """:func:`sums_nonzero` from the operands' :func:`_sign_facts`."""
    (a_pos, a_neg, *_), (b_pos, b_neg, *_) = a_facts, b_facts
    return a_pos and b_pos or a_neg and b_neg


def signs(v):
    """(every value of 1-D float ``v`` is positive, every one is negative): both True for
    an empty v, both False with a NaN; remembered for a locked v (a tensor's values)."""
    return _sign_facts(v)[:2]


def _sign_facts(v):
    """:func:`signs`, then (no value is negative, none is positive, where the zeros are:
    None unless those two say one sign but for zeros, and past :data:`FEW_ZEROS`),
    remembered for a locked v: one pass where the values are positive, two or three
    otherwise (the third only finds the zeros of one-signed values)."""
    known = recall((v,), "signs")
    return known if known is not None else remember((v,), "signs", _scan_signs(v))


def _scan_signs(v):
    """:func:`_sign_facts`'s scan."""
    if v.shape[0] == 0:
        return True, True, True, True, np.zeros(0, np.int64)
    low = np.min(v)
    if low > 0:
        return True, False, True, False, np.zeros(0, np.int64)
    high = np.max(v)
    if not (low == 0 or high == 0):         # mixed signs, all negative, or a NaN
        return False, bool(high < 0), False, bool(high < 0), None
    where = np.flatnonzero(v == 0)
    return (False, False, bool(low >= 0), bool(high <= 0),
            where if where.shape[0] <= FEW_ZEROS else None)


def products_nonzero(av, bv, least=None):
    """True if no product of a value of ``av`` and one of ``bv`` can be zero, and no NaN
    or infinity is stored (then the answer is False, to be safe).  ``least`` finds a
    least magnitude: :func:`min_abs` by default, remembered for locked arrays; a
    block's slices pass the bare scan.

    Examples
    --------
    >>> import numpy as np
    >>> products_nonzero(np.float32([1e-30, 2]), np.float32([1e-10]))
    True
    >>> products_nonzero(np.float32([1e-30, 2]), np.float32([1e-30]))
    False
    """
    if av.shape[0] == 0 or bv.shape[0] == 0:
        return True
    least = least or min_abs
    low = least(av) * least(bv)
    return low >= 2 * _TINIEST[av.dtype]


#: Each float dtype's smallest subnormal (np.finfo on every call costs a microsecond).
_TINIEST = {np.dtype(t): float(np.finfo(t).smallest_subnormal)
            for t in (np.float16, np.float32, np.float64, np.longdouble)}


def finite(v):
    """True if 1-D float ``v`` stores no NaN or infinity (:func:`min_abs`, remembered)."""
    return v.shape[0] == 0 or not math.isnan(min_abs(v))


#: Values per step of :func:`min_abs`: its scratch stays in cache.
_ABS_CHUNK = 1 << 16


def min_abs(v):
    """The least magnitude in 1-D float ``v`` (non-empty) as a float, NaN if a NaN or an
    infinity is stored;
    chunk by chunk through one cache-sized scratch (``np.abs(v)`` whole would write a
    temporary as large as v), and remembered for a locked v (a tensor's values).

    Examples
    --------
    >>> min_abs(np.float32([3, -0.5, 2]))
    0.5
    """
    known = recall((v,), "min_abs")
    return known if known is not None else remember((v,), "min_abs", _scan_min_abs(v))


def _scan_min_abs(v):
    """:func:`min_abs`'s scan."""
    scratch = np.empty(min(v.shape[0], _ABS_CHUNK), v.dtype)
    low = math.inf
    for lo in range(0, v.shape[0], _ABS_CHUNK):
        part = np.abs(v[lo:lo + _ABS_CHUNK], out=scratch[:min(_ABS_CHUNK, v.shape[0] - lo)])
        m = float(part.min())
        if math.isnan(m) or math.isinf(float(part.max())):
            return math.nan
        low = min(low, m)
    return low


def _tagged(av, bv):
    """Walk data carrying the values as the real part and the tags 1 (a) and 2 (b) as the
    imaginary part: a complex sum or difference is never zero, and its real part is the
    operands' sum or difference in their own precision."""
    ctype = np.dtype(np.result_type(av.dtype, np.complex64))
    tags = ctype.type(1j), ctype.type(2j)

    def data(a0, a1, b0, b1):             # one pass each: the value plus its tag
        return _plus(av[a0:a1], tags[0]), _plus(bv[b0:b1], tags[1])
    return data


def _plus(v, tag):
    """``v + tag`` in tag's complex dtype, written into pooled memory (fresh pages would
    cost a 1e6-entry float32 pair of operands about 3 ms of first-touch faults)."""
    return np.add(v, tag, out=pool.empty(v.shape, tag.dtype))


def _shared(flag, bit):
    """Where, among the entries of the operand with ``bit``, those of both operands are."""
    own = flag.take(np.flatnonzero((flag & bit).view(bool)))
    return np.flatnonzero(own == 3)


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
    if _WALK is None:
        return False
    p, j = indptr, cols
    if j.dtype not in (np.int32, np.int64) or p.dtype != j.dtype:
        p, j = p.astype(np.int64), j.astype(np.int64)
    if not _WALK["canonical"](p.shape[0] - 1, p, j):
        return False
    remember_canonical(indptr, cols)
    return True


def merge(ap, aj, bp, bj, ncols, union=True, values=None, known=(False, False)):
    """The union (or intersection) of CSR patterns a (``ap``, ``aj``) and b (``bp``, ``bj``).

    Parameters
    ----------
    ap, aj, bp, bj : 1-D arrays
        Row pointers and columns of one shape, one index dtype for all four.
    ncols : int
    union : bool
        False: the intersection.
    values : tuple, optional
        ``(op, av, bv)``: the union's values ``av + bv`` (op ``'add'``) or
        ``av - bv`` (``'subtract'``), or the intersection's ``av * bv``
        (``'multiply'``; checked by a count where :func:`products_nonzero`
        fails), computed in the walk, for 1-D float32 or float64 values of
        one dtype.
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
    >>> m = merge(*a, *b, 4)
    >>> m.cols.tolist(), m.parts[0].ia.tolist(), m.parts[0].ib.tolist()
    ([0, 1, 3], [0, 2], [1, 2])
    >>> m = merge(*a, *b, 4, union=False)
    >>> m.cols.tolist(), m.parts[0].ia.tolist(), m.parts[0].ib.tolist()
    ([3], [1], [1])
    >>> merge(*a, *b, 4, values=("subtract", np.array([1.0, 0.0]), np.array([0.0, 2.0]))).values
    array([ 1.,  0., -2.])
    """
    if values is not None and values[0] == "multiply" and not all(map(finite, values[1:])):
        values = None       # scipy's walk keeps inf * 0 = NaN for an entry of one operand only
    count = values is not None and values[0] == "multiply" and not products_nonzero(*values[1:])
    cuts = _cuts(ap, bp, fine=count)
    data, fn = (_flags, _WALK["add"]) if values is None else (_payload(*values),
                                                              _WALK[values[0]])
    blocks = [None] * (len(cuts) - 1)

    def walk(i):
        lo, hi = cuts[i], cuts[i + 1]
        block = _walk(ap, aj, bp, bj, ncols, lo, hi, data, fn, known)
        if count and block is not None and _may_drop(values, block) \
                and _dropped(ap, aj, bp, bj, ncols, lo, hi, block):
            block = _DROPPED
        blocks[i] = block if block is None or values is not None else _sources(block, union)

    run_parallel(walk, range(len(blocks)))
    if None in blocks:
        return None
    if _DROPPED in blocks:                          # a zero product: the flags walk
        return merge(ap, aj, bp, bj, ncols, union, None, (True, True))
    return _assemble(blocks, cuts, ap.dtype, union, values is not None)


def _real(v):
    """A walk's values, real: the real parts of tagged ones copied into pooled memory."""
    if v.dtype.kind != "c":
        return v
    out = pool.empty(v.shape, v.real.dtype)
    np.copyto(out, v.real)
    return out


#: A product walk's block that lost a zero product.
_DROPPED = object()


def _may_drop(values, block):
    """Whether a product of the block's own values may be zero (then it is counted)."""
    a0, a1, b0, b1 = block[3]
    return not products_nonzero(values[1][a0:a1], values[2][b0:b1], _scan_min_abs)


def _dropped(ap, aj, bp, bj, ncols, lo, hi, block):
    """True if the product walk's ``block`` of rows [lo, hi) kept fewer entries than the
    intersection has: a walk on int8 ones, whose products are never zero, counts it."""
    a0, a1, b0, b1 = block[3]
    size = min(a1 - a0, b1 - b0)
    cp, cj, cx = np.empty(hi - lo + 1, ap.dtype), np.empty(size, aj.dtype), np.empty(size, np.int8)
    _WALK["multiply"](hi - lo, ncols, ap[lo:hi + 1] - ap[lo], aj[a0:a1], _ones(a1 - a0),
                      bp[lo:hi + 1] - bp[lo], bj[b0:b1], _ones(b1 - b0), cp, cj, cx)
    return int(cp[-1]) != block[1].shape[0]


#: A read-only int8 array of ones, grown to the longest block asked for, so that the
#: counting walks do not write (and fault in) new ones for every block of every call.
_ONES = [np.ones(0, np.int8)]


def _ones(n):
    """``n`` int8 ones: a view of :data:`_ONES`."""
    ones = _ONES[0]
    if ones.shape[0] < n:
        ones = np.ones(n, np.int8)
        ones.setflags(write=False)
        _ONES[0] = ones
    return ones[:n]


def _assemble(blocks, cuts, dtype, union, summed):
    """One Merged from the blocks' local results (copied into place on threads)."""
    if len(blocks) == 1:                     # the walk's own arrays, the values made real
        cp, cj, extra = blocks[0][:3]
        if summed:
            return Merged(cp, cj, [], union, _real(extra))
        return Merged(cp, cj, [extra], union)
    starts = np.cumsum([0] + [int(b[0][-1]) for b in blocks]).tolist()
    indptr, cols = np.empty(cuts[-1] + 1, dtype), pool.empty((starts[-1],), dtype)
    indptr[0] = 0
    out = pool.empty((starts[-1],), blocks[0][2].real.dtype) if summed else None

    def place(i):
        cp, cj, extra = blocks[i][:3]
        indptr[cuts[i] + 1:cuts[i + 1] + 1] = cp[1:] + starts[i]
        cols[starts[i]:starts[i + 1]] = cj
        if summed:
            out[starts[i]:starts[i + 1]] = extra.real

    run_parallel(place, list(range(len(blocks))))
    if summed:
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
