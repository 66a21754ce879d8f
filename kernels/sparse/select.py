"""Sparse slice and index_select (COO with dense dims; CSR 2-D and batched 3-D), with backward.

Both keep some stored entries (index_select may repeat them) and renumber
their coordinates; every output entry copies one input entry, its source.
The bounds and index checks are :mod:`kernels.funcs.slicing`'s, shared with
dense slice and index_select.

- Along a COO sparse dim: slice keeps the entries inside the window (a
  mask); index_select repeats each entry once per position of ``index``
  naming its coordinate (:func:`kernels.sparse.segments.select_expansion`).
  Entries keep their storage order, so slice keeps the coalesced flag and
  index_select keeps it when ``index`` is strictly increasing.
- Along a COO dense dim: the values are sliced or taken; indices are shared.
- CSR, along the batch or row axis: each output row is one input row, a run
  of consecutive entries, so only crows are computed and the runs are
  copied (a contiguous row slice of a 2-D CSR shares its buffers).  Along
  the col axis: a mask (slice) or the expansion (index_select) within rows.

Gradient: each stored entry of x gets the upstream value at its image, zero
where it was cut away, summed over its images where it was repeated.
"""
import numpy as np
from scipy.sparse import _sparsetools

from ..core.dtypes import ALL
from ..core.registry import register_kernel
from ..core.size import check_bytes
from ..core.xp import add_at, xp_of
from ..funcs import pool
from ..funcs.restride import index_dtype
from ..funcs.threads import balanced_cuts, run_parallel
from ..funcs.slicing import cached_slice, check_select_values, resolve_index_select
from .data import CooData, CsrData
from .segments import (compiled_values, crows_of_lengths, expand_ranges, row_ranges,
                       scatter_back, segment_counts, select_expansion)

COO, CSR = "sparse_coo", "sparse_csr"
#: Entries from which a CSR row gather goes through scipy's compiled loop on the CPU.
SCIPY_MIN_NNZ = 1 << 16
#: Output bytes per thread from which the row gather splits: its short copies run at a
#: fraction of a streaming copy's rate, so it pays for a thread's wake-up sooner than
#: split_index's 4 MiB floor.  10000 random rows of a 20000 x 20000 float32 CSR with
#: nnz 1e6 (6 MB out) on an AMD EPYC VM, 2 threads (2026-11-27, interleaved medians):
#: 0.93 ms whole, 0.64-0.70 split from 2 MiB, 0.71 from 1 MiB.
ROW_GATHER_BYTES_PER_THREAD = 2 << 20


def _cut(window, shape, axis):
    return (window[axis].start, window[axis].stop) != (0, shape[axis])


def _dense_part(values, window, sparse_dim):
    """``values`` restricted to the dense dims' window (shared when nothing is cut)."""
    inner = tuple(window[sparse_dim:])
    if all((s.start, s.stop) == (0, n) for s, n in zip(inner, values.shape[1:])):
        return values
    return values[(slice(None),) + inner]


# ---------------------------------------------------------------- COO slice
def coo_slice_sources(x, window):
    """The entries of COO x inside the window's sparse part: a slice (all) or int64 positions."""
    xp = xp_of(x.indices)
    keep = None
    for d in range(x.sparse_dim):
        if _cut(window, x.shape, d):
            row = x.indices[d]
            inside = (row >= window[d].start) & (row < window[d].stop)
            keep = inside if keep is None else keep & inside
    return slice(0, x.nnz) if keep is None else xp.flatnonzero(keep)


@register_kernel("slice_coo", layout=COO, backends=("cpu", "gpu"), dtypes=ALL)
def slice_coo(x, axes, starts, ends):
    """The stored entries of x inside the window, coordinates shifted to its origin."""
    window = cached_slice(x.shape, axes, starts, ends)
    src = coo_slice_sources(x, window)
    indices = x.indices[:, src]
    shift = [w.start for w in window[:x.sparse_dim]]
    if any(shift):
        xp = xp_of(indices)
        indices = indices - xp.asarray(shift, dtype=indices.dtype)[:, None]
    values = _dense_part(x.values[src], window, x.sparse_dim)
    shape = tuple(w.stop - w.start for w in window)
    return CooData(indices, values, shape, x.coalesced, unique=x.unique)


