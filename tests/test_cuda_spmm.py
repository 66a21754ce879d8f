"""``spmm.cu`` on the CPU emulator (and cupy), against scipy.sparse.

1. The launcher against ``scipy.sparse.csr_matrix @ y`` for every dtype, both
   index dtypes, y of 0, 1, 3, 32 and 40 columns (every split of a row's
   team between columns and entries), unsorted and repeated columns, empty
   rows, nnz 0, and forced launch geometries (1x1 drives the grid-stride loop).
2. With 32 columns or more, bit-identical results on every geometry.
3. Planted bugs: mutated copies of ``spmm.cu`` that the first check must catch.
"""
import numpy as np
import pytest
import scipy.sparse as sp

import sparse  # noqa: F401
from cuda_emu.backend import EmuBackend
from cuda_emu.fixtures import engine, geometry, to_host  # noqa: F401 (fixtures)
from kernels.gpu import SOURCE_DIR
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


@pytest.mark.parametrize("n", [32, 33])
def test_spmm_is_the_same_on_every_geometry_without_atomics(engine, n):
    rng = np.random.default_rng(0)
    crows, cols = unsorted_csr(25, 30, 400, rng)
    xp = engine.xp
    args = [xp.asarray(a) for a in (crows, cols, values(400, np.float32, rng),
                                    values((30, n), np.float32, rng))]
    runs = [to_host(launch_spmm(engine, *args, grid=g, block=b)).tobytes()
            for g, b in ((None, None), (1, 1), (3, 5), (7, 64))]
    assert len(set(runs)) == 1


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
    "no grid-stride loop": ("GRID_STRIDE_LOOP(i, rows << (cs + es)) {",
                            "for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; "
                            "i < (rows << (cs + es)); i = rows << (cs + es)) {"),
    "entry lanes overwrite": ("atomicAdd(out + r * n + c, acc);", "out[r * n + c] = acc;"),
    "complex sign": ("- vals[2 * e + 1] * b[1]", "+ vals[2 * e + 1] * b[1]"),
    "last entry skipped": ("const i64 end = crows[r + 1];", "const i64 end = crows[r + 1] - 1;"),
    "column stride": ("y[(i64)cols[e] * n + c]", "y[(i64)cols[e] + c]"),
}


@pytest.mark.parametrize("bug", sorted(PLANTED))
def test_planted_bugs_are_caught(bug, tmp_path, monkeypatch):
    monkeypatch.setenv("PHISPARSE_EMU_CACHE", str(tmp_path / "cache"))
    good, bad = PLANTED[bug]
    source = (SOURCE_DIR / "spmm.cu").read_text()
    assert good in source
    (tmp_path / "spmm.cu").write_text(source.replace(good, bad))
    mutant = EmuBackend(source_dir=tmp_path)
    caught = []
    for dtype in DTYPES:
        for case in (CASES[2], CASES[4]):
            for geometry in ({}, {"grid": 1, "block": 1}):
                try:
                    check_against_scipy(mutant, geometry, dtype, np.int64, case)
                except AssertionError:
                    caught.append((dtype, case, tuple(geometry)))
    assert caught, f"planted bug '{bug}' went unnoticed"
