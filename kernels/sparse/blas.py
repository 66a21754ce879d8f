"""Sparse BLAS on the CPU: SpMM, SpGEMM, SDDMM and transpose of 2-D CSR matrices.

The matmul family (:mod:`kernels.sparse.matmul`) hands every operand over as
a 2-D :class:`~kernels.sparse.data.CsrData`: a batched one as its
block-diagonal matrix, so nothing here knows about batches.

SpMV and transpose run scipy's compiled sparsetools (``csr_matvec``,
``csr_tocsc``), which release the GIL.  SpGEMM of real values runs a
compiled loop, Gustavson's algorithm as scipy's ``csr_matmat`` runs it (its
entries, order and sums), in one pass instead of scipy's two, and keeps
scipy's kernels for complex values.  SpMM with more than one column runs a
compiled loop
(:mod:`kernels.funcs.jit`) that adds whole rows of the dense operand, where
``csr_matvecs`` runs a scalar loop over them (the same sums in the same
order: the same bits, 0.7x the time), and keeps ``csr_matvecs`` for the
dtypes the loop is not compiled for.  SpMM and SpGEMM cut the rows into blocks of about
equal work (:mod:`kernels.funcs.threads`).  Each output row is
computed by one call, in the order of its stored entries, so a result is
bit-identical whatever the number of threads.

SDDMM (the entries of a dense product at given coordinates) runs one
compiled loop (:mod:`kernels.funcs.jit`): each entry is the dot product of a
row of each factor, read where they lie, one range of entries per thread.
No numpy formulation came near it: gathering both rows with ``numpy.take``
and reducing them with ``einsum`` wrote and read every gathered row once
more, and took 16.1 ms at nnz 1e6 and k = 64 on 2 cores where the loop
takes about 5.  Dtypes the loop is not compiled for (bool and float16, which
the ops refuse, and every dtype where numba is not installed) keep that
gather, in blocks of :func:`sddmm_block` entries.  Either way each entry is
summed by the same instructions whatever the number of threads.
"""
import numpy as np
from scipy.sparse import _sparsetools

from ..core.size import check_bytes, memory_limit
from ..core.xp import xp_of
from .data import CsrData, row_ids
from ..funcs import pool
from ..funcs import jit
from ..funcs.jit import compiles, loop, prefetch_row
from ..funcs.threads import PIECES_PER_THREAD, block_count, num_threads, run_parallel, split_index

#: Below this much work (stored entries plus rows) per thread, one call does it all.
MIN_WORK_PER_THREAD = 1 << 15
#: SpGEMM row blocks per thread: a block whose products cancel is recomputed on its
#: pattern (:func:`_restore_cancelled`), so smaller blocks bound that extra work.
SPGEMM_BLOCKS_PER_THREAD = 16
#: Bytes of each gathered SDDMM block (the dtypes the compiled loop does not cover).
#: Each block costs three numpy calls under the GIL, so small blocks serialize the
#: threads: at k = 64 float32 and nnz 1e6 (2 cores, AMD EPYC VM, 2026-11-28), blocks
#: of 256 KiB took 25.8 ms, 1 MiB 16.0 and 2-4 MiB 15.8.
SDDMM_BLOCK_BYTES = 1 << 20
#: How many entries ahead the SDDMM and SpMM loops prefetch the dense row they will read.
AHEAD = 16
INT32_MAX = 2 ** 31 - 1


def index_arrays(*arrays, extent=0):
    """The index arrays in one dtype, as sparsetools wants: int64 if any is, or if
    ``extent`` does not fit int32; else int32."""
    wide = extent > INT32_MAX or any(a.dtype == np.int64 for a in arrays)
    dtype = np.int64 if wide else np.int32
    return [np.ascontiguousarray(a, dtype=dtype) for a in arrays]