@register_kernel("slice_coo_grad", layout=COO, backends=("cpu", "gpu"), dtypes=ALL)
def slice_coo_grad(x, out_grad, axes, starts, ends):
    """out_grad at each kept entry of x (inside the dense window), zero elsewhere."""
    window = cached_slice(x.shape, axes, starts, ends, "slice_grad")
    src = coo_slice_sources(x, window)
    xp = xp_of(out_grad.values)
    g = xp.zeros(x.values.shape, dtype=out_grad.values.dtype)
    g[(src,) + tuple(window[x.sparse_dim:])] = out_grad.values
    return x._replace(values=g)


# ---------------------------------------------------------------- CSR rows
def _first_of_run(xp, grows):
    """The first row when ``grows`` are consecutive rows (one run of entries), else None."""
    n = grows.shape[0]
    if n and int(grows[-1]) - int(grows[0]) == n - 1 and bool(xp.all(xp.diff(grows) == 1)):
        return int(grows[0])
    return None


def csr_runs(x, grows):
    """Crows lengths and sources of a CSR whose output rows copy x's global rows ``grows``.

    Returns
    -------
    lengths, src
        Each output row's entry count, and the input entry of every output
        entry: a slice when the rows are one consecutive run of x's rows.
    """
    return runs_of(*row_ranges(x.crows, x.batch, x.shape[-2]), grows)


def runs_of(starts, lengths, grows):
    """:func:`csr_runs` from every row's global start and length."""
    g0 = _first_of_run(xp_of(grows), grows)
    if g0 is not None:
        n = lengths[g0:g0 + grows.shape[0]]
        return n, slice(int(starts[g0]), int(starts[g0]) + int(n.sum()))
    return lengths[grows], expand_ranges(starts[grows], lengths[grows])


def take_rows(x, grows):
    """Row lengths, cols and values of the CSR whose rows are x's global rows ``grows``.

    The forward of :func:`csr_runs`: on the CPU the runs are copied by
    :func:`_row_gather` once x holds :data:`SCIPY_MIN_NNZ` entries (below,
    the copy is cheaper than the call); a consecutive run of rows shares x's
    buffers.
    """
    xp = xp_of(x.cols)
    starts, lengths = row_ranges(x.crows, x.batch, x.shape[-2])
    if xp is not np or x.nnz < SCIPY_MIN_NNZ or _first_of_run(xp, grows) is not None:
        out_lengths, src = runs_of(starts, lengths, grows)
        return out_lengths, x.cols[src], x.values[src]
    out_lengths = lengths[grows]
    return (out_lengths,) + _row_gather(x, starts, grows, out_lengths)


def _row_gather(x, starts, grows, out_lengths):
    """Cols and values of x's global rows ``grows``, by scipy's compiled row gather.

    ``csr_row_index`` (behind scipy's fancy row indexing) is called directly
    over x seen as one ``[batch * rows, cols]`` matrix, into pooled outputs,
    on blocks of rows holding equal shares of the output on threads (the
    loop releases the GIL; each block writes its own slice of the output, so
    the result does not depend on the threads).
    """
    offsets = np.zeros(grows.shape[0] + 1, np.int64)
    np.cumsum(out_lengths, out=offsets[1:])
    bounds, cols, rows = _row_index_arrays(x, starts, grows)
    out_cols = pool.empty((int(offsets[-1]),), cols.dtype)
    out_values = pool.empty((int(offsets[-1]),), x.values.dtype)
    values, out = compiled_values(x.values), compiled_values(out_values)
    cuts = balanced_cuts(offsets, out_cols.nbytes + out.nbytes, ROW_GATHER_BYTES_PER_THREAD)

    def block(i):
        r0, r1 = cuts[i], cuts[i + 1]
        o0, o1 = int(offsets[r0]), int(offsets[r1])
        _sparsetools.csr_row_index(r1 - r0, rows[r0:r1], bounds, cols, values, out_cols[o0:o1],
                                   out[o0:o1])
    run_parallel(block, list(range(len(cuts) - 1)))
    return out_cols, out_values


