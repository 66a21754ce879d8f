"""CSR <-> COO index kernels (csr_coo.cu) against numpy."""
import numpy as np
import pytest

from cuda_emu.fixtures import engine, geometry, to_host  # noqa: F401 (fixtures)
from kernels.gpu.csr_coo import coo_to_crows, csr_to_coo_indices


def random_csr(batch, rows, cols, seed=0):
    """Batched CSR parts with empty rows: (crows, cols, coo) with coo [3, nnz]."""
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, cols + 1, size=(batch, rows)) * rng.integers(0, 2, size=(batch, rows))
    crows = np.concatenate([np.concatenate([[0], np.cumsum(c)]) for c in counts] + [[]])
    col_ids = np.concatenate([np.sort(rng.choice(cols, c, replace=False))
                              for c in counts.ravel()] + [[]])
    batch_ids = np.repeat(np.arange(batch), counts.sum(axis=1))
    row_ids = np.concatenate([np.repeat(np.arange(rows), c) for c in counts] + [[]])
    coo = np.array([batch_ids, row_ids, col_ids]).reshape(3, -1)
    return crows.astype(np.int64), col_ids.astype(np.int64), coo.astype(np.int64)


SHAPES = [(5, 7), (0, 3), (1, 1), (40, 9),
          (1, 5, 7), (3, 4, 6), (2, 0, 3), (4, 3, 1), (0, 3, 3), (2, 40, 9)]


def parts(shape):
    """random_csr for a 2-D or 3-D shape; the batch dim of coo only for 3-D."""
    crows, col_ids, coo = random_csr(shape[0] if len(shape) == 3 else 1, *shape[-2:])
    return crows, col_ids, coo[3 - len(shape):]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_csr_to_coo(engine, geometry, shape, dtype):
    crows, col_ids, coo = parts(shape)
    xp = engine.xp
    got = csr_to_coo_indices(engine, xp.asarray(crows.astype(dtype)),
                             xp.asarray(col_ids.astype(dtype)), shape, **geometry)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(to_host(got), coo)


def reference_crows(coo, shape):
    """searchsorted on the (batch, row) keys, each batch restarting from 0."""
    batch, rows = (shape[0] if len(shape) == 3 else 1), shape[-2]
    keys = coo[-2] + (coo[0] * rows if len(shape) == 3 else 0)
    return np.concatenate([np.searchsorted(keys, b * rows + np.arange(rows + 1))
                           - np.searchsorted(keys, b * rows) for b in range(batch)] + [[]])


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_coo_to_crows(engine, geometry, shape, dtype):
    crows, _, coo = parts(shape)
    got = coo_to_crows(engine, engine.xp.asarray(coo.astype(dtype)), shape, **geometry)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(to_host(got), crows)
    np.testing.assert_array_equal(to_host(got), reference_crows(coo, shape))


def test_errors(engine):
    xp = engine.xp
    crows, cols = xp.asarray([0, 1, 2]), xp.asarray([0, 1])
    with pytest.raises(ValueError, match="crows has 3 entries, expected 4"):
        csr_to_coo_indices(engine, crows, cols, (3, 3))
    if xp is np:    # on a GPU the count is not read back (a CSR tensor is checked when built)
        with pytest.raises(ValueError, match="crows count 2 nonzeros but cols has 1"):
            csr_to_coo_indices(engine, crows, cols[:1], (2, 3))
    with pytest.raises(TypeError, match="differs from crows dtype"):
        csr_to_coo_indices(engine, crows, cols.astype(np.int32), (2, 3))
    with pytest.raises(ValueError, match="not 2-D or 3-D"):
        coo_to_crows(engine, xp.zeros((1, 0), np.int64), (4,))
    with pytest.raises(ValueError, match=r"indices shape \[2, 0\] is not \[3, nnz\]"):
        coo_to_crows(engine, xp.zeros((2, 0), np.int64), (1, 2, 3))
