"""``sddmm.cu`` and the matmul family's 'gpu' kernels, on the CPU emulator (and cupy).

1. The launcher against numpy for every dtype, both index dtypes, nnz 0,
   an inner dim of 0 and forced launch geometries (1x1 drives the
   grid-stride loop).
2. Every 'gpu' kernel of the matmul family, fetched from the registry and
   run with the emulator as the GPU backend (scipy's sparsetools standing in
   for cuSPARSE), against the 'cpu' kernel.
3. Planted bugs: mutated copies of ``sddmm.cu`` that the first check must
   catch.
"""
import numpy as np
import pytest

import kernels.sparse.matmul  # noqa: F401  (registers the kernels)
import sparse  # noqa: F401
from cuda_emu.fixtures import engine, geometry, to_host  # noqa: F401 (fixtures)
from cuda_emu.fixtures import mutant as mutated
from kernels.core import registry
from kernels.gpu.sddmm import sddmm as launch_sddmm
from kernels.sparse.data import CooData, CsrData
from test_cuda_registered import emu  # noqa: F401 (the recording emulator fixture)

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
CASES = [(0, 4, 3, 5), (37, 6, 9, 8), (200, 50, 40, 3), (11, 4, 4, 0), (5, 1, 1, 1)]


def values(shape, dtype, rng):
    a = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


def check_against_numpy(engine, geometry, dtype, index_dtype, case):
    """Raise AssertionError unless the launcher matches numpy on ``case``."""
    nnz, m, n, k = case
    rng = np.random.default_rng(nnz + k)
    rows = rng.integers(0, m, nnz).astype(index_dtype)
    cols = rng.integers(0, n, nnz).astype(index_dtype)
    x, yt = values((m, k), dtype, rng), values((n, k), dtype, rng)
    xp = engine.xp
    got = launch_sddmm(engine, xp.asarray(rows), xp.asarray(cols), xp.asarray(x),
                       xp.asarray(yt), **geometry)
    assert got.dtype == np.dtype(dtype) and got.shape == (nnz,)
    want = np.einsum("ij,ij->i", x[rows], yt[cols])
    rtol = 1e-5 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-12
    np.testing.assert_allclose(to_host(got), want, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64], ids=str)
def test_sddmm_matches_numpy(engine, geometry, dtype, index_dtype, case):
    check_against_numpy(engine, geometry, dtype, index_dtype, case)


def test_sddmm_is_the_same_on_every_geometry(engine):
    rng = np.random.default_rng(0)
    args = [engine.xp.asarray(a) for a in (rng.integers(0, 30, 500), rng.integers(0, 20, 500),
                                           values((30, 33), np.float32, rng),
                                           values((20, 33), np.float32, rng))]
    runs = [to_host(launch_sddmm(engine, *args, grid=g, block=b)).tobytes()
            for g, b in ((None, None), (1, 1), (3, 5), (7, 64))]
    assert len(set(runs)) == 1


def test_sddmm_errors(engine):
    xp = engine.xp
    i = xp.zeros(2, np.int64)
    with pytest.raises(TypeError, match="sddmm: dtype int64 is not float32"):
        launch_sddmm(engine, i, i, xp.ones((2, 2), np.int64), xp.ones((2, 2), np.int64))
    with pytest.raises(ValueError, match="do not fit"):
        launch_sddmm(engine, i, i, xp.ones((2, 2)), xp.ones((2, 3)))


# ---------------------------------------------------------------- registered kernels
def coo(shape, nnz, dtype, rng):
    idx = np.array([rng.integers(0, s, nnz) for s in shape], np.int64)
    return CooData(idx, values(nnz, dtype, rng), tuple(shape))


def csr(shape, nnz, dtype, rng):
    from kernels.sparse.convert import coo_to_csr
    return coo_to_csr(coo(shape, nnz, dtype, rng))


def _same(a, b):
    if isinstance(a, tuple) and not isinstance(a, (CooData, CsrData)):
        for p, q in zip(a, b):
            _same(p, q)
        return
    if isinstance(a, (CooData, CsrData)):
        for p, q in zip(a[:-1], b[:-1]):
            _same(p, q)
        return
    np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-10, atol=1e-10)


