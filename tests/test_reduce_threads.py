"""Dense reductions of large inputs run on threads (kernels/dense/reduce.py `reduce`):
each output element must equal numpy's, bit for bit, for every op, axis and keepdim."""
import numpy as np
import pytest

import dense
from kernels.funcs import threads

OPS = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod}


@pytest.fixture
def four_threads(monkeypatch):
    monkeypatch.setattr(threads, "_num_threads", 4)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("axis", [[1], [2], [1, 2], [0], [-1], None])
@pytest.mark.parametrize("keepdim", [False, True])
def test_threaded_reductions_equal_numpy(op, axis, keepdim, four_threads):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 160, 130)) * (0.99 if op == "prod" else 1.0)   # 10.6 MB
    assert len(threads.split_index(x.shape, x.nbytes, candidates=[0])) > 1
    got = getattr(dense, op)(dense.to_tensor(x), axis, keepdim).numpy()
    want = OPS[op](x, axis=None if axis is None else tuple(axis), keepdims=keepdim)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_threaded_integer_mean_and_sum_dtypes(four_threads):
    x = np.arange(64 * 160 * 130, dtype=np.int32).reshape(64, 160, 130) % 1000
    t = dense.to_tensor(x)
    np.testing.assert_array_equal(dense.sum(t, [2]).numpy(), x.sum(axis=2))
    assert dense.sum(t, [2]).numpy().dtype == np.int64
    np.testing.assert_array_equal(dense.mean(t, [1, 2]).numpy(), x.mean(axis=(1, 2)))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.complex64,
                                   np.complex128, np.int32, np.bool_])
@pytest.mark.parametrize("axis", [[1], [0, 2], None])
@pytest.mark.parametrize("keepdim", [False, True])
def test_mean_equals_numpys_for_every_dtype(dtype, axis, keepdim):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 4, 5)) * 7
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal((3, 4, 5))
    x = x.astype(dtype)
    got = dense.mean(dense.to_tensor(x), axis, keepdim).numpy()
    want = np.mean(x, axis=None if axis is None else tuple(axis), keepdims=keepdim)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("count", [3, 7, 1 << 24, (1 << 24) + 1])
def test_float32_mean_divides_as_numpy_on_both_sides_of_the_exact_count(count):
    """A float32 mean divides by a Python int count while float32 holds it exactly (the
    same bits as numpy's float64 division, by Figueroa's double-rounding bound), and
    by numpy's intp past 2**24."""
    x = np.random.default_rng(3).standard_normal((1, count)).astype(np.float32) * 1e3
    got = dense.mean(dense.to_tensor(x), [1]).numpy()
    want = np.mean(x, axis=1)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("shape,target", [((64, 33, 1100), (64, 1, 1100)),      # 33 terms
                                          ((2, 300, 3, 40, 4, 50), (1, 300, 1, 40, 1, 50))])