def row_blocks(indptr, per_thread=1):
    """Row ranges ``[(r0, r1), ...]`` of about equal work, ``per_thread`` per thread.

    Work is stored entries plus rows; fewer blocks when there is too little
    of it.  The blocks never change a result, only who computes which rows.
    """
    n_rows = indptr.shape[0] - 1
    nnz = int(indptr[-1]) if n_rows >= 0 else 0
    parts = min(num_threads() * per_thread, (nnz + n_rows) // MIN_WORK_PER_THREAD)
    if parts <= 1:
        return [(0, n_rows)]
    targets = np.arange(1, parts, dtype=np.int64) * nnz // parts
    cuts = np.searchsorted(indptr, targets).tolist()
    edges = sorted(set([0, n_rows] + [min(c, n_rows) for c in cuts]))
    return list(zip(edges[:-1], edges[1:]))


def _run_blocks(fn, blocks):
    """``fn(i, (r0, r1))`` for every block, concurrently."""
    run_parallel(lambda i: fn(i, blocks[i]), list(range(len(blocks))))


def spmm(a, y):
    """``a @ y`` for a CSR ``a`` [M, K] and a dense ``y`` [K, N].

    Returns
    -------
    ndarray [M, N]
        In ``numpy.result_type`` of the two; duplicates of ``a`` are summed.
    """
    (m, k), n = a.shape, y.shape[1]
    dtype = np.result_type(a.values.dtype, y.dtype)
    if n == 0 or a.nnz == 0:
        return np.zeros((m, n), dtype)
    indptr, indices = index_arrays(a.crows, a.cols)
    data = np.ascontiguousarray(a.values, dtype=dtype)
    dense = np.ascontiguousarray(y, dtype=dtype)
    blocks = row_blocks(indptr, PIECES_PER_THREAD)   # a late thread leaves its share
    if n > 1 and compiles(dtype):
        out = pool.empty((m, n), dtype)          # the loop writes every row
        _run_blocks(lambda i, block: _spmm_loop(indptr, indices, data, dense, out, *block,
                                                dtype.type(0)), blocks)
        return out
    out = np.zeros((m, n), dtype)

    def rows(i, block):
        r0, r1 = block
        head = (r1 - r0, k) if n == 1 else (r1 - r0, k, n)   # csr_matvec is faster for one
        kernel = _sparsetools.csr_matvec if n == 1 else _sparsetools.csr_matvecs
        kernel(*head, indptr[r0:r1 + 1], indices, data, dense.reshape(-1),
               out[r0:r1].reshape(-1))
    _run_blocks(rows, blocks)
    return out


@loop
def _spmm_loop(indptr, indices, data, y, out, r0, r1, zero):
    """Rows [r0, r1) of :func:`spmm`: each row of y an entry names, scaled by its value,
    added into a row buffer in the entries' order (scipy's ``csr_matvecs`` order, so the
    sums are its bits), the adds over y's columns vectorized.  At 20000^2 with nnz 1e6
    @ [20000, 64] float32 on one thread (AMD EPYC VM, 2026-11-28): 10.0 ms against
    csr_matvecs' 13.1; at nnz 1e7, 89.9 against 126.9.  The row of y that entry
    ``e + AHEAD`` reads is prefetched (on the Intel Xeon VM, one thread,
    2026-11-28: 16.1 -> 15.3 ms, the minimum of 15 calls 13.4 -> 11.4 in another
    run).  A column index out of range (only a corrupted pattern could carry one)
    reads the nearest row of y."""
    n, last, stop = y.shape[1], y.shape[0] - 1, indices.shape[0] - AHEAD
    acc = np.empty(n, out.dtype)
    for i in range(r0, r1):
        for t in range(n):
            acc[t] = zero
        for e in range(indptr[i], indptr[i + 1]):
            if e < stop:
                prefetch_row(y, indices[e + AHEAD])
            v, c = data[e], min(max(indices[e], 0), last)     # clipped: never outside y
            for t in range(n):
                acc[t] += v * y[c, t]
        for t in range(n):
            out[i, t] = acc[t]


def check_product_size(a, b, dtype, op):
    """ValueError naming ``op`` before SpGEMM's passes when CSR ``a @ b`` cannot fit: the
    products through one inner index k land on distinct coordinates (a's column k times
    b's row k), and every structural product is stored, so the largest such block is a
    lower bound on the result's entries, found in one pass over a's columns.  (Counting
    the result exactly is a pass over every product: about 1e12 steps for a column of
    2**20 entries times a row of as many.)  Where even a's entries times b's longest row
    fit, that pass is skipped (it cost 2 ms of a 110 ms product of 1e6-entry operands)."""
    xp = xp_of(a.cols)
    k = b.shape[0]
    if a.nnz == 0 or b.nnz == 0 or k == 0:
        return
    per_row = xp.diff(b.crows[:k + 1])
    entry = 8 + np.dtype(dtype).itemsize
    if a.nnz * int(per_row.max()) * entry <= memory_limit():
        return
    per_column = xp.bincount(a.cols, minlength=k)[:k]
    least = int((per_column.astype(xp.float64) * per_row).max())
    check_bytes(op, f"the product of shape [{a.shape[0]}, {b.shape[1]}] (at least {least} "
                f"entries)", least * entry, "of entries")


def transpose(a):
    """``a.T`` as CSR (scipy's ``csr_tocsc``); each row of ``a.T`` keeps ``a``'s row order."""
    m, n = a.shape
    indptr, indices = index_arrays(a.crows, a.cols, extent=a.nnz)
    values = np.ascontiguousarray(a.values)
    t_ptr = np.empty(n + 1, indptr.dtype)
    t_idx = np.empty(a.nnz, indptr.dtype)
    t_val = np.empty(a.nnz, values.dtype)
    _sparsetools.csr_tocsc(m, n, indptr, indices, values, t_ptr, t_idx, t_val)
    return CsrData(t_ptr, t_idx, t_val, (n, m))


def spgemm(a, b, op="matmul"):
    """``a @ b`` for CSR ``a`` [M, K] and ``b`` [K, N]: CSR [M, N] (Gustavson's algorithm).

    One entry per structurally nonzero coordinate: products that cancel to
    zero are kept as stored zeros (scipy's ``csr_matmat`` drops them; a
    pattern that depended on the values would break gradients).  Columns
    within a row come in ``csr_matmat``'s order, not sorted, and every sum is
    its sum, in its order.  Index dtype: int32 when the inputs' and the
    result's sizes allow, else int64.  A product that cannot fit in memory
    raises ValueError naming ``op`` first (:func:`check_product_size`).
    Real dtypes run the compiled loop (:func:`_spgemm_compiled`); complex ones
    (numba rounds a complex product differently) and installs without numba
    run scipy's ``csr_matmat_maxnnz`` and ``csr_matmat``.
    """
    (m, _), n = a.shape, b.shape[1]
    dtype = np.result_type(a.values.dtype, b.values.dtype)
    check_product_size(a, b, dtype, op)
    ap, aj, bp, bj = index_arrays(a.crows, a.cols, b.crows, b.cols, extent=n)
    ax = np.ascontiguousarray(a.values, dtype=dtype)
    bx = np.ascontiguousarray(b.values, dtype=dtype)
    if compiles(dtype) and dtype.kind != "c":
        return _spgemm_compiled(ap, aj, ax, bp, bj, bx, (m, n))
    blocks = row_blocks(ap, SPGEMM_BLOCKS_PER_THREAD)
    counts = [0] * len(blocks)

    def count(i, block):
        r0, r1 = block
        counts[i] = _sparsetools.csr_matmat_maxnnz(r1 - r0, n, ap[r0:r1 + 1], aj, bp, bj)
    _run_blocks(count, blocks)
    offsets = np.cumsum([0] + counts).tolist()
    if offsets[-1] > INT32_MAX:
        ap, aj, bp, bj = index_arrays(ap, aj, bp, bj, extent=offsets[-1])
    cp = np.zeros(m + 1, ap.dtype)
    cj = np.empty(offsets[-1], ap.dtype)
    cx = np.empty(offsets[-1], dtype)

    def numeric(i, block):
        r0, r1 = block
        s, e = offsets[i], offsets[i + 1]
        part = np.empty(r1 - r0 + 1, ap.dtype)
        args = (r1 - r0, n, ap[r0:r1 + 1], aj)
        _sparsetools.csr_matmat(*args, ax, bp, bj, bx, part, cj[s:e], cx[s:e])
        if part[-1] < e - s:
            part = _restore_cancelled(args, bp, bj, part, cj[s:e], cx[s:e])
        cp[r0 + 1:r1 + 1] = part[1:] + s
    _run_blocks(numeric, blocks)
    return CsrData(cp, cj, cx, (m, n))


def _spgemm_compiled(ap, aj, ax, bp, bj, bx, shape):
    """:func:`spgemm` by the compiled loop, in one pass over the products.

    Each row's products with b bound its entries (:func:`_spgemm_bound`, one
    pass over a's entries), so the result is written at once into room for
    the bound, with no counting pass first (scipy's ``csr_matmat_maxnnz`` is
    one): on one thread, 100000^2 float32 operands of 1e6 entries each took
    135 ms against scipy's 191 for ``a @ b`` (Intel Xeon VM, 2026-11-28).
    On threads the rows are cut into an even number of blocks of about equal
    products, in pairs: the first of a pair writes its rows backwards, ending
    where the second starts writing, so that the pair's entries meet with no
    gap whatever collided (:func:`_spgemm_rows`).  One pair (two threads) is
    the result as it stands; more pairs are copied together.  Where the bound
    exceeds a quarter of the memory limit (products that mostly collide),
    scipy's count sizes each block exactly instead (:func:`_counted`).
    """
    m, n = shape
    cap = np.empty(m + 1, np.uint64)
    uap, uaj, ubp = jit.unsigned(ap, aj, bp)
    bound = int(_spgemm_bound(uap, uaj, ubp, cap, jit.one(uap)))
    if max(bound, m + 1) > INT32_MAX:
        ap, aj, bp, bj = index_arrays(ap, aj, bp, bj, extent=max(bound, m + 1))
    nbytes = bound * (ap.dtype.itemsize + ax.dtype.itemsize)
    cuts = _paired_cuts(cap, nbytes)
    if nbytes > memory_limit() // 4:
        cap, bound = _counted(ap, aj, bp, bj, n, cuts)
    cj, cx = np.empty(bound, ap.dtype), np.empty(bound, ax.dtype)
    cp = np.empty(m + 1, ap.dtype)
    blocks = list(zip(cuts, cuts[1:]))
    ends = [0] * len(blocks)

    def run(i):
        r0, r1 = blocks[i]
        backward = len(blocks) > 1 and i % 2 == 0
        ends[i] = _spgemm_block(ap, aj, ax, bp, bj, bx, n, r0, r1,
                                int(cap[r1 if backward else r0]), backward, cp, cj, cx)
    run_parallel(run, list(range(len(blocks))))
    return _joined(cp, cj, cx, cuts, ends, shape)


def _paired_cuts(cap, nbytes):
    """Row boundaries of blocks of about equal products (``cap``: the rows' bounds,
    cumulated): one block, or an even number, one per thread.  Unlike
    :func:`~kernels.funcs.threads.balanced_cuts`, a repeated cut is kept (an empty
    block), so that the blocks still come in pairs."""
    parts = min(block_count(nbytes), num_threads())
    if parts < 2 or cap.shape[0] < 3:
        return [0, cap.shape[0] - 1]
    parts += parts % 2
    cuts = np.searchsorted(cap, np.linspace(0, int(cap[-1]), parts + 1)[1:-1].astype(np.uint64))
    return [0, *np.clip(cuts, 1, cap.shape[0] - 2).tolist(), cap.shape[0] - 1]


def _counted(ap, aj, bp, bj, n, cuts):
    """Exact room per block (scipy's ``csr_matmat_maxnnz``), as cumulated bounds at the
    cuts (only those entries of the returned array are read), and the total."""
    cap = np.zeros(ap.shape[0], np.uint64)
    for r0, r1 in zip(cuts, cuts[1:]):
        cap[r1] = cap[r0] + _sparsetools.csr_matmat_maxnnz(r1 - r0, n, ap[r0:r1 + 1], aj, bp, bj)
    return cap, int(cap[cuts[-1]])


def _spgemm_block(ap, aj, ax, bp, bj, bx, n, r0, r1, at, backward, cp, cj, cx):
    """Rows [r0, r1) by :func:`_spgemm_rows`, from (or, ``backward``, up to) entry ``at``
    of ``cj``/``cx``; their starts into ``cp[r0:r1]``.  Returns where the rows end (or,
    backward, begin)."""
    mark = np.full(n, -1, np.int64)
    uap, uaj, ubp, ubj, ucp, ucj = jit.unsigned(ap, aj, bp, bj, cp, cj)
    return int(_spgemm_rows(uap, uaj, ax, ubp, ubj, bx, r0, r1, ucj.dtype.type(at), backward,
                            ucp, ucj, cx, mark, np.empty(n, ucj.dtype), np.empty(n, cx.dtype),
                            cx.dtype.type(0), jit.one(uap), *_lasts(ubp, n)))


def _lasts(ubp, n):
    """b's last row and last column (0 for none) in the unsigned index dtype."""
    return ubp.dtype.type(max(ubp.shape[0] - 2, 0)), ubp.dtype.type(max(n - 1, 0))


def _joined(cp, cj, cx, cuts, ends, shape):
    """The result from the blocks written in pairs (see :func:`_spgemm_compiled`): ``cp``
    holds where each row starts in ``cj``/``cx``, ``ends`` what each block returned;
    each pair's entries are contiguous.  One pair, or one block, is a view; more are
    copied together on threads."""
    if len(ends) == 1:
        pairs, spans = [(0, shape[0])], [(0, ends[0])]
    else:
        pairs = [(cuts[k], cuts[k + 2]) for k in range(0, len(ends), 2)]
        spans = [(ends[k], ends[k + 1]) for k in range(0, len(ends), 2)]
    cp[-1] = spans[-1][1]
    if len(pairs) == 1:
        (first, last), = spans
        cp -= cp.dtype.type(first)
        if 2 * (last - first) < cj.shape[0]:      # far fewer entries than products
            return CsrData(cp, cj[first:last].copy(), cx[first:last].copy(), shape)
        return CsrData(cp, cj[first:last], cx[first:last], shape)
    starts = np.cumsum([0] + [e - s for s, e in spans]).tolist()
    out_j, out_x = np.empty(starts[-1], cj.dtype), np.empty(starts[-1], cx.dtype)
    row_starts = np.empty_like(cp)

    def place(k):
        (r0, r1), (s, e), at = pairs[k], spans[k], starts[k]
        out_j[at:at + e - s], out_x[at:at + e - s] = cj[s:e], cx[s:e]
        row_starts[r0:r1] = cp[r0:r1] - cp.dtype.type(s) + cp.dtype.type(at)
    run_parallel(place, list(range(len(pairs))))
    row_starts[-1] = starts[-1]
    return CsrData(row_starts, out_j, out_x, shape)


@loop
def _spgemm_bound(ap, aj, bp, cap, one):
    """``cap[i + 1] = cap[i] +`` row i of a's products with b (a bound on its entries);
    returns the total."""
    total = cap.dtype.type(0)
    cap[0] = total
    for i in range(ap.shape[0] - 1):
        e, end = ap[i], ap[i + 1]
        while e < end:
            k = aj[e]
            total += bp[k + one] - bp[k]
            e += one
        cap[i + 1] = total
    return total


@loop
def _spgemm_rows(ap, aj, ax, bp, bj, bx, lo, hi, at, backward, cp, cj, cx, mark, seen, sums,
                 zero, one, last_k, last_j):
    """Rows [lo, hi) of a @ b (Gustavson's algorithm), as scipy's ``csr_matmat`` computes
    them, but keeping every structural entry: each column a row reaches is marked
    (``mark``) and listed (``seen``) the first time, its sum started from ``zero``;
    the row's entries are written last found first (``csr_matmat``'s linked list
    gives that order).  The rows are written from entry ``at`` on, or ``backward``:
    the last row first, ending at ``at``.  ``cp[i]`` gets where row i starts; returns
    where the rows end (backward: where they begin).  Indices past b's rows or columns
    (only a corrupted pattern could hold one) are clipped, so nothing is read or written
    outside the arrays (``last_k``, ``last_j``: b's last row and column)."""
    nothing = one - one
    n = at
    for t in range(hi - lo):
        i = hi - 1 - t if backward else lo + t
        count = nothing
        e, end = ap[i], ap[i + 1]
        while e < end:
            k, v = min(aj[e], last_k), ax[e]
            f, stop = bp[k], bp[k + one]
            while f < stop:
                j = min(bj[f], last_j)
                if mark[j] != i:
                    mark[j] = i
                    seen[count] = j
                    count += one
                    sums[j] = zero + v * bx[f]
                else:
                    sums[j] += v * bx[f]
                f += one
            e += one
        start = n - count if backward else n
        w = start
        while count != nothing:
            count -= one
            j = seen[count]
            cj[w], cx[w] = j, sums[j]
            w += one
        cp[i] = start
        n = start if backward else w
    return n


def _restore_cancelled(args, bp, bj, part, cols, values):
    """Put back the entries ``csr_matmat`` dropped because their products summed to 0.

    The block is recomputed on booleans (all true, so nothing cancels) for the
    structural pattern; within a row, the computed entries are an
    order-preserving subsequence of it.  Rows that lost nothing map entry for
    entry; only the entries of rows that lost some are matched by
    coordinate.  ``cols`` and ``values`` are rewritten in place; returns the
    block's structural row pointers.
    """
    n_rows, n = args[0], args[1]
    kept = int(part[-1])
    found_cols, found_values = cols[:kept].copy(), values[:kept].copy()
    full = np.empty_like(part)
    _sparsetools.csr_matmat(*args, np.ones(args[3].shape[0], bool), bp, bj,
                            np.ones(bj.shape[0], bool), full, cols,
                            np.empty(cols.shape[0], bool))
    counts, full_counts = np.diff(part), np.diff(full)
    intact = counts == full_counts
    row = np.repeat(np.arange(n_rows, dtype=np.int64), counts)
    same = intact[row]
    pos = np.empty(kept, np.int64)
    pos[same] = (full[:-1] - part[:-1]).astype(np.int64)[row[same]] + np.flatnonzero(same)
    full_row = np.repeat(np.arange(n_rows, dtype=np.int64), full_counts)
    where = np.flatnonzero(~intact[full_row])
    keys = full_row[where] * n + cols[where]
    order = np.argsort(keys, kind="stable")
    lost = ~same
    found = row[lost] * n + found_cols[lost]
    pos[lost] = where[order[np.searchsorted(keys, found, sorter=order)]]
    values[:] = 0
    values[pos] = found_values
    return full


def sddmm_block(k, dtype):
    """Entries per SDDMM block for inner dimension ``k`` and ``dtype`` (never the threads)."""
    return max(64, SDDMM_BLOCK_BYTES // max(1, k * np.dtype(dtype).itemsize))


def sddmm(rows, cols, x, yt, crows=None):
    """``out[e] = sum_j x[rows[e], j] * yt[cols[e], j]``: ``x @ yt.T`` at the given entries.

    Parameters
    ----------
    rows, cols : 1-D integer arrays, one pair per entry (valid indices); ``rows`` may
        be None when ``crows`` is given
    x : ndarray [M, K]
    yt : ndarray [N, K]
    crows : the row pointers of a 2-D CSR pattern whose entries these are, in its
        order (then the loop walks them and no row ids are made)

    Returns
    -------
    ndarray [len(cols)] in ``numpy.result_type(x, yt)``
    """
    dtype = np.result_type(x.dtype, yt.dtype)
    nnz, k = cols.shape[0], x.shape[1]
    if nnz == 0 or k == 0:
        return np.zeros(nnz, dtype)
    out = pool.empty((nnz,), dtype)         # every entry is written below
    x = np.ascontiguousarray(x, dtype=dtype)
    yt = np.ascontiguousarray(yt, dtype=dtype)
    if not compiles(dtype):
        rows = row_ids(crows, np.empty(nnz, crows.dtype)) if rows is None else rows
        _sddmm_gathered(rows, cols, x, yt, out)
        return out
    lead, cols = index_arrays(crows if rows is None else rows, cols)

    def run(piece):
        span = range(nnz)[piece[0]] if piece else range(nnz)
        _sddmm_loop(lead, cols, x, yt, out, span.start, span.stop, dtype.type(0), rows is None)
    run_parallel(run, split_index((nnz,), nnz * k * dtype.itemsize))
    return out


@loop(reassoc=True)
def _sddmm_loop(lead, cols, x, yt, out, lo, hi, zero, pointers):
    """Entries ``lo`` to ``hi`` of :func:`sddmm`, each summed from ``zero`` (the out
    dtype's +0, as einsum starts; a sum over all k, not k - 1 after a first product,
    keeps the vectorized loop free of a scalar tail: 9.7 against 14.8 ms at k = 64).

    The row of yt that entry ``e + AHEAD`` reads is prefetched (7.7 -> 6.5 ms
    at nnz 1e6 and k = 64 on one thread; 8-16 entries ahead did best).

    ``lead`` is each entry's row, or with ``pointers`` a CSR pattern's row pointers:
    the first row then comes from a binary search and the walk moves on row by row
    (0.5 ms less at nnz 1e6 than making the row ids first).  An index out of range
    is clipped, as ``numpy.take(mode="clip")`` does, so no input makes it read
    outside x or yt.
    """
    m, n, k = x.shape[0], yt.shape[0], x.shape[1]
    last = min(lead.shape[0] - 1, m) - 1
    r = min(max(np.searchsorted(lead, lo, side="right") - 1, 0), last) if pointers else 0
    for e in range(lo, hi):
        if e + AHEAD < hi:
            prefetch_row(yt, cols[e + AHEAD])
        if pointers:
            while r < last and lead[r + 1] <= e:
                r += 1
        else:
            r = min(max(lead[e], 0), m - 1)
        c = min(max(cols[e], 0), n - 1)
        acc = zero
        for j in range(k):
            acc += x[r, j] * yt[c, j]
        out[e] = acc


def _sddmm_gathered(rows, cols, x, yt, out):
    """:func:`sddmm` for dtypes :mod:`kernels.funcs.jit` does not compile: both rows of
    each entry gathered into a block, reduced by ``einsum``."""
    nnz, k = rows.shape[0], x.shape[1]
    step = sddmm_block(k, out.dtype)
    starts = list(range(0, nnz, step))
    groups = np.array_split(np.arange(len(starts)), min(num_threads(), len(starts)))

    def run(group):
        left, right = np.empty((step, k), out.dtype), np.empty((step, k), out.dtype)
        for s in (starts[i] for i in group):
            e = min(s + step, nnz)
            a, b = left[:e - s], right[:e - s]
            np.take(x, rows[s:e], axis=0, out=a, mode="clip")
            np.take(yt, cols[s:e], axis=0, out=b, mode="clip")
            np.einsum("ij,ij->i", a, b, out=out[s:e])
    run_parallel(run, [g for g in groups if g.size])
