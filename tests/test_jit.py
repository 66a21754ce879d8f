"""Compiled loops (kernels.funcs.jit): compiled once under threads, the prefetch hint,
and the SDDMM loop's row-pointer walk and index clipping against numpy."""
import threading

import numpy as np
import pytest

from kernels.funcs import jit
from kernels.funcs.jit import prefetch_row
from kernels.funcs.threads import set_num_threads
from kernels.sparse import blas


def test_a_loop_is_compiled_once_when_threads_race_for_its_first_call(monkeypatch):
    made = []
    real = jit._compile
    monkeypatch.setattr(jit, "_compile", lambda fn, *opts: made.append(fn) or real(fn, *opts))

    def weighted(a, w):
        total = 0.0
        for i in range(a.shape[0]):
            total += a[i] * w
        return total
    fn = jit.Loop(weighted)
    a = np.arange(100.0)
    results, start = [], threading.Barrier(8)

    def call():
        start.wait()
        results.append(fn(a, 2.0))
    threads = [threading.Thread(target=call) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(made) == 1
    assert results == [9900.0] * 8                      # 2 * (0 + 1 + ... + 99)


def test_prefetch_row_is_a_no_op_in_python_and_a_hint_when_compiled():
    """A loop calls the stub by its imported name; compiled, it is the intrinsic."""
    def rows_sum(a, order):
        total = 0.0
        for i in range(order.shape[0]):
            if i + 1 < order.shape[0]:
                prefetch_row(a, order[i + 1])
            total += a[order[i], 0]
        return total
    a = np.random.default_rng(0).random((50, 70))
    order = np.array([3, 49, 0, 17, 17], np.int32)
    assert prefetch_row(a, 3) is None
    assert jit.Loop(rows_sum)(a, order) == pytest.approx(a[order, 0].sum(), rel=1e-12)


def test_compiles_covers_numeric_dtypes_but_not_bool_or_half():
    assert jit.compiles(np.float32, np.complex128, np.int8, np.uint64)
    assert not jit.compiles(np.bool_) and not jit.compiles(np.float16)
    assert not jit.compiles(np.float64, np.longdouble)


@pytest.mark.parametrize("threads", [1, 3])
def test_sddmm_walks_row_pointers_with_empty_rows_and_pieces_cutting_rows(threads):
    """Row pointers with empty first, middle and last rows, over enough entries that the
    threads' pieces start inside rows: the same values as the row ids' path and numpy."""
    rng = np.random.default_rng(5)
    m, n, k = 400, 300, 24
    counts = rng.integers(0, 900, m)
    counts[:3] = counts[150:170] = counts[-5:] = 0
    crows = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    cols = rng.integers(0, n, int(crows[-1])).astype(np.int32)
    rows = np.repeat(np.arange(m), counts)
    x, yt = rng.standard_normal((m, k)), rng.standard_normal((n, k))
    old = set_num_threads(threads)
    try:
        walked = blas.sddmm(None, cols, x, yt, crows=crows)
        by_ids = blas.sddmm(rows, cols, x, yt)
    finally:
        set_num_threads(old)
    want = np.einsum("ij,ij->i", x[rows], yt[cols])         # sums of 24 products
    np.testing.assert_allclose(walked, want, rtol=1e-12, atol=1e-13)
    assert walked.tobytes() == by_ids.tobytes()


def test_sddmm_clips_indices_out_of_range_as_numpy_take_does():
    """The loop never reads outside x or yt: an out-of-range index (only a corrupted
    pattern could carry one) reads the nearest row, as take(mode="clip")."""
    rng = np.random.default_rng(2)
    x, yt = rng.standard_normal((4, 8)), rng.standard_normal((5, 8))
    rows, cols = np.array([-7, 0, 3, 99]), np.array([2, 500, -1, 4])
    want = np.einsum("ij,ij->i", np.take(x, rows, 0, mode="clip"),
                     np.take(yt, cols, 0, mode="clip"))
    np.testing.assert_allclose(blas.sddmm(rows, cols, x, yt), want, rtol=1e-12)


def test_without_numba_sddmm_and_spmm_take_numpy_and_scipy(monkeypatch):
    """An install without numba (``pip install --no-deps``) still computes SDDMM (the
    numpy gather) and SpMM (scipy's csr_matvecs): the same values, SpMM's bits."""
    from kernels.sparse.data import CsrData
    rng = np.random.default_rng(3)
    x, yt = rng.standard_normal((30, 9)), rng.standard_normal((20, 9))
    rows, cols = rng.integers(0, 30, 500), rng.integers(0, 20, 500)
    crows = np.searchsorted(np.sort(rows), np.arange(31))
    a = CsrData(crows, cols, rng.standard_normal(500), (30, 20))
    compiled = blas.sddmm(rows, cols, x, yt), blas.spmm(a, yt)
    monkeypatch.setattr(jit, "_FOUND", [False])
    monkeypatch.setattr(blas, "_sddmm_loop", None)                # never called
    monkeypatch.setattr(blas, "_spmm_loop", None)
    gathered = blas.sddmm(rows, cols, x, yt)
    np.testing.assert_allclose(gathered, compiled[0], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(gathered, np.einsum("ij,ij->i", x[rows], yt[cols]), rtol=1e-12)
    assert blas.spmm(a, yt).tobytes() == compiled[1].tobytes()


def test_a_numba_that_fails_to_import_leaves_the_numpy_paths(monkeypatch):
    """numba present but refusing to import (a version that rejects this numpy raises
    ImportError) counts as absent: nothing compiles, nothing raises."""
    import sys
    monkeypatch.setitem(sys.modules, "numba", None)           # import numba -> ImportError
    monkeypatch.setattr(jit, "_FOUND", [])
    assert not jit.available() and not jit.compiles(np.float64)


def test_docstring_examples_run():
    import doctest
    res = doctest.testmod(jit)
    assert res.failed == 0 and res.attempted > 0
