"""Checks of sparse buffers at construction: clear errors instead of crashes later.

Shapes and lengths raise ValueError, index values out of range IndexError.
The value checks are reductions (min, max, sums), xp-generic, and run before
the tensor exists.
"""
from ..core.size import MAX_DIMS
from ..core.xp import xp_of
from ..infermeta.sparse import check_csr_rank


def check_coo(indices, values, shape, op="sparse_coo_tensor"):
    """Validate COO buffers: indices [sparse_dim, nnz], values [nnz, *dense], shape.

    Raises
    ------
    ValueError
        Wrong ranks, lengths that disagree, or a shape whose rank or dense
        dims do not fit the indices and values.
    IndexError
        A negative index, or one not below its dim's size.
    """
    if indices.ndim != 2 or indices.shape[0] == 0:
        raise ValueError(f"{op}: indices must be 2-D [sparse_dim, nnz] with sparse_dim >= 1, "
                         f"got shape {list(indices.shape)}")
    sparse_dim, nnz = indices.shape
    if values.ndim == 0 or values.shape[0] != nnz:
        raise ValueError(f"{op}: values must have shape [nnz, *dense_dims] with nnz = {nnz} "
                         f"(the indices' length), got shape {list(values.shape)}")
    dense = tuple(values.shape[1:])
    if len(shape) > MAX_DIMS:
        raise ValueError(f"{op}: shape has {len(shape)} dims; a tensor has at most {MAX_DIMS} "
                         "(numpy's limit)")
    if len(shape) != sparse_dim + len(dense) or tuple(shape[sparse_dim:]) != dense:
        raise ValueError(f"{op}: shape {list(shape)} does not fit {sparse_dim} sparse dims "
                         f"followed by the values' dense dims {list(dense)}; expected rank "
                         f"{sparse_dim + len(dense)} ending with {list(dense)}")
    check_in_range(indices, shape[:sparse_dim], op, "indices")


def check_in_range(indices, sizes, op, what, first_dim=0):
    """Raise IndexError unless every row d of ``indices`` lies in [0, sizes[d]); the
    message names row d as dim ``first_dim + d`` of the tensor."""
    if indices.shape[-1] == 0:
        return
    xp = xp_of(indices)
    rows = indices.reshape(len(sizes), -1)
    lows = [int(v) for v in xp.min(rows, axis=1).tolist()]
    highs = [int(v) for v in xp.max(rows, axis=1).tolist()]
    for d, (lo, hi, size) in enumerate(zip(lows, highs, sizes)):
        where = f"{what} row {d}" if len(sizes) > 1 else what
        if lo < 0:
            raise IndexError(f"{op}: {where} holds {lo}; indices must be non-negative")
        if hi >= size:
            raise IndexError(f"{op}: {where} holds {hi}, out of range for dim "
                             f"{first_dim + d} of size {size}; expected values in [0, {size})")


def check_csr(crows, cols, values, shape, op="sparse_csr_tensor"):
    """Validate 2-D or batched 3-D CSR buffers (Paddle's layout).

    crows has ``batch * (rows + 1)`` entries; in each batch it starts at 0
    and never decreases, and the batches' last entries add up to nnz, the
    length of cols and values.  Every col lies in [0, cols).

    Raises
    ------
    ValueError
        A shape that is not 2-D or 3-D, 1-D buffers of the wrong lengths, or
        crows that do not start at 0, decrease, or end at the wrong count.
    IndexError
        A col out of range.
    """
    check_csr_rank(op, "shape", shape)
    for name, a in (("crows", crows), ("cols", cols), ("values", values)):
        if a.ndim != 1:
            raise ValueError(f"{op}: {name} must be 1-D, got shape {list(a.shape)}")
    batch, rows = (shape[0] if len(shape) == 3 else 1), shape[-2]
    if crows.shape[0] != batch * (rows + 1):
        raise ValueError(f"{op}: crows has length {crows.shape[0]}; shape {list(shape)} needs "
                         f"batch * (rows + 1) = {batch * (rows + 1)}")
    if cols.shape[0] != values.shape[0]:
        raise ValueError(f"{op}: cols has length {cols.shape[0]} but values has "
                         f"{values.shape[0]}; they must match (one col per value)")
    _check_crows(crows.reshape(batch, rows + 1), cols.shape[0], op)
    check_in_range(cols, shape[-1:], op, "cols", first_dim=len(shape) - 1)


def _check_crows(c2, nnz, op):
    """crows per batch: starts at 0, never decreases, ends within [0, nnz], ends add to nnz.

    Neighbours are compared, never subtracted: a difference of int64 values
    can wrap (``2**63 - 1 - (-2**63)``) and hide a decrease.  Each batch's
    end is checked to lie in [0, nnz] before the ends are added, so their
    sum cannot wrap either.
    """
    xp = xp_of(c2)
    if bool(xp.any(c2[:, 0] != 0)):
        raise ValueError(f"{op}: crows must start at 0 in every batch, got "
                         f"{c2[:, 0].tolist()} at the batch starts")
    down = c2[:, 1:] < c2[:, :-1]
    if down.size and bool(xp.any(down)):
        b, r = (int(v[0]) for v in xp.nonzero(down))
        raise ValueError(f"{op}: crows decreases from {int(c2[b, r])} to {int(c2[b, r + 1])} "
                         f"at row {r} of batch {b}; it must be non-decreasing within each "
                         "batch")
    ends = c2[:, -1]
    if bool(xp.any(ends > nnz)):
        raise ValueError(f"{op}: crows ends at {ends.tolist()} per batch, more than the "
                         f"{nnz} entries cols and values hold")
    total = sum(int(v) for v in ends.tolist())
    if total != nnz:
        raise ValueError(f"{op}: crows ends at {ends.tolist()} (sum {total}) per batch, "
                         f"but cols and values hold {nnz} entries")
