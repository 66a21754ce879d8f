"""The sparse matmul family: matmul (SpMM, SpGEMM), mv, addmm and masked_matmul (SDDMM).

Every kernel reduces its operands to 2-D matrices and four primitives
(``spmm``, ``spgemm``, ``sddmm``, ``transpose``; :mod:`kernels.sparse.blas`
on the CPU, :mod:`kernels.sparse.blas_gpu` on a GPU):

* a sparse operand of shape [B, m, n] is its **block-diagonal** [B*m, B*n]
  CSR matrix, batch b's entry (r, c) sitting at (b*m + r, b*n + c), so
  batches with different nnz need nothing special; a 2-D one is itself.
  The right operand of a sparse product is instead the **stacked** [B*m, n]
  matrix (batch-local columns): a block-diagonal left operand's rows of
  batch b meet only batch b's rows, so the product is the stacked result,
  and SpGEMM's scratch (a row of the right operand's width) spans n
  columns, not B*n;
* a dense operand [B, m, n] is the stacked [B*m, n] matrix (or, where the
  algebra wants its transpose, the stacked [B*n, m] one).

A COO operand with dense dims stands for its logical tensor: its dense dims
are folded into sparse dims first (every element of a stored block is an
entry, :func:`kernels.sparse.data.fold_dense`), and its gradient is
unfolded back onto the values' shape.

Gradients (complex ones conjugated, as in PyTorch and Paddle): for
``out = x @ y``, ``x_grad = out_grad @ y^H`` and ``y_grad = x^H @ out_grad``.
A sparse operand's gradient is only evaluated at its stored entries (an
SDDMM, or a sparse product looked up at them), in its storage order,
duplicates included; it is never densified.  Each backward kernel computes
only the gradients its ``grad_mask`` asks for (``optional_grads``): training
``W`` in ``W @ x`` never pays for x's SpMM, nor ``x`` for W's SDDMM.
"""
import functools

import numpy as np

from ..core.dtypes import COMPLEX, INTS
from ..core.registry import register_kernel
from ..core.xp import xp_of
from ..funcs import pool
from ..funcs.broadcast import copy_into
from ..funcs.restride import index_dtype
from ..funcs.shape import INT64_LIMIT, prod
from ..funcs.sum_to_shape import grad_in_dtype
from . import blas, blas_gpu
from .binary import stores_each_once
from .convert import coalesce_coo, coo_of_csr, coo_to_csr, lookup_values
from .data import CooData, CsrData, crows_from_keys, csr_coords, csr_from_keys, fold_dense
from .segments import crows_of_bounds
from .merge import is_canonical

COO, CSR, DENSE = "sparse_coo", "sparse_csr", "dense"
#: Value dtypes of the forward kernels (scipy's sparsetools have no float16).
DTYPES = INTS + (np.dtype(np.float32), np.dtype(np.float64)) + COMPLEX
#: Dtypes that carry gradients.
GRAD_DTYPES = (np.dtype(np.float32), np.dtype(np.float64)) + COMPLEX
#: The default ``grad_mask`` of the backward kernels: every gradient (a direct call).
BOTH, ALL3 = (True, True), (True, True, True)


# ---------------------------------------------------------------- 2-D views
def _batch(shape):
    return shape[0] if len(shape) == 3 else 1


def _layout(x):
    return COO if isinstance(x, CooData) else CSR


def _index(x):
    return x.indices if isinstance(x, CooData) else x.crows


def flat_coords(x, local=False):
    """(rows, cols) of a sparse operand's entries in its block-diagonal matrix (``local``:
    in its stacked one, the columns batch-local).

    In storage order, one pair per entry (per element of a stored block
    for COO with dense dims).
    """
    if isinstance(x, CsrData):
        coords = csr_coords(x)
    else:
        x = fold_dense(x)
        coords = [x.indices[d] for d in range(x.indices.shape[0])]
    if len(x.shape) == 2:
        return coords[0], coords[1]
    _, m, n = x.shape
    width = n if local else x.shape[0] * n
    dtype = index_dtype((x.shape[0] * m, width), coords[0].dtype, xp=xp_of(coords[0]))
    b = coords[0].astype(dtype, copy=False)
    return b * m + coords[1], coords[2] if local else b * n + coords[2]