def _row_index_arrays(x, starts, grows):
    """Row bounds, cols and rows for ``csr_row_index``, in x's index dtype while nnz fits it."""
    narrow = x.cols.dtype == np.int32 and x.nnz <= np.iinfo(np.int32).max
    dtype = np.int32 if narrow else np.int64
    if x.batch == 1:                         # a 2-D CSR's crows are its row bounds
        bounds = x.crows.astype(dtype, copy=False)
    else:
        bounds = np.empty(starts.shape[0] + 1, dtype)
        bounds[:-1], bounds[-1] = starts, x.nnz
    return bounds, x.cols.astype(dtype, copy=False), grows.astype(dtype, copy=False)


def _global_rows(xp, shape, batches, rows):
    """x's global row ids (``batch * rows + row``) for every (batch, row) pair, batch-major."""
    return (batches[:, None] * shape[-2] + rows[None, :]).reshape(-1)


def csr_build(x, lengths, cols, values, out_shape):
    """A CsrData of ``out_shape`` from row lengths, cols and values in output order."""
    xp = xp_of(x.cols)
    batch = out_shape[0] if len(out_shape) == 3 else 1
    dtype = index_dtype(out_shape, x.cols.dtype, extent=int(lengths.sum()), xp=xp)
    crows = crows_of_lengths(lengths.astype(dtype), batch, out_shape[-2], dtype)
    return CsrData(crows, cols.astype(dtype, copy=False), values, tuple(out_shape))


def csr_slice_parts(x, window):
    """Row lengths, sources and cols of the entries of CSR x inside the window."""
    xp = xp_of(x.cols)
    b = window[0] if len(x.shape) == 3 else slice(0, 1)
    rows = window[-2]
    grows = _global_rows(xp, x.shape, xp.arange(b.start, b.stop), xp.arange(rows.start, rows.stop))
    lengths, src = csr_runs(x, grows)
    cols = x.cols[src]
    if _cut(window, x.shape, len(x.shape) - 1):
        c = window[-1]
        keep = (cols >= c.start) & (cols < c.stop)
        lengths = segment_counts(keep, lengths)
        src = xp.flatnonzero(keep) + src.start if isinstance(src, slice) else src[keep]
        cols = cols[keep] - c.start
    return lengths, src, cols


@register_kernel("slice_csr", layout=CSR, backends=("cpu", "gpu"), dtypes=ALL)
def slice_csr(x, axes, starts, ends):
    """The entries of x inside the window, as CSR; see the module docstring."""
    window = cached_slice(x.shape, axes, starts, ends)
    lengths, src, cols = csr_slice_parts(x, window)
    return csr_build(x, lengths, cols, x.values[src], tuple(w.stop - w.start for w in window))


@register_kernel("slice_csr_grad", layout=CSR, backends=("cpu", "gpu"), dtypes=ALL)
def slice_csr_grad(x, out_grad, axes, starts, ends):
    """out_grad at each kept entry of x, zero elsewhere."""
    window = cached_slice(x.shape, axes, starts, ends, "slice_grad")
    src = csr_slice_parts(x, window)[1]
    return x._replace(values=scatter_back(x.nnz, src, out_grad.values))


# ---------------------------------------------------------------- index_select
def _checked(x, index, axis, op="index_select"):
    axis = resolve_index_select(x.shape, index, axis, op)
    check_select_values(index, x.shape[axis], axis, op)
    return axis


@register_kernel("index_select_coo", layout=COO, backends=("cpu", "gpu"), dtypes=ALL)
def index_select_coo(x, index, axis=0):
    """x's entries whose coordinate along ``axis`` is selected, once per selecting position."""
    axis = _checked(x, index, axis)
    shape = x.shape[:axis] + (index.shape[0],) + tuple(x.shape[axis + 1:])
    xp = xp_of(x.indices)
    if axis >= x.sparse_dim:
        values = xp.take(x.values, index, axis=axis - x.sparse_dim + 1)
        return CooData(x.indices, values, shape, x.coalesced, unique=x.unique)
    src, new = _expansion(x, index, axis, shape)
    indices = x.indices[:, src].astype(index_dtype(shape[:x.sparse_dim], x.indices.dtype, xp=xp),
                                       copy=False)
    indices[axis] = new
    increasing = index.shape[0] < 2 or index.strides[0] != 0 and bool(
        xp.all(index[1:] > index[:-1]))     # a broadcast index repeats its one value
    # each selecting position is a coordinate of its own: an x storing each once gives
    # an output storing each once, repeated indices or not
    return CooData(indices, x.values[src], shape, x.coalesced and increasing,
                   unique=x.coalesced or x.unique)


