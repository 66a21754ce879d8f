"""Launchers of ``csr_coo.cu``: CSR row ids to COO and COO rows to CSR crows."""
import numpy as np

from .launch import index_suffix, launch


def _csr_geometry(op, shape):
    """``(n_batch, n_rows, batched)`` of a 2-D or batched 3-D CSR shape."""
    if len(shape) not in (2, 3):
        raise ValueError(f"{op}: shape {list(shape)} is not 2-D or 3-D")
    batched = len(shape) == 3
    return (int(shape[0]) if batched else 1), int(shape[-2]), batched


def csr_to_coo_indices(backend, crows, cols, shape, grid=None, block=None):
    """COO indices ``[batch,] row, col`` of a 2-D or batched 3-D CSR tensor.

    Parameters
    ----------
    crows : xp array, int32 or int64
        ``rows + 1`` entries, or ``batch * (rows + 1)`` for 3-D, each batch
        starting from 0.
    cols : xp array, same dtype, ``nnz`` entries over all batches in order
    shape : sequence of int
        ``(rows, cols)`` or ``(batch, rows, cols)``.

    Returns
    -------
    xp array, shape ``[len(shape), nnz]``, dtype of ``crows``
        One thread per nonzero finds its batch and row by binary search.

    Raises
    ------
    ValueError
        When crows has the wrong length or (on the emulator) its batch ends do
        not add up to ``nnz`` (the kernel would read out of bounds).  On a GPU
        the count is not read back, which would stall every call: a CSR
        tensor's crows were checked when it was built.
    """
    xp = backend.xp
    n_batch, n_rows, batched = _csr_geometry("csr_to_coo_indices", shape)
    suffix = index_suffix("csr_to_coo_indices", "crows", crows.dtype)
    if cols.dtype != crows.dtype:
        raise TypeError(f"csr_to_coo_indices: cols dtype {cols.dtype} "
                        f"differs from crows dtype {crows.dtype}")
    crows = xp.ascontiguousarray(crows).reshape(-1)
    cols = xp.ascontiguousarray(cols).reshape(-1)
    if crows.size != n_batch * (n_rows + 1):
        raise ValueError(f"csr_to_coo_indices: crows has {crows.size} entries, "
                         f"expected {n_batch * (n_rows + 1)}")
    ends = crows[n_rows::n_rows + 1].astype(np.int64)
    offsets = xp.concatenate([xp.zeros(1, np.int64), xp.cumsum(ends)])
    nnz = cols.size
    if xp is np and int(offsets[-1]) != nnz:
        raise ValueError(f"csr_to_coo_indices: crows count {int(offsets[-1])} "
                         f"nonzeros but cols has {nnz}")
    out = xp.empty((len(shape), nnz), dtype=crows.dtype)
    args = (crows, cols, offsets, out, np.int64(nnz), np.int64(n_batch),
            np.int64(n_rows), np.int32(batched))
    launch(backend, "csr_coo.cu", f"csr_coo_indices_{suffix}", nnz, args,
            grid, block)
    return out


def coo_to_crows(backend, indices, shape, grid=None, block=None):
    """CSR crows from COO indices sorted by ``([batch,] row)``.

    Parameters
    ----------
    indices : xp array, int32 or int64, shape ``[len(shape), nnz]``
        Sorted by batch then row (a coalesced COO tensor is); unsorted
        input gives wrong crows but never reads out of bounds.
    shape : sequence of int
        ``(rows, cols)`` or ``(batch, rows, cols)``.

    Returns
    -------
    xp array, ``batch * (rows + 1)`` entries, dtype of ``indices``
        One thread per entry counts the nonzeros before its row by binary
        search; every batch starts from 0.
    """
    n_batch, n_rows, batched = _csr_geometry("coo_to_crows", shape)
    suffix = index_suffix("coo_to_crows", "indices", indices.dtype)
    if indices.ndim != 2 or indices.shape[0] != len(shape):
        raise ValueError(f"coo_to_crows: indices shape {list(indices.shape)} "
                         f"is not [{len(shape)}, nnz]")
    xp = backend.xp
    indices = xp.ascontiguousarray(indices)
    crows = xp.empty(n_batch * (n_rows + 1), dtype=indices.dtype)
    args = (indices, crows, np.int64(indices.shape[1]), np.int64(n_batch),
            np.int64(n_rows), np.int32(batched))
    launch(backend, "csr_coo.cu", f"coo_crows_{suffix}", crows.size, args,
            grid, block)
    return crows