def _values(x):
    """The values of a sparse operand, one per entry of :func:`flat_coords`."""
    return x.values if isinstance(x, CsrData) else x.values.reshape(-1)


def flat_csr(x, local=False):
    """A sparse operand as a 2-D CSR matrix: block-diagonal when batched (``local``: the
    stacked one, see the module docstring).

    Entries are stably sorted by row where needed (never for CSR or a coalesced COO,
    whose rows already ascend, so no GPU waits to ask); duplicates are kept.
    """
    if isinstance(x, CsrData) and len(x.shape) == 2:
        return x
    b, (m, n) = _batch(x.shape), x.shape[-2:]
    shape = (b * m, n if local else b * n)
    rows, cols = flat_coords(x, local)
    values = _values(x)
    dtype = index_dtype(shape, rows.dtype, extent=values.shape[0], xp=xp_of(rows))
    ordered = isinstance(x, CsrData) or x.coalesced
    crows, cols, perm = csr_from_keys(rows, cols, shape, dtype, rows_sorted=ordered)
    return CsrData(crows, cols, values if perm is None else values[perm], shape)


def from_flat(c, shape, layout, dtype, coalesced=False, local=False):
    """A 2-D (block-diagonal; ``local``: stacked) CSR result as a ``layout`` tensor of
    ``shape``.

    ``dtype`` is the index dtype; ``coalesced`` marks a COO result whose
    entries are unique and sorted.
    """
    if layout == CSR and len(shape) == 2:
        return CsrData(c.crows.astype(dtype, copy=False), c.cols.astype(dtype, copy=False),
                       c.values, tuple(shape))
    if layout == COO:
        return coo_from_flat(*csr_coords(c), c.values, shape, dtype, coalesced, local)
    batch = csr_coords(c)[0] // max(shape[1], 1)      # batched CSR: batch-local columns
    cols = c.cols if local else c.cols - batch * shape[2]
    crows = crows_of_bounds(c.crows, shape)
    return CsrData(crows.astype(dtype, copy=False), cols.astype(dtype, copy=False),
                   c.values, tuple(shape))


def coo_from_flat(rows, cols, values, shape, dtype, coalesced=False, local=False):
    """The COO tensor of ``shape`` whose entries are at (rows, cols) of its 2-D
    (block-diagonal; ``local``: stacked) matrix, each coordinate once; no row pointers."""
    xp = xp_of(rows)
    coords = [rows, cols]
    if len(shape) == 3:
        b, m, n = shape
        batch = rows // max(m, 1)
        coords = [batch, rows - batch * m, cols if local else cols - batch * n]
    return CooData(xp.stack(coords).astype(dtype, copy=False), values, tuple(shape),
                   coalesced, unique=True)


def _out_index_dtype(operands, shape, nnz):
    """int32 when every sparse operand has int32 indices and the result fits, else int64."""
    xp = xp_of(_index(operands[0]))
    if any(_index(t).dtype != np.int32 for t in operands):
        return xp.int64
    return index_dtype(shape, xp.int32, extent=nnz, xp=xp)


def _sampled(ops, a, left, right):
    """SDDMM ``left @ right.T`` at sparse a's entries, in its storage order: a 2-D CSR
    on the CPU hands over its row pointers (the loop walks them), any other operand
    its flat coordinates."""
    if isinstance(a, CsrData) and len(a.shape) == 2 and xp_of(a.cols) is np:
        return ops.sddmm(None, a.cols, left, right, crows=a.crows)
    return ops.sddmm(*flat_coords(a), left, right)


def _stack(a):
    """Dense [B, m, n] (or [m, n]) as the stacked [B*m, n] matrix."""
    return a.reshape(prod(a.shape[:-1]), a.shape[-1])