def _expansion(x, index, axis, shape):
    """:func:`select_expansion` along sparse dim ``axis``, with work that follows x's
    entries and the output's, not a broadcast index's length: no entries select nothing,
    and a broadcast (stride-0) index of one value v repeats x's entries at v, an output
    whose size is checked first (ValueError naming index_select)."""
    xp = xp_of(x.indices)
    coord = x.indices[axis]
    if coord.shape[0] == 0 or index.shape[0] == 0:
        return xp.zeros(0, xp.int64), xp.zeros(0, xp.int64)
    if index.strides[0] != 0:
        return select_expansion(coord, index, x.shape[axis])
    hit = xp.flatnonzero(coord == index[0])
    n = index.shape[0]
    per_entry = x.indices.shape[0] * 8 + x.values[:1].nbytes
    check_bytes("index_select", f"the output of shape {list(shape)}", hit.shape[0] * n
                * per_entry, "of entries")
    return xp.repeat(hit, n), xp.tile(xp.arange(n), hit.shape[0])


@register_kernel("index_select_coo_grad", layout=COO, backends=("cpu", "gpu"), dtypes=ALL)
def index_select_coo_grad(x, index, out_grad, axis=0):
    """Each entry's upstream values summed over its images (zero where none)."""
    axis = _checked(x, index, axis, "index_select_grad")
    xp = xp_of(out_grad.values)
    g = out_grad.values
    if axis >= x.sparse_dim:
        d = axis - x.sparse_dim + 1
        out = xp.zeros(x.values.shape, dtype=g.dtype)
        add_at(out, (slice(None),) * d + (index,), g)
        return x._replace(values=out)
    src = select_expansion(x.indices[axis], index, x.shape[axis])[0]
    return x._replace(values=scatter_back(x.nnz, src, g))


def select_rows(x, index, axis):
    """x's global rows, in output order, of an index_select along the batch or row axis."""
    xp = xp_of(x.cols)
    index = index.astype(xp.int64, copy=False)
    if axis == len(x.shape) - 2:
        return index if x.batch == 1 else _global_rows(xp, x.shape, xp.arange(x.batch), index)
    return _global_rows(xp, x.shape, index, xp.arange(x.shape[-2]))


def select_cols(x, index):
    """Row lengths, sources and new cols of an index_select along the col axis."""
    xp = xp_of(x.cols)
    lengths = row_ranges(x.crows, x.batch, x.shape[-2])[1]
    src, new = select_expansion(x.cols, index, x.shape[-1])
    return segment_counts(xp.bincount(src, minlength=x.nnz), lengths), src, new


@register_kernel("index_select_csr", layout=CSR, backends=("cpu", "gpu"), dtypes=ALL)
def index_select_csr(x, index, axis=0):
    """x's batches, rows or cols selected by ``index``, as CSR; see the module docstring."""
    axis = _checked(x, index, axis)
    shape = x.shape[:axis] + (index.shape[0],) + tuple(x.shape[axis + 1:])
    if axis == len(x.shape) - 1:
        lengths, src, cols = select_cols(x, index)
        return csr_build(x, lengths, cols, x.values[src], shape)
    return csr_build(x, *take_rows(x, select_rows(x, index, axis)), shape)


@register_kernel("index_select_csr_grad", layout=CSR, backends=("cpu", "gpu"), dtypes=ALL)
def index_select_csr_grad(x, index, out_grad, axis=0):
    """Each entry's upstream values summed over its images (zero where none)."""
    axis = _checked(x, index, axis, "index_select_grad")
    if axis == len(x.shape) - 1:
        src = select_cols(x, index)[1]
    else:
        src = csr_runs(x, select_rows(x, index, axis))[1]
    return x._replace(values=scatter_back(x.nnz, src, out_grad.values))