def _cases(rng, dtype, make):
    """(kernel name, layout of its selecting argument, arguments) for every family kernel."""
    x, y = make((2, 4, 5), 9, dtype, rng), make((2, 5, 3), 7, dtype, rng)
    lay = "sparse_coo" if isinstance(x, CooData) else "sparse_csr"
    d, g, left = (values(s, dtype, rng) for s in ((2, 5, 3), (2, 4, 3), (2, 3, 4)))
    prod_ = registry.lookup("matmul_sparse_sparse", "cpu", lay, dtype)(x, y)
    g_sparse = prod_._replace(values=values(prod_.values.shape, dtype, rng))
    mask, mx, my = make((2, 4, 3), 8, dtype, rng), values((2, 4, 6), dtype, rng), \
        values((2, 6, 3), dtype, rng)
    inp = make((2, 4, 3), 5, dtype, rng)
    return [("matmul_sparse_dense", lay, (x, d)),
            ("matmul_dense_sparse", "dense", (left, x)),
            ("matmul_sparse_sparse", lay, (x, y)),
            ("mv_sparse", lay, (x, d[..., 0])),
            ("masked_matmul", lay, (mx, my, mask)),
            ("addmm_dense", lay, (g, x, d, 0.5, 2.0)),
            ("addmm_sparse", lay, (inp, x, y, 0.5, 2.0)),
            ("matmul_sparse_dense_grad", lay, (x, d, g)),
            ("matmul_dense_sparse_grad", "dense", (left, x, values((2, 3, 5), dtype, rng))),
            ("matmul_sparse_sparse_grad", lay, (x, y, g_sparse)),
            ("mv_sparse_grad", lay, (x, d[..., 0], g[..., 0])),
            ("masked_matmul_grad", lay, (mx, my, mask)),
            ("addmm_dense_grad", lay, (g, x, d, g, 0.5, 2.0))]


@pytest.mark.parametrize("dtype", [np.float64, np.complex128, np.int64], ids=str)
@pytest.mark.parametrize("make", [coo, csr], ids=["coo", "csr"])
def test_registered_gpu_kernels_match_the_cpu_kernels(emu, dtype, make):
    rng = np.random.default_rng(3)
    for name, layout, args in _cases(rng, dtype, make):
        if name.endswith("_grad") and np.dtype(dtype).kind == "i":
            continue
        cpu, gpu = (registry.lookup(name, b, layout, dtype)(*args) for b in ("cpu", "gpu"))
        _same(cpu, gpu)
    for kernel in ("sddmm_", "spmm_"):
        assert any(n.startswith(kernel) for n in emu.launched) == (np.dtype(dtype).kind != "i")


# ---------------------------------------------------------------- planted bugs
PLANTED = {
    "no grid-stride loop": ("GRID_STRIDE_LOOP(e, nnz) {",
                            "for (i64 e = blockIdx.x * (i64)blockDim.x + threadIdx.x; "
                            "e < nnz; e = nnz) {"),
    "complex sign": ("- a[2 * j + 1] * b[2 * j + 1]", "+ a[2 * j + 1] * b[2 * j + 1]"),
    "first product skipped": ("for (i64 j = 0; j < k; ++j)", "for (i64 j = 1; j < k; ++j)"),
}


@pytest.mark.parametrize("bug", sorted(PLANTED))
def test_planted_bugs_are_caught(bug, tmp_path, monkeypatch):
    mutant = mutated(tmp_path, monkeypatch, "sddmm.cu", *PLANTED[bug])
    caught = []
    for dtype in DTYPES:
        for geometry in ({}, {"grid": 1, "block": 1}):
            try:
                check_against_numpy(mutant, geometry, dtype, np.int64, CASES[2])
            except AssertionError:
                caught.append((dtype, tuple(geometry)))
    assert caught, f"planted bug '{bug}' went unnoticed"