def _stack_t(a):
    """Dense [B, m, n] (or [m, n]) as the stacked transposes [B*n, m]; on the CPU copied
    by threads into pooled memory (a fresh 5 MiB transpose of SDDMM's y faulted in its
    pages: 1.2 against 0.5 ms)."""
    xp = xp_of(a)
    swapped = xp.swapaxes(a, -1, -2)
    if xp is np:
        t = pool.empty(swapped.shape, a.dtype)
        copy_into(t, swapped)
    else:
        t = xp.ascontiguousarray(swapped)
    return t.reshape(prod(a.shape[:-2]) * a.shape[-1], a.shape[-2])


def _unstack_t(a, shape):
    """Inverse of :func:`_stack_t`: the stacked [B*n, m] as dense ``shape`` [B, m, n]."""
    xp = xp_of(a)
    t = a.reshape(tuple(shape[:-2]) + (shape[-1], shape[-2]))
    return xp.ascontiguousarray(xp.swapaxes(t, -1, -2))


def _conj(a):
    return a.conj() if a.dtype.kind == "c" else a


def _conj_values(c):
    return c._replace(values=_conj(c.values))


def _local(c, m, n):
    """Block-diagonal CSR ``c`` of [m, n] blocks as its stacked matrix [B*m, n]."""
    if c.shape[1] == n:
        return c
    rows, cols = csr_coords(c)
    return c._replace(cols=(cols - (rows // max(m, 1)) * n).astype(cols.dtype, copy=False),
                      shape=(c.shape[0], n))


def _with_values(x, values, scale=1.0):
    """Sparse operand ``x`` with new values, one per entry of :func:`flat_coords`."""
    values = grad_in_dtype(values, x.values.dtype).reshape(x.values.shape)
    return x._replace(values=values if scale == 1.0 else values * scale)


def _lookup(c, x, local=False):
    """The values of the 2-D CSR ``c`` (unique coordinates; ``local``: x's stacked matrix,
    else its block-diagonal one) at x's entries, 0 where absent."""
    xp = xp_of(c.cols)
    indices = xp.stack(flat_coords(x, local))
    return lookup_values(indices, c.shape, CooData(xp.stack(csr_coords(c)), c.values, c.shape),
                         "matmul_grad")


# ---------------------------------------------------------------- matmul
def _logical(x, dtype):
    """Sparse x with each coordinate's duplicates summed in x's own value dtype first where
    the product computes in another ``dtype``, which would add them there (int8
    duplicates 100 and 100 are x's -56, not 200): the product of x's logical values."""
    if np.dtype(dtype) == x.values.dtype or stores_each_once(x):
        return x
    if isinstance(x, CooData):
        return coalesce_coo(x)
    return coo_to_csr(coalesce_coo(coo_of_csr(x)))


def _result(a, b):
    """numpy's result dtype of two operands' values."""
    return np.result_type(_values(a).dtype if isinstance(a, (CooData, CsrData)) else a.dtype,
                          _values(b).dtype if isinstance(b, (CooData, CsrData)) else b.dtype)


def matmul_sparse_dense(ops, x, y):
    """Sparse x [B?, m, k] @ dense y [B?, k, n] -> dense (SpMM)."""
    x = _logical(x, _result(x, y))
    out = ops.spmm(flat_csr(x), _stack(y))
    return out.reshape(tuple(x.shape[:-1]) + (y.shape[-1],))


def matmul_dense_sparse(ops, x, y):
    """Dense x [B?, p, m] @ sparse y [B?, m, n] -> dense: (y^T @ x^T)^T by SpMM."""
    y = _logical(y, _result(x, y))
    out_t = ops.spmm(ops.transpose(flat_csr(y)), _stack_t(x))
    return _unstack_t(out_t, tuple(x.shape[:-1]) + (y.shape[-1],))


def matmul_sparse_sparse(ops, x, y):
    """Sparse @ sparse -> sparse in x's layout (SpGEMM; unsorted, unique entries).

    Where the dims the product walks (a COO x's rows, the inner dim, y's
    columns: row pointers and SpGEMM's scratch row) far outnumber the
    entries, they are first renumbered to the ones that hold entries
    (:func:`_compact_spgemm`), so memory follows nnz, not the shape.
    """
    shape = tuple(x.shape[:-1]) + (y.shape[-1],)
    x, y = _logical(x, _result(x, y)), _logical(y, _result(x, y))
    if _sparse_extent(x, y):
        return _compact_spgemm(ops, x, y, shape)
    c = ops.spgemm(flat_csr(x), flat_csr(y, local=True))
    return from_flat(c, shape, _layout(x), _out_index_dtype((x, y), shape, c.nnz), local=True)


def _walked_dims(x, y):
    """The extents SpGEMM allocates for: x's stacked rows (COO x only: a CSR x holds its
    row pointers already), the stacked inner dim and y's columns."""
    b, (m, k), n = _batch(x.shape), x.shape[-2:], y.shape[-1]
    return (b * m if _layout(x) == COO else 0), b * k, n


def _sparse_extent(x, y):
    """True when a walked dim is far larger than both operands' entries together."""
    entries = prod(x.values.shape) + prod(y.values.shape)
    return max(_walked_dims(x, y)) > 4 * entries + 4096


def _compact_spgemm(ops, x, y, shape, op="matmul"):
    """:func:`matmul_sparse_sparse` on the dims renumbered to the rows, inner indices and
    columns that hold entries (their sorted unique values), mapped back after."""
    a, b, rows, cols = _renumbered(x, y)
    c = ops.spgemm(a, b, op)
    c = c._replace(cols=cols[c.cols], shape=(c.shape[0], shape[-1]))
    dtype = _out_index_dtype((x, y), shape, c.nnz)
    if rows is None:                      # a CSR x: every row kept, as from_flat wants it
        return from_flat(c, shape, CSR, dtype, local=True)
    return _coo_of_rows(c, rows, shape, dtype)


def _renumbered(x, y):
    """(a, b, rows, cols): x and y (stacked) as 2-D CSR matrices over the inner indices that
    hold entries, a's rows those of a COO x that do (``rows``, else None: all of them),
    b's columns those of y that do (``cols``)."""
    xp = xp_of(x.values)
    xr, xc = flat_coords(x)
    yr, yc = flat_coords(y, local=True)
    inner, inner_of = xp.unique(xp.concatenate([xc, yr]), return_inverse=True)
    cols, yc = xp.unique(yc, return_inverse=True)
    rows = None
    if _layout(x) == COO:
        rows, xr = xp.unique(xr, return_inverse=True)
    n_rows = _batch(x.shape) * x.shape[-2] if rows is None else rows.shape[0]
    a = _csr_of((xr, inner_of[:xc.shape[0]]), _values(x), (n_rows, inner.shape[0]))
    b = _csr_of((inner_of[xc.shape[0]:], yc), _values(y), (inner.shape[0], cols.shape[0]))
    return a, b, rows, cols


def _coo_of_rows(c, rows, shape, dtype):
    """The COO result of ``shape`` whose stacked rows are ``rows[r]`` for c's row r."""
    xp = xp_of(c.cols)
    r, cc = csr_coords(c)
    r = rows[r]
    coords = [r, cc]
    if len(shape) == 3:
        batch = r // max(shape[1], 1)
        coords = [batch, r - batch * shape[1], cc]
    return CooData(xp.stack(coords).astype(dtype, copy=False), c.values, tuple(shape))


def _csr_of(coords, values, shape):
    """A 2-D CSR matrix of entries at ``coords`` (rows sorted stably where needed)."""
    rows, cols = coords
    dtype = index_dtype(shape, np.int64, extent=values.shape[0], xp=xp_of(rows))
    crows, cols, perm = csr_from_keys(rows, cols, shape, dtype)
    return CsrData(crows, cols, values if perm is None else values[perm], shape)


def matmul_sparse_dense_grad(ops, x, y, out_grad, grad_mask=BOTH):
    """x_grad = SDDMM(out_grad, conj y) on x's entries; y_grad = x^H @ out_grad."""
    g = _stack(out_grad)
    x_grad = y_grad = None
    if grad_mask[0]:
        x_grad = _with_values(x, _sampled(ops, x, g, _conj(_stack(y))))
    if grad_mask[1]:                       # x's logical values, as the forward multiplied
        y_grad = ops.spmm(_conj_values(ops.transpose(flat_csr(_logical(x, _result(x, y))))),
                          g)
        y_grad = grad_in_dtype(y_grad, y.dtype).reshape(y.shape)
    return x_grad, y_grad


def matmul_dense_sparse_grad(ops, x, y, out_grad, grad_mask=BOTH):
    """x_grad = out_grad @ y^H; y_grad = SDDMM(conj x^T, out_grad^T) on y's entries."""
    g_t = _stack_t(out_grad)
    x_grad = y_grad = None
    if grad_mask[0]:
        y_l = _logical(y, _result(x, y))   # y's logical values, as the forward multiplied
        x_grad = grad_in_dtype(_unstack_t(ops.spmm(_conj_values(flat_csr(y_l)), g_t), x.shape),
                               x.dtype)
    if grad_mask[1]:
        y_grad = _with_values(y, _sampled(ops, y, _conj(_stack_t(x)), g_t))
    return x_grad, y_grad


def matmul_sparse_sparse_grad(ops, x, y, out_grad, grad_mask=BOTH):
    """out_grad @ y^H and x^H @ out_grad (SpGEMM, the right operands stacked), each looked
    up at its operand's entries (each product of the other operand's logical values, as
    the forward multiplied)."""
    x_l, y_l = _logical(x, _result(x, y)), _logical(y, _result(x, y))
    if _layout(x) == COO and _layout(y) == COO and _grad_extent(x, y):
        return _renumbered_grads(ops, (x, x_l), (y, y_l), out_grad, grad_mask)
    (k, n), x_grad, y_grad = y.shape[-2:], None, None
    if grad_mask[0]:
        y_h = _local(_conj_values(ops.transpose(flat_csr(y_l))), n, k)
        x_grad = _with_values(x, _lookup(ops.spgemm(flat_csr(out_grad), y_h), x, local=True))
    if grad_mask[1]:
        x_h = _conj_values(ops.transpose(flat_csr(x_l)))
        y_grad = _with_values(y, _lookup(ops.spgemm(x_h, flat_csr(out_grad, local=True)), y,
                                         local=True))
    return x_grad, y_grad


def _grad_extent(x, y):
    """True when a dim the forward or the gradients walk is far larger than both
    operands' entries together: the gradients also walk the stacked transposes x^H and
    y^H, of B*k and B*n rows."""
    b, k, n = _batch(x.shape), x.shape[-1], y.shape[-1]
    entries = prod(x.values.shape) + prod(y.values.shape)
    return _sparse_extent(x, y) or max(b * k, b * n) > 4 * entries + 4096


def _renumbered_grads(ops, x, y, out_grad, grad_mask):
    """:func:`matmul_sparse_sparse_grad` of COO operands whose dims far outnumber their
    entries: the products are sparse @ sparse on COO (renumbered as the forward is),
    looked up at each operand's entries.  ``x`` and ``y`` are (stored, logical) pairs."""
    (x, x_l), (y, y_l) = x, y
    x_grad = y_grad = None
    if grad_mask[0]:
        x_grad = _at_entries(x, matmul_sparse_sparse(ops, out_grad, _adjoint(y_l)))
    if grad_mask[1]:
        y_grad = _at_entries(y, matmul_sparse_sparse(ops, _adjoint(x_l), out_grad))
    return x_grad, y_grad


def _adjoint(x):
    """COO x (dense dims folded) with its last two dims swapped and its values conjugated."""
    x = fold_dense(x)
    rows = list(range(x.indices.shape[0]))
    rows[-2:] = rows[-1], rows[-2]
    shape = tuple(x.shape[:-2]) + (x.shape[-1], x.shape[-2])
    return CooData(x.indices[rows], _conj(x.values), shape, unique=x.coalesced or x.unique)


def _at_entries(x, product):
    """COO ``product`` (x's logical shape) looked up at x's entries, as x's values."""
    folded = fold_dense(x)
    values = lookup_values(folded.indices, folded.shape, product, "matmul_grad")
    return _with_values(x, values)


# ---------------------------------------------------------------- mv
def mv_sparse(ops, x, vec):
    """Sparse x [B?, m, k] @ dense vec [B?, k] -> dense [B?, m]."""
    return matmul_sparse_dense(ops, x, vec[..., None])[..., 0]


def mv_sparse_grad(ops, x, vec, out_grad, grad_mask=BOTH):
    x_grad, vec_grad = matmul_sparse_dense_grad(ops, x, vec[..., None], out_grad[..., None],
                                                grad_mask)
    return x_grad, None if vec_grad is None else vec_grad[..., 0]


# ---------------------------------------------------------------- addmm
def _scalar(value, dtype):
    return np.dtype(dtype).type(value)


def _scaled(v, beta, dtype, xp):
    """``beta * v`` in ``dtype``; zeros for beta 0, so that NaN and inf in v do not
    propagate (BLAS's gemm convention, which torch's and Paddle's addmm follow)."""
    if beta == 0:
        return xp.zeros(v.shape, dtype)
    return v.astype(dtype, copy=False) * _scalar(beta, dtype)


def addmm_dense(ops, input, x, y, beta, alpha):
    """beta * dense input + alpha * (sparse x @ dense y) -> dense (input ignored for
    beta 0, see :func:`_scaled`)."""
    p = matmul_sparse_dense(ops, x, y)
    dtype = np.result_type(input.dtype, p.dtype)
    out = p.astype(dtype, copy=False) * _scalar(alpha, dtype)
    if beta != 0:
        out += input.astype(dtype, copy=False) * _scalar(beta, dtype)
    return out


def addmm_dense_grad(ops, input, x, y, out_grad, beta, alpha, grad_mask=ALL3):
    x_grad, y_grad = matmul_sparse_dense_grad(ops, x, y, out_grad, grad_mask[1:])
    input_grad = None
    if grad_mask[0]:
        input_grad = grad_in_dtype(out_grad * _scalar(beta, out_grad.dtype), input.dtype)
    return (input_grad, None if x_grad is None else _with_values(x, x_grad.values, alpha),
            None if y_grad is None else y_grad * _scalar(alpha, y_grad.dtype))


def addmm_sparse(ops, input, x, y, beta, alpha):
    """beta * input + alpha * (x @ y), all sparse of one layout: the union of the patterns.

    Each coordinate is stored once, sorted (COO results are coalesced); for beta
    0 input's entries count as zeros (:func:`_scaled`), its pattern still joins.
    """
    xp = xp_of(_values(x))
    x, y = _logical(x, _result(x, y)), _logical(y, _result(x, y))
    input = _logical(input, np.result_type(_values(input).dtype, _result(x, y)))
    if _sparse_extent(x, y):              # memory follows nnz, as matmul's
        shape = tuple(x.shape[:-1]) + (y.shape[-1],)
        p = flat_csr(_compact_spgemm(ops, x, y, shape, "addmm"), local=True)
    else:
        p = ops.spgemm(flat_csr(x), flat_csr(y, local=True), "addmm")
    dtype = np.result_type(input.values.dtype, p.values.dtype)
    rows, cols = flat_coords(input, local=True)
    p_rows, p_cols = csr_coords(p)
    indices = xp.stack([xp.concatenate([rows, p_rows]), xp.concatenate([cols, p_cols])])
    values = xp.concatenate([_scaled(_values(input), beta, dtype, xp),
                             p.values.astype(dtype) * _scalar(alpha, dtype)])
    c = coalesce_coo(CooData(indices, values, p.shape, False))
    dtype = _out_index_dtype((input, x, y), input.shape, c.nnz)
    crows = crows_from_keys(c.indices[0], p.shape, dtype)
    return from_flat(CsrData(crows, c.indices[1], c.values, p.shape), input.shape,
                     _layout(input), dtype, coalesced=True, local=True)


def addmm_sparse_grad(ops, input, x, y, out_grad, beta, alpha, grad_mask=ALL3):
    x_grad, y_grad = matmul_sparse_sparse_grad(ops, x, y, out_grad, grad_mask[1:])
    input_grad = None
    if grad_mask[0]:
        input_grad = _with_values(input, _lookup(flat_csr(out_grad, local=True), input,
                                                 local=True), beta)
    return (input_grad, None if x_grad is None else _with_values(x, x_grad.values, alpha),
            None if y_grad is None else _with_values(y, y_grad.values, alpha))


# ---------------------------------------------------------------- masked_matmul
def masked_matmul(ops, x, y, mask):
    """Dense x @ dense y at mask's coordinates, each once (SDDMM); mask's layout.  A 2-D
    mask of batched operands stands for each batch (its pattern repeated)."""
    xp = xp_of(_index(mask))
    out_shape = tuple(x.shape[:-1]) + (y.shape[-1],)
    b, (m, n) = _batch(out_shape), out_shape[-2:]
    shape = (b * m, b * n)
    unique = _unique_in_order(mask)
    if unique and b == 1 and isinstance(mask, CsrData):      # 2-D: its row pointers walked
        values = _sampled(ops, mask, _stack(x), _stack_t(y))
        dtype = index_dtype(out_shape, _index(mask).dtype, extent=values.shape[0], xp=xp)
        flat = CsrData(mask.crows.astype(dtype, copy=False), mask.cols.astype(dtype, copy=False),
                       values, shape)
        return from_flat(flat, out_shape, _layout(mask), dtype, coalesced=True)
    rows, cols = _tile(flat_coords(mask), b if len(mask.shape) == 2 else 1, m, n)
    wide = index_dtype(shape, rows.dtype, extent=rows.shape[0], xp=xp)   # block-diagonal
    csr_rows = rows.shape[0] if isinstance(mask, CsrData) else 0     # crows hold nnz
    dtype = index_dtype(out_shape, _index(mask).dtype, extent=csr_rows, xp=xp)
    if rows.shape[0] > 1 and not unique:       # ordered by the mask's own C-order offset
        batch_start = rows // max(m, 1) * n
        local = cols - batch_start
        _check_keys(rows, local, (b * m, n))
        keys = rows.astype(xp.int64) * n + local
        if bool(xp.any(keys[1:] <= keys[:-1])):
            keys = xp.unique(keys)
            rows = keys // max(n, 1)
            cols = keys % max(n, 1) + rows // max(m, 1) * n
    values = ops.sddmm(rows, cols, _stack(x), _stack_t(y))
    if isinstance(mask, CooData):               # no row pointers: memory follows the entries
        return coo_from_flat(rows, cols, values, out_shape, dtype, coalesced=True)
    if unique and len(out_shape) == 2:
        crows = mask.crows.astype(wide, copy=False)
    else:
        crows = crows_from_keys(rows, shape, wide)
    flat = CsrData(crows, cols.astype(wide, copy=False), values, shape)
    return from_flat(flat, out_shape, _layout(mask), dtype, coalesced=True)


def _tile(coords, times, m, n):
    """A 2-D mask's (rows, cols) repeated for ``times`` batches of the block-diagonal
    [times*m, times*n] matrix, batch after batch (order within each kept)."""
    rows, cols = coords
    if times == 1:
        return rows, cols
    xp = xp_of(rows)
    dtype = index_dtype((times * m, times * n), rows.dtype, xp=xp)
    batch = xp.arange(times, dtype=dtype)[:, None]
    return ((batch * m + rows.astype(dtype, copy=False)).reshape(-1),
            (batch * n + cols.astype(dtype, copy=False)).reshape(-1))


def _check_keys(rows, cols, shape):
    """ValueError naming masked_matmul where an entry's key row * ncols + col in the
    stacked [B*m, n] matrix (the mask's own C-order offset) would pass 2**63 and wrap
    (checked entry by entry, only for a shape of 2**63 elements or more)."""
    if prod(shape) < INT64_LIMIT:
        return
    xp = xp_of(rows)
    if bool(xp.any(rows > (INT64_LIMIT - 1 - cols.astype(xp.int64)) // shape[1])):
        raise ValueError(f"masked_matmul: an entry of the mask reaches a flat offset of 2**63 "
                         f"or more in its matrix {list(shape)}, past what an int64 key can "
                         "order")


def _unique_in_order(mask):
    """True if mask stores each coordinate once, in C order, by what is known without a
    pass over its entries: a COO flagged coalesced (the flag is true to the data), or a 2-D
    CSR on the CPU whose rows a compiled walk found canonical (remembered per tensor)."""
    if not isinstance(mask, CsrData):
        return bool(mask.coalesced)
    return len(mask.shape) == 2 and xp_of(mask.cols) is np and is_canonical(mask.crows,
                                                                             mask.cols)


def masked_matmul_grad(ops, x, y, out_grad, grad_mask=BOTH):
    """x_grad = G @ y^H and y_grad = x^H @ G for the sparse out_grad G (SpMM)."""
    g = flat_csr(out_grad)
    x_grad = y_grad = None
    if grad_mask[0]:
        x_grad = grad_in_dtype(ops.spmm(g, _conj(_stack_t(y))).reshape(x.shape), x.dtype)
    if grad_mask[1]:
        y_grad = grad_in_dtype(
            _unstack_t(ops.spmm(ops.transpose(g), _conj(_stack(x))), y.shape), y.dtype)
    return x_grad, y_grad


# ---------------------------------------------------------------- registration
KERNELS = (  # (name, function, layouts of the selecting argument, dtypes)
    ("matmul_sparse_dense", matmul_sparse_dense, (COO, CSR), DTYPES),
    ("matmul_dense_sparse", matmul_dense_sparse, (DENSE,), DTYPES),
    ("matmul_sparse_sparse", matmul_sparse_sparse, (COO, CSR), DTYPES),
    ("matmul_sparse_dense_grad", matmul_sparse_dense_grad, (COO, CSR), GRAD_DTYPES),
    ("matmul_dense_sparse_grad", matmul_dense_sparse_grad, (DENSE,), GRAD_DTYPES),
    ("matmul_sparse_sparse_grad", matmul_sparse_sparse_grad, (COO, CSR), GRAD_DTYPES),
    ("mv_sparse", mv_sparse, (COO, CSR), DTYPES),
    ("mv_sparse_grad", mv_sparse_grad, (COO, CSR), GRAD_DTYPES),
    ("addmm_dense", addmm_dense, (COO, CSR), DTYPES),
    ("addmm_dense_grad", addmm_dense_grad, (COO, CSR), GRAD_DTYPES),
    ("addmm_sparse", addmm_sparse, (COO, CSR), DTYPES),
    ("addmm_sparse_grad", addmm_sparse_grad, (COO, CSR), GRAD_DTYPES),
    ("masked_matmul", masked_matmul, (COO, CSR), DTYPES),
    ("masked_matmul_grad", masked_matmul_grad, (COO, CSR), GRAD_DTYPES),
)


def _register():
    """Each kernel for 'cpu' (scipy's sparsetools) and 'gpu' (cuSPARSE and sddmm.cu)."""
    for backend, ops in (("cpu", blas), ("gpu", blas_gpu)):
        for name, fn, layouts, dtypes in KERNELS:
            kernel = functools.update_wrapper(functools.partial(fn, ops), fn)
            for layout in layouts:
                register_kernel(name, layout=layout, backends=(backend,), dtypes=dtypes)(kernel)


_register()
