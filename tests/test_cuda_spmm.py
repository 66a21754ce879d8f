"""``spmm.cu`` on the CPU emulator (and cupy), against scipy.sparse.

1. The launcher against ``scipy.sparse.csr_matrix @ y`` for every dtype, both
   index dtypes, y of 0, 1, 3, 32 and 40 columns (every split of a row's
   team between columns and entries), unsorted and repeated columns, empty
   rows, nnz 0, and forced launch geometries (1x1 drives the grid-stride loop).
2. Rows cut into many chunks, and many empty rows.
3. Planted bugs: mutated copies of ``spmm.cu`` that the first check must catch.
"""
import numpy as np
import pytest
import scipy.sparse as sp

import sparse  # noqa: F401
from cuda_emu.fixtures import engine, geometry, to_host  # noqa: F401 (fixtures)
from cuda_emu.fixtures import mutant as mutated
from kernels.gpu.spmm import lanes
from kernels.gpu.spmm import spmm as launch_spmm

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
# (rows, K, nnz, N)
CASES = [(6, 5, 0, 3), (9, 7, 40, 1), (9, 7, 40, 3), (30, 20, 300, 32), (12, 8, 70, 40),
         (4, 3, 9, 0), (1, 1, 1, 1)]


def values(shape, dtype, rng):
    a = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


def unsorted_csr(rows, k, nnz, rng):
    """Row pointers and columns with every row's columns shuffled and some repeated,
    and some rows empty."""
    counts = rng.multinomial(nnz, rng.dirichlet(np.ones(rows) * 0.5)) if rows else []
    crows = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    cols = rng.integers(0, k, nnz)
    cols[1::4] = cols[::4][:len(cols[1::4])]          # repeats, next to their first copy
    return crows, cols


def check_against_scipy(engine, geometry, dtype, index_dtype, case):
    """Raise AssertionError unless the launcher matches scipy on ``case``."""
    rows, k, nnz, n = case
    rng = np.random.default_rng(rows * 100 + nnz + n)
    crows, cols = unsorted_csr(rows, k, nnz, rng)
    vals, y = values(nnz, dtype, rng), values((k, n), dtype, rng)
    xp = engine.xp
    got = launch_spmm(engine, xp.asarray(crows.astype(index_dtype)),
                      xp.asarray(cols.astype(index_dtype)), xp.asarray(vals), xp.asarray(y),
                      **geometry)
    assert got.dtype == np.dtype(dtype) and got.shape == (rows, n)
    assert got.flags.c_contiguous
    want = sp.csr_matrix((vals.astype(np.complex128), cols, crows), shape=(rows, k)) @ y
    rtol = 1e-4 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-12
    np.testing.assert_allclose(to_host(got), want, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("case", CASES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64], ids=str)
def test_spmm_matches_scipy(engine, geometry, dtype, index_dtype, case):
    check_against_scipy(engine, geometry, dtype, index_dtype, case)


def test_lanes_split_a_warp_between_columns_and_entries():
    for n in range(1, 70):
        cs, es = lanes(n)
        assert cs + es == 5 and 2 ** cs >= min(n, 32) and (cs == 0 or 2 ** (cs - 1) < n)


@pytest.mark.parametrize("most", [2048, 16, 4])
@pytest.mark.parametrize("n", [1, 3, 64, 130])
def test_spmm_splits_long_rows_and_skips_empty_ones(engine, n, most, monkeypatch):
    """Row 0 holds 3000 entries (cut into chunks, one team each), rows 1-299 are empty,
    the rest hold one to twenty (a chunk spans several); ``most`` caps the chunks."""
    from kernels.gpu import spmm as spmm_module
    monkeypatch.setattr(spmm_module, "MAX_CHUNK", most)
    rng = np.random.default_rng(n)
    counts = np.zeros(400, np.int64)
    counts[0], counts[300:] = 3000, rng.integers(1, 21, 100)
    crows = np.concatenate([[0], np.cumsum(counts)])
    nnz = int(crows[-1])
    cols = rng.integers(0, 50, nnz)
    vals, y = values(nnz, np.float64, rng), values((50, n), np.float64, rng)
    xp = engine.xp
    want = sp.csr_matrix((vals, cols, crows), shape=(400, 50)) @ y
    for geometry in ({}, {"grid": 2, "block": 96}):
        got = launch_spmm(engine, *(xp.asarray(a) for a in (crows, cols, vals, y)), **geometry)
        np.testing.assert_allclose(to_host(got), want, rtol=1e-12, atol=1e-12)


def test_chunks_hold_a_mean_row():
    from kernels.gpu.spmm import MAX_CHUNK, chunk_size
    assert chunk_size(500, 1, 0) == 512 and chunk_size(10**9, 1, 0) == MAX_CHUNK
    assert chunk_size(3, 100, 0) == 4 and chunk_size(3, 100, 5) == 128
    assert chunk_size(0, 0, 0) == 4


def test_spmm_errors(engine):
    xp = engine.xp
    crows, cols = xp.zeros(3, np.int64), xp.zeros(0, np.int64)
    with pytest.raises(TypeError, match="spmm: dtype int64 is not float32"):
        launch_spmm(engine, crows, cols, xp.ones(0, np.int64), xp.ones((2, 2), np.int64))
    with pytest.raises(ValueError, match="spmm: crows .* do not fit"):
        launch_spmm(engine, crows, cols, xp.ones(1), xp.ones((2, 2)))
    with pytest.raises(TypeError, match="spmm: crows dtype int16 is not int32 or int64"):
        launch_spmm(engine, crows.astype(np.int16), cols.astype(np.int16), xp.ones(0),
                    xp.ones((2, 2)))


# ---------------------------------------------------------------- planted bugs
PLANTED = {
    "no grid-stride loop": ("GRID_STRIDE_LOOP(i, (nnz + chunk - 1) / chunk << (cs + es)) {",
                            "for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; "
                            "i < ((nnz + chunk - 1) / chunk << (cs + es)); i = 1 << 30) {"),
    "always stored": ("atomicAdd(p, v);", "*p = v;"),
    "stored across chunks": ("FLUSH(r, es == 0 && crows[r] >= first && row_end <= last);",
                             "FLUSH(r, es == 0);"),
    "complex sign": ("re[j] += vr * br - vi * bi;", "re[j] += vr * br + vi * bi;"),
    "chunk end dropped": ("first + chunk < nnz ? first + chunk : nnz",
                          "first + chunk < nnz ? first + chunk - 1 : nnz"),
    "row search one past": ("if ((i64)crows[mid] <= e) {", "if ((i64)crows[mid] <= e + 1) {"),
    "column stride": ("y + (i64)cols[e] * n + c", "y + (i64)cols[e] + c"),
    "second column pass skipped": ("c += COLS * cstep", "c += cstep * 8"),
}


@pytest.mark.parametrize("bug", sorted(PLANTED))
def test_planted_bugs_are_caught(bug, tmp_path, monkeypatch):
    from kernels.gpu import spmm as spmm_module
    monkeypatch.setattr(spmm_module, "MAX_CHUNK", 8)      # the cases' rows span chunks
    mutant = mutated(tmp_path, monkeypatch, "spmm.cu", *PLANTED[bug])
    caught = []
    for dtype in DTYPES:
        for case in (CASES[2], CASES[4], (3, 20, 200, 130)):
            for geometry in ({}, {"grid": 1, "block": 1}):
                try:
                    check_against_scipy(mutant, geometry, dtype, np.int64, case)
                except AssertionError:
                    caught.append((dtype, case, tuple(geometry)))
    assert caught, f"planted bug '{bug}' went unnoticed"