def test_sum_to_shape_of_few_float32_terms_is_numpys_sum_on_threads(shape, target,
                                                                     four_threads):
    from kernels.funcs.sum_to_shape import FEW_TERMS, sum_to_shape
    g = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    axes = tuple(d for d, (a, b) in enumerate(zip(shape, target)) if a != b)
    assert np.prod([shape[d] for d in axes]) <= FEW_TERMS
    got = sum_to_shape(g, target)
    assert got.dtype == np.float32 and got.shape == target
    np.testing.assert_allclose(got, g.sum(axis=axes, keepdims=True), rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(got, g.astype(np.float64).sum(axis=axes, keepdims=True),
                               rtol=1e-5, atol=1e-5)


def test_sum_to_shape_of_many_float32_terms_accumulates_in_double():
    from kernels.funcs.sum_to_shape import sum_to_shape
    g = np.full((1 << 22, 2), 0.1, np.float32)     # 4M terms: a float32 running sum drifts
    got = sum_to_shape(g, (1, 2))
    exact = np.float64(np.float32(0.1)) * (1 << 22)
    np.testing.assert_allclose(got, [[exact, exact]], rtol=1e-6)


# ------------------------------------------------- sum_flat: a sparse tensor's full sum
@pytest.mark.parametrize("threads_", [1, 4])
@pytest.mark.parametrize("n", [64 * 1024 - 1, 64 * 1024, 5 * 64 * 4096 + 12345, 2 * 10**6 + 1023])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sum_flat_is_exact_where_every_order_is(n, dtype, threads_, monkeypatch):
    """Small integers in float add up exactly in any order: the row-wise, threaded sum must
    give numpy's value exactly, the tail after the last whole row included."""
    from kernels.funcs.sum_to_shape import sum_flat
    monkeypatch.setattr(threads, "_num_threads", threads_)
    v = np.random.default_rng(n).integers(0, 4, n).astype(dtype)
    got = sum_flat(v, np.dtype(dtype))
    assert type(got) is np.dtype(dtype).type
    assert got == np.add.reduce(v, dtype=np.float64)


@pytest.mark.parametrize("n", [3 * 10**6, 5 * 10**6])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sum_flat_rounding_is_bounded_like_a_pairwise_sum(n, dtype, four_threads):
    """Each element passes through at most FLAT_BLAS_COLS sequential additions in a BLAS
    row (data up to FLAT_BLAS_BYTES) or 34 in an einsum row (256 values, two lanes or
    more), then a pairwise sum: the error against math.fsum stays within that many ulps
    of the sum of magnitudes, as numpy's does."""
    import math

    from kernels.funcs.sum_to_shape import FLAT_BLAS_BYTES, FLAT_BLAS_COLS, sum_flat
    v = (np.random.default_rng(7).standard_normal(n) + 0.5).astype(dtype)
    exact = math.fsum(v.astype(np.float64))
    eps = np.finfo(dtype).eps
    chain = FLAT_BLAS_COLS if v.nbytes <= FLAT_BLAS_BYTES else 34
    bound = (chain + 2 * math.log2(v.size)) * eps * float(np.abs(v).astype(np.float64).sum())
    assert abs(float(sum_flat(v, np.dtype(dtype))) - exact) <= bound
    assert abs(float(np.add.reduce(v)) - exact) <= bound     # the bound holds numpy too


@pytest.mark.parametrize("n", [10**6, 6 * 10**6])
def test_sum_flat_is_as_accurate_as_numpys_pairwise_sum_on_cancelling_values(n, four_threads):
    """Zero-mean float32 values, where the order of additions shows: the median error
    over seeds (relative to the sum of magnitudes) stays within 1.5x numpy's, on the BLAS
    way (1e6 values) and the einsum way (6e6; rows of 1024, 64 additions a lane, were
    2.5x)."""
    import math

    from kernels.funcs.sum_to_shape import sum_flat
    ours, numpys = [], []
    for seed in range(6):
        v = np.random.default_rng(seed).standard_normal(n).astype(np.float32)
        exact = math.fsum(v.astype(np.float64))
        scale = float(np.abs(v).astype(np.float64).sum())
        ours.append(abs(float(sum_flat(v, np.dtype(np.float32))) - exact) / scale)
        numpys.append(abs(float(np.add.reduce(v)) - exact) / scale)
    assert np.median(ours) <= 1.5 * np.median(numpys)


@pytest.mark.parametrize("threads_", [1, 4])
def test_sum_flat_keeps_the_sign_of_a_zero_total(threads_, monkeypatch):
    """Row sums start from +0.0: a zero total takes numpy's sign, whichever
    numpy gives for an all -0.0 input and for a cancelling one."""
    from kernels.funcs.sum_to_shape import sum_flat
    monkeypatch.setattr(threads, "_num_threads", threads_)
    z = np.full(3 * 10**5, -0.0, np.float32)
    got = sum_flat(z, np.dtype(np.float32))
    assert got == 0 and np.signbit(got) == np.signbit(np.add.reduce(z))
    c = np.tile(np.array([1.5, -1.5]), 10**5)
    for v in (c, np.concatenate([[-0.0], c])):
        got = sum_flat(v, np.dtype(np.float64))
        assert got == 0 and np.signbit(got) == np.signbit(np.add.reduce(v))


def test_sum_flat_propagates_nan_and_inf():
    from kernels.funcs.sum_to_shape import sum_flat
    v = np.ones(3 * 10**5, np.float64)
    v[123456] = np.inf
    assert sum_flat(v, np.dtype(np.float64)) == np.inf
    v[7] = -np.inf
    assert np.isnan(sum_flat(v, np.dtype(np.float64)))
    w = np.ones(3 * 10**5, np.float32)
    w[-1] = np.nan
    assert np.isnan(sum_flat(w, np.dtype(np.float32)))


def test_sum_flat_takes_numpys_path_for_other_inputs():
    """Strided, integer, float16 and cast sums are one np.add.reduce: numpy's bits."""
    from kernels.funcs.sum_to_shape import sum_flat
    rng = np.random.default_rng(2)
    v = rng.standard_normal(4 * 64 * 4096).astype(np.float32)
    assert sum_flat(v[::2], np.dtype(np.float32)) == np.add.reduce(v[::2])
    assert sum_flat(v, np.dtype(np.float64)) == np.add.reduce(v, dtype=np.float64)
    h = v.astype(np.float16)
    assert sum_flat(h, np.dtype(np.float16)) == np.add.reduce(h)
    i = rng.integers(-9, 9, v.size)
    assert sum_flat(i, np.dtype(np.int64)) == i.sum()
