"""Sparse arithmetic: hand-worked corners, errors, hypothesis broadcasting, scipy parity.

The generic checks (forward for every dtype, gradients, infer-meta) live in
the sparse op database (tests/sparse_opdb); this file covers what API2.md
settles beyond them.
"""
import warnings

import numpy as np
import pytest
import scipy.sparse
from hypothesis import given, strategies as st

import dense
import sparse
from opdb import numeric_vjp

UFUNC = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide}


def coo(idx, vals, shape, **kw):
    return sparse.sparse_coo_tensor(idx, vals, shape, **kw)


# ---------------------------------------------------------------- binary ops
def test_union_and_intersection_store_each_coordinate_once():
    x = coo([[0, 1, 1, 0], [2, 0, 2, 2]], [1.0, 2.0, 3.0, 4.0], [2, 3])   # (0, 2) twice
    y = coo([[0, 1], [2, 1]], [5.0, 6.0], [2, 3])
    s = sparse.add(x, y)
    assert s.is_coalesced()
    assert s.indices().numpy().tolist() == [[0, 1, 1, 1], [2, 0, 1, 2]]
    assert s.values().numpy().tolist() == [10.0, 2.0, 6.0, 3.0]
    m = sparse.multiply(x, y)
    assert m.indices().numpy().tolist() == [[0], [2]] and m.values().numpy().tolist() == [25.0]
    d = sparse.subtract(x, x)                   # the union keeps its cancelled entries
    assert d.nnz() == 3 and not d.values().numpy().any()


def test_divide_is_numpys_value_at_each_union_coordinate():
    x = coo([[0, 1]], [6.0, -3.0], [3])
    y = coo([[0, 2]], [2.0, 4.0], [3])
    z = sparse.divide(x, y)
    assert z.indices().numpy().tolist() == [[0, 1, 2]]
    assert z.values().numpy().tolist() == [3.0, -np.inf, 0.0]


@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_int32_indices_stay_int32(layout):
    x = coo(np.array([[0, 1], [1, 2]], np.int32), [1.0, 2.0], [2, 3])
    y = coo(np.array([[1], [2]], np.int32), [5.0], [2, 3])
    if layout == "csr":
        x, y = x.to_sparse_csr(), y.to_sparse_csr()
        assert x.crows().numpy().dtype == np.int32
    for out in (x + y, x * y, x / y, x * dense.to_tensor(np.ones(3)), sparse.sum(x, axis=0)):
        buf = out.indices() if out.is_sparse_coo() else out.crows()
        assert buf.numpy().dtype == np.int32, out
    mixed = x + (coo([[1], [2]], [5.0], [2, 3]) if layout == "coo"
                 else coo([[1], [2]], [5.0], [2, 3]).to_sparse_csr())
    buf = mixed.indices() if layout == "coo" else mixed.crows()
    assert buf.numpy().dtype == np.int64


def test_broadcasting_examples_of_the_issue():
    rng = np.random.default_rng(0)
    b = dense.to_tensor(rng.standard_normal((2, 3, 4)))
    x = b.to_sparse_coo(3)
    col = rng.standard_normal(4)
    got = sparse.multiply(x, dense.to_tensor(col))            # [B, M, N] * [N]
    np.testing.assert_allclose(got.to_dense().numpy(), b.numpy() * col)
    m = dense.to_tensor(rng.standard_normal((3, 4))).to_sparse_csr()
    r = rng.standard_normal((3, 1))
    got = sparse.multiply(m, dense.to_tensor(r))              # [M, N] * [M, 1]
    assert got.is_sparse_csr()
    np.testing.assert_allclose(got.to_dense().numpy(), m.to_dense().numpy() * r)
    one = coo([[0, 0], [1, 3]], [1.0, 2.0], [1, 4])
    got = sparse.add(one, m.to_sparse_coo())                  # [1, N] + [M, N]
    np.testing.assert_allclose(got.to_dense().numpy(),
                               one.to_dense().numpy() + m.to_dense().numpy())


def test_sparse_with_dense():
    x = coo([[0, 1], [1, 2]], [1.0, 2.0], [2, 3])
    d = dense.to_tensor(np.arange(6.0).reshape(2, 3))
    assert (x + d).layout == "dense" and (d - x).layout == "dense"
    np.testing.assert_array_equal((x + d).numpy(), x.to_dense().numpy() + d.numpy())
    np.testing.assert_array_equal(sparse.subtract(d, x).numpy(), d.numpy() - x.to_dense().numpy())
    p = sparse.multiply(d, x)                                 # dense * sparse is sparse
    assert p.is_sparse_coo() and p.values().numpy().tolist() == [1.0, 10.0]
    q = sparse.divide(d, x)                                   # on x's pattern
    assert q.values().numpy().tolist() == [1.0, 2.5]


def test_scalars_are_weak_and_keep_the_pattern():
    x = coo([[0, 1]], np.array([1.0, 2.0], np.float32), [3])
    assert (x * 2.0).dtype == np.float32 and (2.0 * x).dtype == np.float32
    assert (x / 2).values().numpy().tolist() == [0.5, 1.0]
    y = np.float64(2) * x
    assert isinstance(y, sparse.SparseCooTensor) and y.dtype == np.float64
    assert sparse.multiply(x, 3).values().numpy().tolist() == [3.0, 6.0]
    assert x + 0 is x and x - 0.0 is x
    np.testing.assert_array_equal((0 - x).to_dense().numpy(), -x.to_dense().numpy())
    with pytest.raises(TypeError, match="dense"):
        x + 1
    with pytest.raises(TypeError, match="subtract"):
        1.5 - x
    for scalar in (1.0, 0):                 # 0 / 0 is nan wherever x stores nothing
        with pytest.raises(TypeError, match=rf"^divide: the scalar {scalar!r} divided by a "
                                            "sparse tensor would be dense"):
            scalar / x


@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_pow_and_scale_promote_like_numpy_with_weak_scalars(layout):
    """``x ** k`` and ``scale`` give numpy's dtype for the stored values (NEP 50)."""
    vals = {dt: np.array([3, -4], dt) for dt in (np.int32, np.int64, np.float32)}
    for dt, v in vals.items():
        x = coo([[0, 1], [2, 0]], v, [2, 3])
        x = x.to_sparse_csr() if layout == "csr" else x
        for got, want in [(x ** 2, v ** 2), (x ** 2.0, v ** 2.0), (x ** 0, v ** 0),
                          (sparse.pow(x, np.float64(2)), v ** np.float64(2)),
                          (sparse.scale(x, 2, 1), v * 2 + 1), (sparse.scale(x), v * 1 + 0),
                          (sparse.scale(x, 0.5, bias_after_scale=False), (v + 0) * 0.5)]:
            assert got.dtype == want.dtype, (dt, want.dtype)
            np.testing.assert_array_equal(np.sort(got.values().numpy()), np.sort(want))
    x = coo([[0, 1], [2, 0]], vals[np.int32], [2, 3])
    with pytest.raises(ValueError, match=r"^pow: the exponent factor holds negative integers "
                                         r"\(down to -1\) and the base x's values has dtype int32"):
        x ** -1
    assert (sparse.cast(x, value_dtype="float64") ** -1).values().numpy().tolist() == [1 / 3,
                                                                                      -0.25]


def test_binary_errors():
    x = coo([[0, 1], [1, 2]], [1.0, 2.0], [2, 3])
    with pytest.raises(TypeError, match="add"):
        sparse.add(x, x.to_sparse_csr())
    with pytest.raises(ValueError, match="multiply.*broadcast"):
        sparse.multiply(x, coo([[0]], [1.0], [4]))
    with pytest.raises(TypeError, match="subtract"):
        sparse.subtract(dense.to_tensor(np.ones(2)), dense.to_tensor(np.ones(2)))
    with pytest.raises(TypeError):
        np.asarray(x)


def test_nnz0_operands():
    e = coo(np.zeros((2, 0), int), np.zeros(0), [2, 3])
    x = coo([[0], [1]], [4.0], [2, 3])
    assert sparse.add(e, e).nnz() == 0 and sparse.add(e, e).shape == [2, 3]
    assert sparse.multiply(e, x).nnz() == 0
    assert sparse.add(e, x).values().numpy().tolist() == [4.0]


# ---------------------------------------------------------------- zero-size inputs
def _empty(case, it):
    """A zero-size sparse tensor (no entries, or a dense dim of size 0) with index dtype
    ``it``, and its dense numpy form."""
    z = lambda n: np.zeros(n, it)                       # noqa: E731
    build = {
        "coo rows 0": lambda: coo(np.zeros((2, 0), it), np.zeros(0), [0, 3]),
        "coo dense dim 0": lambda: coo(np.array([[0, 1]], it), np.zeros((2, 0)), [2, 0]),
        "coo nnz 0": lambda: coo(np.zeros((2, 0), it), np.zeros(0), [2, 3]),
        "coo hybrid nnz 0": lambda: coo(np.zeros((1, 0), it), np.zeros((0, 3)), [2, 3]),
        "coo 3-D batch 0": lambda: coo(np.zeros((3, 0), it), np.zeros(0), [0, 3, 4]),
        "csr rows 0": lambda: sparse.sparse_csr_tensor(z(1), z(0), np.zeros(0), [0, 3]),
        "csr cols 0": lambda: sparse.sparse_csr_tensor(z(3), z(0), np.zeros(0), [2, 0]),
        "csr nnz 0": lambda: sparse.sparse_csr_tensor(z(3), z(0), np.zeros(0), [2, 3]),
        "csr 3-D batch 0": lambda: sparse.sparse_csr_tensor(z(0), z(0), np.zeros(0), [0, 3, 4]),
        "csr 3-D rows 0": lambda: sparse.sparse_csr_tensor(z(2), z(0), np.zeros(0), [2, 0, 4]),
        "csr 3-D cols 0": lambda: sparse.sparse_csr_tensor(z(8), z(0), np.zeros(0), [2, 3, 0]),
        "csr 3-D nnz 0": lambda: sparse.sparse_csr_tensor(z(8), z(0), np.zeros(0), [2, 3, 4]),
    }
    x = build[case]()
    return x, np.zeros(x.shape)


EMPTY = ["coo rows 0", "coo dense dim 0", "coo nnz 0", "coo hybrid nnz 0", "coo 3-D batch 0",
         "csr rows 0", "csr cols 0", "csr nnz 0", "csr 3-D batch 0", "csr 3-D rows 0",
         "csr 3-D cols 0", "csr 3-D nnz 0"]


def _leaf(x):
    """x rebuilt on a values tensor that receives a gradient."""
    v = dense.to_tensor(x.values().numpy(), stop_gradient=False)
    if x.is_sparse_coo():
        return sparse.sparse_coo_tensor(x.indices(), v, x.shape), v
    return sparse.sparse_csr_tensor(x.crows(), x.cols(), v, x.shape), v


def _index_buffers(t):
    return [t.indices()] if t.is_sparse_coo() else [t.crows(), t.cols()]


def assert_empty_like(out, x, ref):
    """``out`` is sparse in x's layout and index dtype, keeps x's entry count (0 unless a
    dense dim is 0), and equals the numpy reference."""
    assert out.is_sparse_coo() == x.is_sparse_coo() and out.nnz() == x.nnz()
    assert [b.numpy().dtype for b in _index_buffers(out)] == \
        [b.numpy().dtype for b in _index_buffers(x)]
    np.testing.assert_array_equal(out.to_dense().numpy(), ref)
    assert out.to_dense().numpy().shape == ref.shape


@pytest.mark.parametrize("it", [np.int32, np.int64])
@pytest.mark.parametrize("case", EMPTY)
def test_valuewise_ops_softmax_and_scalars_on_zero_size_inputs(case, it):
    x, ref = _empty(case, it)
    for name in ["abs", "neg", "sqrt", "square", "sin", "tanh", "expm1", "log1p", "relu",
                 "relu6", "isnan"]:
        assert_empty_like(getattr(sparse, name)(x), x, ref)     # implicit zeros stay zero
    for out in (sparse.pow(x, 2.0), sparse.scale(x, 2.0, 1.0), sparse.leaky_relu(x), x * 2.0,
                np.float64(2) * x, x / 2.0, -x, x + 0.0, sparse.softmax(x)):
        assert_empty_like(out, x, ref)
    for op in (lambda t: sparse.softmax(t), lambda t: sparse.sin(t) * 3.0):
        leaf, v = _leaf(x)
        op(leaf).backward()
        assert v.grad.shape == v.shape


@pytest.mark.parametrize("it", [np.int32, np.int64])
@pytest.mark.parametrize("case", EMPTY)
@pytest.mark.parametrize("op", list(UFUNC))
def test_binary_ops_on_zero_size_inputs_match_numpy(case, it, op):
    x, ref = _empty(case, it)
    fn = UFUNC[op]
    assert_empty_like(getattr(sparse, op)(x, x), x, ref)
    for d in (np.full(x.shape, 2.0), np.full(x.shape[-1:], 2.0)):
        dt = dense.to_tensor(d)
        over_x = np.zeros(ref.shape) if op == "divide" else fn(d, ref)   # on x's pattern
        for out, want in ((getattr(sparse, op)(x, dt), fn(ref, d)),
                          (getattr(sparse, op)(dt, x), over_x)):
            if op in ("add", "subtract"):                       # a dense result
                assert isinstance(out, dense.Tensor)
                np.testing.assert_array_equal(out.numpy(), want)
            else:
                assert_empty_like(out, x, want)
    leaf, v = _leaf(x)
    getattr(sparse, op)(leaf * dense.to_tensor(np.ones(x.shape)), leaf).backward()
    assert v.grad.shape == v.shape


@pytest.mark.parametrize("it", [np.int32, np.int64])
def test_batch_zero_csr_arithmetic_of_the_review(it):
    z, ref = _empty("csr 3-D batch 0", it)
    one = sparse.sparse_csr_tensor(np.array([0, 1, 1, 1], it), np.array([2], it), [5.0],
                                   [1, 3, 4])
    for out in (z + z, z - z, z * z, z / z, z * dense.to_tensor(np.ones((0, 3, 4))),
                z * dense.to_tensor(np.ones(4)), z * 2.0, z * one, z + one):
        assert_empty_like(out, z, ref)
    bigger = one + sparse.sparse_csr_tensor(np.zeros(4, it), np.zeros(0, it), np.zeros(0),
                                            [1, 3, 4])   # a union with a non-empty operand
    assert bigger.nnz() == 1 and bigger.to_dense().numpy()[0, 0, 2] == 5.0


def test_softmax_of_a_zero_size_dense_dim_keeps_the_pattern():
    x = coo([[0]], np.zeros((1, 0)), [2, 0], stop_gradient=False)
    for axis in (-1, 0):
        out = sparse.softmax(x, axis)
        assert out.indices().numpy().tolist() == [[0]] and out.values().shape == [1, 0]
    sparse.softmax(x).backward()
    assert x.grad.indices().numpy().tolist() == [[0]] and x.grad.values().shape == [1, 0]
    h = coo([[0, 1]], np.zeros((2, 0, 3)), [2, 0, 3])            # the softmax axis is not 0
    assert sparse.softmax(h).values().shape == [2, 0, 3]


# ---------------------------------------------------------------- hypothesis
@st.composite
def operand_pairs(draw):
    """Two broadcastable shapes, each operand COO with a drawn sparse_dim, and an op."""
    out = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3))
    shapes = []
    for _ in range(2):
        rank = draw(st.integers(1, len(out)))
        shapes.append([1 if draw(st.booleans()) else s for s in out[len(out) - rank:]])
    return shapes, draw(st.sampled_from(sorted(UFUNC))), draw(st.integers(0, 2 ** 16))


def _random_coo(shape, rng):
    d = rng.standard_normal(shape) * (rng.random(shape) < 0.5)
    return dense.to_tensor(d).to_sparse_coo(int(rng.integers(1, len(shape) + 1)))


def _stored(t):
    """True at every element a stored entry covers (dense dims included)."""
    ones = dense.to_tensor(np.ones(t.values().shape))
    return sparse.with_values(t, ones).to_dense().numpy() != 0


@given(operand_pairs())
def test_broadcasting_matches_numpy(case):
    (sx, sy), op, seed = case
    rng = np.random.default_rng(seed)
    x, y = _random_coo(sx, rng), _random_coo(sy, rng)
    xd, yd = x.to_dense().numpy(), y.to_dense().numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        want = UFUNC[op](xd, yd)
        got = getattr(sparse, op)(x, y)
        dense_y = getattr(sparse, op)(x, dense.to_tensor(yd))
    shape = np.broadcast_shapes(xd.shape, yd.shape)
    sx_mask = np.broadcast_to(_stored(x), shape)
    sy_mask = np.broadcast_to(_stored(y), shape)
    stored = sx_mask & sy_mask if op == "multiply" else sx_mask | sy_mask
    want_sparse = np.where(stored, want, 0.0)
    assert got.shape == list(shape) and got.is_coalesced()
    np.testing.assert_allclose(got.to_dense().numpy(), want_sparse)
    want_mixed = want if op in ("add", "subtract") else np.where(sx_mask, want, 0.0)
    got_mixed = dense_y if dense_y.layout == "dense" else dense_y.to_dense()
    np.testing.assert_allclose(got_mixed.numpy(), want_mixed)


# ---------------------------------------------------------------- scipy parity
def _scipy_pair(fmt, seed):
    a = scipy.sparse.random_array((30, 40), density=0.1, format=fmt, random_state=seed)
    b = scipy.sparse.random_array((30, 40), density=0.1, format=fmt, random_state=seed + 1)
    return a, b


@pytest.mark.parametrize("fmt", ["coo", "csr"])
def test_add_multiply_sum_match_scipy(fmt):
    a, b = _scipy_pair(fmt, 3)
    x, y = sparse.from_scipy(a), sparse.from_scipy(b)
    np.testing.assert_allclose((x + y).to_dense().numpy(), (a + b).toarray())
    np.testing.assert_allclose((x * y).to_dense().numpy(), a.multiply(b).toarray())
    v = np.arange(40.0)
    np.testing.assert_allclose(sparse.multiply(x, dense.to_tensor(v)).to_dense().numpy(),
                               a.multiply(v).toarray())
    np.testing.assert_allclose(sparse.sum(x).to_dense().numpy().reshape(()), a.sum())
    for axis in (0, 1):
        got = sparse.sum(x, axis=axis).to_dense().numpy().reshape(-1)
        np.testing.assert_allclose(got, a.sum(axis=axis))


# ---------------------------------------------------------------- sum and softmax
def test_sum_shapes_dtypes_and_errors():
    x = coo([[0, 1, 1], [2, 0, 2]], np.array([1, 2, 3], np.int32), [2, 3])
    assert sparse.sum(x).shape == [1] and sparse.sum(x).dtype == np.int64
    assert sparse.sum(x, dtype="float32").dtype == np.float32
    assert sparse.sum(x.to_sparse_csr()).is_sparse_csr()
    zero = coo([[0, 1]], [0.0, 0.0], [3])
    assert sparse.sum(zero).values().numpy().tolist() == [0.0]
    empty = coo(np.zeros((2, 0), int), np.zeros(0), [2, 3])
    assert sparse.sum(empty).nnz() == 0 and sparse.sum(empty, axis=1).shape == [2]
    with pytest.raises(ValueError, match="sum"):
        sparse.sum(x, axis=2)
    with pytest.raises(ValueError, match="sum"):
        sparse.sum(x, axis=[0, -2])
    with pytest.raises(TypeError, match="sum"):
        sparse.sum(dense.to_tensor(np.ones(3)))


def test_sum_gradient_over_all_zero_values_and_dense_dims():
    x = coo([[0, 1, 0]], np.zeros((3, 2)), [2, 2], stop_gradient=False)
    sparse.sum(x, axis=[0, 1]).backward(dense.to_tensor(np.array([1.0])))
    np.testing.assert_array_equal(x.grad.values().numpy(), np.ones((3, 2)))


def _sum_shape(shape, axis, keepdim, csr):
    """numpy's shape of the sum (keepdims for CSR), [1] for a COO full reduction."""
    r = np.sum(np.zeros(shape), axis=None if axis is None else tuple(axis),
               keepdims=keepdim or csr)
    return list(r.shape) or [1]


def _rebuild(t, values, stop_gradient=True):
    """A tensor with t's pattern and layout holding ``values``."""
    if t.is_sparse_csr():
        return sparse.sparse_csr_tensor(t.crows().numpy(), t.cols().numpy(), values, t.shape,
                                        stop_gradient=stop_gradient)
    return coo(t.indices().numpy(), values, t.shape, stop_gradient=stop_gradient)


def _check_sum(t, axis, keepdim):
    """Shape, layout, index dtype, values and infer-meta of sparse.sum against numpy."""
    out = sparse.sum(t, axis=axis, keepdim=keepdim)
    want = np.sum(t.to_dense().numpy(), axis=None if axis is None else tuple(axis),
                  keepdims=keepdim or t.is_sparse_csr())
    assert out.shape == _sum_shape(t.shape, axis, keepdim, t.is_sparse_csr())
    assert out.layout == t.layout and out.meta == sparse.sum.infer_meta(t.meta, axis, None,
                                                                         keepdim)
    index = (lambda s: s.crows().numpy()) if t.is_sparse_csr() else (lambda s: s.indices().numpy())
    assert index(out).dtype == index(t).dtype
    np.testing.assert_allclose(out.to_dense().numpy(), np.reshape(want, out.shape))
    return out


def _check_sum_grad(t, axis, keepdim):
    """x.grad through sum equals central differences on x's stored values; x's pattern kept."""
    v = t.values().numpy().astype(np.float64)
    w = np.random.default_rng(0).standard_normal(_sum_shape(t.shape, axis, keepdim,
                                                            t.is_sparse_csr()))
    x = _rebuild(t, v, stop_gradient=False)
    sparse.sum(x, axis=axis, keepdim=keepdim).backward(dense.to_tensor(w))
    expect = numeric_vjp(lambda u: sparse.sum(_rebuild(t, u), axis=axis, keepdim=keepdim)
                         .to_dense().numpy(), [v], 0, w)
    assert x.grad.layout == t.layout
    pattern = (lambda s: [s.crows().numpy(), s.cols().numpy()]) if t.is_sparse_csr() else \
        (lambda s: [s.indices().numpy()])
    for a, b in zip(pattern(x.grad), pattern(x)):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(x.grad.values().numpy(), expect, atol=1e-7)


def test_sum_of_every_sparse_dim_of_a_hybrid_coo_has_numpys_shape():
    x = coo([[0, 2]], [[1.0, 2.0], [3.0, 4.0]], [3, 2])
    y = coo(np.array([[0, 2], [1, 0]], np.int32), [[1.0, 2.0], [3.0, 4.0]], [3, 2, 2])
    for t, axis in ((x, [0]), (y, [0, 1]), (y, [1, 0])):
        for keepdim in (False, True):
            _check_sum(t, axis, keepdim)
            _check_sum_grad(t, axis, keepdim)
        out = sparse.sum(t, axis=axis)             # the dense dim left becomes the sparse one
        assert out.shape == [2] and out.sparse_dim() == 1 and out.is_coalesced()
        assert out.indices().numpy().tolist() == [[0, 1]]
        assert out.values().numpy().tolist() == [4.0, 6.0]
    z = coo(np.array([[0, 1], [2, 0]]), np.arange(12.0).reshape(2, 2, 3), [3, 3, 2, 3])
    for axis in ([0, 1], [1, 0, 3], [0, 1, 2]):
        out = _check_sum(z, axis, False)
        _check_sum_grad(z, axis, False)
        assert out.indices().numpy().tolist() == [list(range(out.shape[0]))]
    empty = coo(np.zeros((1, 0), np.int32), np.zeros((0, 2)), [3, 2])
    out = _check_sum(empty, [0], False)
    assert out.nnz() == 0 and out.indices().numpy().shape == (1, 0)


def test_csr_sum_has_numpys_keepdims_shape():
    c = sparse.sparse_csr_tensor(np.array([0, 2, 3], np.int32), np.array([0, 2, 1], np.int32),
                                 [1.0, 2.0, 3.0], [2, 3])
    cols = sparse.sum(c, axis=0)
    assert cols.shape == [1, 3] and cols.crows().numpy().tolist() == [0, 3]
    assert cols.cols().numpy().tolist() == [0, 1, 2]
    assert cols.values().numpy().tolist() == [1.0, 3.0, 2.0]
    b = np.random.default_rng(5).standard_normal((2, 3, 4))
    b[np.random.default_rng(6).random(b.shape) < 0.5] = 0.0
    c3 = dense.to_tensor(b).to_sparse_csr()
    for t in (c, c3):
        n = len(t.shape)
        axes = [None] + [[i] for i in range(-n, n)] + [[i, j] for i in range(n)
                                                         for j in range(n) if i < j]
        for axis in axes:
            for keepdim in (False, True):
                _check_sum(t, axis, keepdim)
            _check_sum_grad(t, axis, False)
    assert sparse.sum(c3, axis=[0, 1]).shape == [1, 1, 4]
    assert sparse.sum(c3, axis=-1).shape == [2, 3, 1] and sparse.sum(c3).shape == [1, 1, 1]


@pytest.mark.parametrize("shape", [[0, 3], [3, 0], [0, 0], [0, 3, 4], [2, 0, 4], [2, 3, 0]])
@pytest.mark.parametrize("layout", ["coo", "csr", "hybrid"])
def test_sum_of_a_zero_size_tensor_is_empty_for_every_axis(shape, layout):
    if layout == "csr":
        rows = 1 if len(shape) == 2 else shape[0]
        t = sparse.sparse_csr_tensor(np.zeros(rows * (shape[-2] + 1) if rows else 0, np.int32),
                                     np.zeros(0, np.int32), np.zeros(0), shape)
    else:
        sd = len(shape) - (layout == "hybrid")
        t = coo(np.zeros((sd, 0), np.int32), np.zeros((0,) + tuple(shape[sd:])), shape)
    n = len(shape)
    axes = [None] + [[i] for i in range(-n, n)] + [[i, j] for i in range(n) for j in range(n)
                                                     if i != j]
    for axis in axes:
        for keepdim in (False, True):
            assert _check_sum(t, axis, keepdim).nnz() == 0
        _check_sum_grad(t, axis, False)


def test_softmax_over_stored_entries_and_empty_rows():
    x = sparse.sparse_csr_tensor([0, 2, 2, 3], [0, 2, 1], np.log([1.0, 3.0, 5.0]), [3, 3])
    out = sparse.softmax(x)
    assert out.crows().numpy().tolist() == [0, 2, 2, 3]
    np.testing.assert_allclose(out.values().numpy(), [0.25, 0.75, 1.0])
    with pytest.raises(ValueError, match="softmax"):
        sparse.softmax(x, axis=0)
    with pytest.raises(TypeError, match="softmax"):
        sparse.softmax(dense.to_tensor(np.ones((2, 2))))
    h = coo([[0, 1]], np.log([[1.0, 3.0], [2.0, 2.0]]), [2, 2])   # last axis is dense
    np.testing.assert_allclose(sparse.softmax(h).values().numpy(), [[0.25, 0.75], [0.5, 0.5]])


@pytest.mark.parametrize("to_csr", [False, True])
def test_softmax_of_a_slice_holding_inf_is_nan_without_a_warning(to_csr):
    """exp(inf - inf) is NaN, as torch's softmax gives; other slices are untouched and
    numpy's 'invalid value' warning from inside the kernel does not reach the caller."""
    x = coo([[0, 0, 1], [0, 2, 1]], np.array([np.inf, 1.0, 0.0]), [2, 3])
    x = x.to_sparse_csr() if to_csr else x
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = sparse.softmax(x).values().numpy()
    assert np.isnan(out[:2]).all() and out[2] == 1.0


def test_softmax_acts_on_each_stored_duplicate_as_paddle():
    """Duplicates are separate stored entries (Paddle's rule): [0.5, 0.5] at one
    coordinate and 1.0 beside it give e^0.5 / (2 e^0.5 + e), twice, and e / (2 e^0.5 + e);
    ``coalesce()`` first gives the softmax of the logical values (torch's)."""
    x = coo([[0, 0, 1]], np.array([0.5, 0.5, 1.0]), [3])
    z = 2 * np.exp(0.5) + np.e
    np.testing.assert_allclose(sparse.softmax(x).values().numpy(),
                               [np.exp(0.5) / z, np.exp(0.5) / z, np.e / z])
    np.testing.assert_allclose(sparse.softmax(x.coalesce()).values().numpy(), [0.5, 0.5])


def _softmax_by_slices(coords, v, axis):
    """Softmax of each slice (entries sharing every coordinate but ``axis``), by a loop."""
    keys = [tuple(np.delete(coords[:, j], axis)) for j in range(v.shape[0])]
    out = np.empty_like(v)
    for key in set(keys):
        idx = [j for j, k in enumerate(keys) if k == key]
        e = np.exp(v[idx] - v[idx].max())
        out[idx] = e / e.sum()
    return out


@pytest.mark.parametrize("form", ["coalesced", "unordered", "csr", "csr3"])
def test_softmax_of_entries_already_grouped_by_slice(form):
    """A coalesced COO along its last sparse dim and a CSR along its rows come slice by
    slice, so they are not sorted; the softmax and its gradient are each slice's, as a loop
    gives (CSR columns unsorted within rows, a COO out of order for contrast)."""
    rng = np.random.default_rng(3)
    shape = [4, 5, 6] if form == "csr3" else [6, 7]
    coords = np.unique(np.stack([rng.integers(0, d, 40) for d in shape]), axis=1)
    v = rng.standard_normal(coords.shape[1])
    x = coo(coords, v, shape)
    if form == "coalesced":
        x = x.coalesce()
        assert x.is_coalesced()
    elif form == "unordered":
        order = rng.permutation(coords.shape[1])
        coords, v = coords[:, order], v[order]
        x = coo(coords, v, shape)
    else:
        x = x.to_sparse_csr()
        coords = np.stack([a.numpy() for a in
                           ([x.to_sparse_coo(len(shape)).indices()[d] for d in range(len(shape))])])
        v = x.values().numpy()
    want = _softmax_by_slices(coords, v, len(shape) - 1)
    leaf = dense.to_tensor(v, stop_gradient=False)
    t = (sparse.sparse_coo_tensor(coords, leaf, shape) if form in ("coalesced", "unordered")
         else sparse.sparse_csr_tensor(x.crows(), x.cols(), leaf, shape))
    if form == "coalesced":
        t = t.coalesce()
    out = sparse.softmax(t)
    np.testing.assert_allclose(out.values().numpy(), want, rtol=1e-12)
    w = rng.standard_normal(v.shape[0])
    sparse.sum(out * coo(coords, w, shape) if form in ("coalesced", "unordered")
               else sparse.multiply(out, sparse.sparse_csr_tensor(x.crows(), x.cols(), w, shape))
               ).backward()
    keys = [tuple(coords[:-1, j]) for j in range(v.shape[0])]
    dot = {k: sum(want[j] * w[j] for j in range(v.shape[0]) if keys[j] == k) for k in set(keys)}
    grad = np.array([want[j] * (w[j] - dot[keys[j]]) for j in range(v.shape[0])])
    np.testing.assert_allclose(leaf.grad.numpy(), grad, rtol=1e-10, atol=1e-12)


def test_training_a_sparse_weight_by_gradient_descent():
    """The README's example: W's stored values fit a target by multiply and sum."""
    rng = np.random.default_rng(0)
    idx = [[0, 1, 2, 2], [1, 0, 0, 2]]
    target = np.array([0.5, -1.0, 2.0, 0.25])
    x = dense.to_tensor(rng.uniform(1.0, 1.5, (3, 3)))
    wv = dense.to_tensor(np.zeros(4), stop_gradient=False)
    for _ in range(50):
        W = sparse.sparse_coo_tensor(idx, wv, [3, 3])
        err = sparse.subtract(sparse.multiply(W, x), coo(idx, target, [3, 3]) * x)
        loss = sparse.sum(err * err)
        loss.backward()
        wv = dense.to_tensor(wv.numpy() - 0.2 * wv.grad.numpy(), stop_gradient=False)
    np.testing.assert_allclose(wv.numpy(), target, atol=1e-6)


# ---------------------------------------------------------------- value-wise ops and cast
def test_valuewise_ops_act_on_each_stored_entry():
    x = coo([[0, 0, 2]], [1.0, 2.0, -3.0], [4])                  # coordinate 0 twice
    s = sparse.scale(x, 1.0, bias=10.0)
    assert s.indices().numpy().tolist() == [[0, 0, 2]]
    assert s.values().numpy().tolist() == [11.0, 12.0, 7.0]       # implicit zeros stay 0
    assert s.to_dense().numpy().tolist() == [23.0, 0.0, 7.0, 0.0]  # f(a) + f(b), not f(a + b)
    assert sparse.square(x).to_dense().numpy().tolist() == [5.0, 0.0, 9.0, 0.0]
    c = sparse.sqrt(sparse.abs(x))
    assert c.is_sparse_coo() and np.allclose(c.values().numpy(), np.sqrt([1.0, 2.0, 3.0]))
    n = sparse.isnan(coo([[1]], [np.nan], [2], stop_gradient=False))
    assert n.dtype == np.bool_ and n.stop_gradient
    with pytest.raises(TypeError, match="sqrt"):
        sparse.sqrt(dense.to_tensor(np.ones(3)))


def test_cast():
    x = coo(np.array([[0, 2]], np.int64), [1.9, -2.9], [3])
    y = sparse.cast(x, index_dtype=np.int32, value_dtype="int32")
    assert y.indices().numpy().dtype == np.int32 and y.values().numpy().tolist() == [1, -2]
    c = sparse.cast(coo([[0, 1], [1, 0]], [1.0, 2.0], [2, 2]).to_sparse_csr(), index_dtype="int32")
    assert c.crows().numpy().dtype == np.int32 and c.cols().numpy().dtype == np.int32
    with pytest.raises(TypeError, match="index_dtype"):
        sparse.cast(x, index_dtype="float32")
    with pytest.raises(ValueError, match="cast"):
        sparse.cast(coo([[299]], [1.0], [300]), index_dtype="int8")


def test_readme_examples_of_sparse_computing_run():
    """Every python block of the README's 'Computing with sparse tensors' section runs."""
    import os
    import re
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    text = open(os.path.join(root, "README.md"), encoding="utf-8").read()
    section = text[text.index("## Computing with sparse tensors"):
                   text.index("## Global tensors on many ranks")]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) >= 2
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {})


@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_pow_zero_has_a_zero_gradient_at_a_stored_zero(layout):
    """d(v ** 0)/dv is 0 everywhere (finite differences of the constant 1), where
    the power rule's 0 * 0 ** -1 would give nan; other factors keep k v ** (k-1)."""
    for factor, want in [(0, [0.0, 0.0, 0.0]), (2.0, [0.0, 4.0, -2.0]), (1, [1.0, 1.0, 1.0])]:
        v = dense.to_tensor(np.array([0.0, 2.0, -1.0]), stop_gradient=False)
        x = sparse.sparse_coo_tensor([[0, 1, 1], [0, 0, 2]], v, [2, 3])
        x = x.to_sparse_csr() if layout == "csr" else x
        sparse.sum(sparse.pow(x, factor)).backward()
        np.testing.assert_array_equal(v.grad.numpy(), want)


@pytest.mark.parametrize("call", [
    lambda x, y: sparse.multiply(x, y), lambda x, y: sparse.add(x, y),
    lambda x, y: sparse.divide(x, y), lambda x, y: sparse.sum(x, 2),
    lambda x, y: sparse.softmax(x), lambda x, y: sparse.softmax(x, 1)])
def test_entries_past_int64_offsets_raise_instead_of_merging_wrong_ones(call):
    """(2**40 - 1, 0, 1) of [2**40]^3 lies at offset ~2**120: int64 keys would wrap and
    could merge distinct entries, so an op matching entries by offset refuses, naming
    itself."""
    x = sparse.sparse_coo_tensor(np.array([[2 ** 40 - 1, 0], [0, 0], [1, 1]]),
                                 np.array([3.0, 5.0]), [2 ** 40] * 3)
    with pytest.raises(ValueError, match=r"^(multiply|add|divide|sum|softmax): the entries "
                                         r"reach flat offset \d+ in the sparse dims .* past "
                                         r"the 2\*\*63"):
        call(x, x)


def test_sparse_dims_past_int64_work_while_the_entries_stay_below():
    """The same dims, entries near the origin: offsets below 2**63, results as numpy's on
    the entries (hand-worked)."""
    x = sparse.sparse_coo_tensor(np.array([[0, 0, 0], [0, 0, 1], [1, 2, 2]]),
                                 np.array([3.0, 5.0, 7.0]), [2 ** 40] * 3)
    y = sparse.sparse_coo_tensor(np.array([[0], [0], [2]]), np.array([2.0]), [2 ** 40] * 3)
    s = sparse.add(x, y)
    np.testing.assert_array_equal(s.indices().numpy(), [[0, 0, 0], [0, 0, 1], [1, 2, 2]])
    np.testing.assert_array_equal(s.values().numpy(), [3.0, 7.0, 7.0])
    p = sparse.multiply(x, y)
    np.testing.assert_array_equal(p.indices().numpy(), [[0], [0], [2]])
    np.testing.assert_array_equal(p.values().numpy(), [10.0])
    t = sparse.sum(x, 0)
    np.testing.assert_array_equal(t.indices().numpy(), [[0, 0, 1], [1, 2, 2]])
    np.testing.assert_array_equal(t.values().numpy(), [3.0, 5.0, 7.0])
    np.testing.assert_allclose(sparse.softmax(x, 2).values().numpy(),
                               [np.exp(3) / (np.exp(3) + np.exp(5)),
                                np.exp(5) / (np.exp(3) + np.exp(5)), 1.0])


def test_huge_sparse_dims_still_work_where_no_offsets_are_compared():
    x = sparse.sparse_coo_tensor(np.array([[2 ** 40 - 1, 0], [0, 0], [1, 2]]),
                                 np.array([3.0, 5.0]), [2 ** 40] * 3)
    np.testing.assert_array_equal((x * 2.0).values().numpy(), [6.0, 10.0])
    np.testing.assert_array_equal(sparse.sum(x).values().numpy(), [8.0])
    s = sparse.sum(x, [0, 1])                       # one free dim: offsets below 2**40
    np.testing.assert_array_equal(s.indices().numpy(), [[1, 2]])
    np.testing.assert_array_equal(s.values().numpy(), [3.0, 5.0])
    d = dense.to_tensor(np.arange(4.0))
    y = sparse.sparse_coo_tensor(np.array([[2 ** 40 - 1], [3], [2]]), np.array([3.0]),
                                 [2 ** 40, 4, 4])
    np.testing.assert_array_equal(sparse.multiply(y, d).values().numpy(), [6.0])


@pytest.mark.parametrize("layout", ["coo", "csr"])
@pytest.mark.parametrize("index_dtype", [np.int8, np.int16, np.uint8])
@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "divide"])
def test_small_index_dtypes_from_cast_take_part_in_binary_ops(layout, index_dtype, op):
    """cast accepts any integer index dtype; scipy's merge routines take int32 and int64
    only, so smaller indices are widened (the result's are int64)."""
    base = coo([[0, 1, 1], [1, 2, 0]], [1.0, 2.0, 4.0], [2, 3])
    other = coo([[0, 1], [1, 1]], [3.0, 5.0], [2, 3])
    if layout == "csr":
        base, other = base.to_sparse_csr(), other.to_sparse_csr()
    x = sparse.cast(base, index_dtype, None)
    y = sparse.cast(other, index_dtype, None)
    got = getattr(sparse, op)(x, y)
    xd, yd = x.to_dense().numpy(), y.to_dense().numpy()
    with np.errstate(all="ignore"):
        want = getattr(np, op)(xd, yd)
    want[(xd == 0) & (yd == 0)] = 0              # neither stores: the result stores nothing
    dense_got = got.to_dense().numpy()
    np.testing.assert_array_equal(np.isnan(dense_got), np.isnan(want))
    np.testing.assert_array_equal(np.nan_to_num(dense_got), np.nan_to_num(want))


@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_sparse_with_dense_or_scalar_sums_duplicates_first(layout):
    """The logical value at (0, 1) is 2 + -1 = 1: times inf it is inf and over 0 it is inf,
    where entry by entry inf + -inf would be nan.  The gradient keeps x's pattern."""
    v = dense.to_tensor(np.array([2.0, -1.0, 3.0]), stop_gradient=False)
    x = sparse.sparse_coo_tensor(np.array([[0, 0, 1], [1, 1, 0]]), v, [2, 2])
    if layout == "csr":
        x = sparse.sparse_csr_tensor([0, 2, 3], [1, 1, 0], v, [2, 2])
    logical = np.array([[0.0, 1.0], [3.0, 0.0]])
    with np.errstate(all="ignore"):
        cases = [(x / 0.0, np.where(logical != 0, logical / 0.0, 0)),
                 (x * np.inf, np.where(logical != 0, logical * np.inf, 0)),
                 (sparse.multiply(x, dense.to_tensor([[np.inf, 2.0]])),
                  np.where(logical != 0, logical * [[np.inf, 2.0]], 0))]
    for got, want in cases:
        np.testing.assert_array_equal(got.to_dense().numpy(), want)
    y = dense.to_tensor([[5.0, 7.0]], stop_gradient=False)
    sparse.sum(sparse.multiply(x, y)).backward()
    np.testing.assert_array_equal(v.grad.numpy(), [7.0, 7.0, 5.0])   # one per stored entry
    np.testing.assert_array_equal(y.grad.numpy(), [[3.0, 1.0]])


@pytest.mark.parametrize("layout", ["coo", "csr"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
@pytest.mark.parametrize("dtype", ["int64", "int32", "bool", "float32"])
def test_sum_into_a_truncating_dtype_sums_duplicates_first(layout, axis, dtype):
    """0.6 and 0.7 stored at (0, 1) are the logical 1.3, which numpy sums as 1 in int64
    (0 + 0 entry by entry); 0.5 and -0.5 at (1, 0) are 0, False as bool (True | True)."""
    rows, cols, vals = [0, 0, 1, 1], [1, 1, 0, 0], [0.6, 0.7, 0.5, -0.5]
    x = sparse.sparse_coo_tensor([rows, cols], vals, [2, 2])
    if layout == "csr":
        x = sparse.sparse_csr_tensor([0, 2, 4], cols, vals, [2, 2])
    logical = np.array([[0.0, 1.3], [0.0, 0.0]])
    want = np.asarray(logical.sum(axis=axis, dtype=dtype))
    got = sparse.sum(x, axis=axis, dtype=dtype).to_dense().numpy()
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.reshape(want.shape), want)


@pytest.mark.parametrize("layout", ["coo", "csr"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
@pytest.mark.parametrize("values, dtype", [([100, 100, 1], None), ([1, -1, 0], "bool"),
                                           ([3e38, 3e38, 1], "float64")])
def test_sum_into_a_wider_dtype_sums_duplicates_in_their_own_first(layout, axis, values,
                                                                  dtype):
    """int8 duplicates 100 and 100 are the logical -56 (int8 wraps), so the int64 sum is
    -55, not 201; int32 1 and -1 are 0, so False as bool; float32 3e38 + 3e38 is inf
    before float64 could hold it.  The same on the coalesced tensor."""
    v = np.array(values, np.int8 if values[0] == 100 else
                 np.int32 if values[0] == 1 else np.float32)
    x = sparse.sparse_coo_tensor([[0, 0, 1], [1, 1, 0]], v, [2, 2])
    x = x if layout == "coo" else x.to_sparse_csr()
    with np.errstate(over="ignore"):
        logical = x.to_dense().numpy()
        want = np.asarray(logical.sum(axis=axis, dtype=dtype))
        for t in (x, x.to_sparse_coo(2).coalesce() if layout == "coo" else x):
            got = sparse.sum(t, axis=axis, dtype=dtype).to_dense().numpy()
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got.reshape(want.shape), want)


# ---------------------------------------------------------------- operators on duplicates
def _with_duplicates(layout, values):
    """[2, 3] holding values at (0, 1) twice, (1, 0) and (1, 2) twice, in that order."""
    if layout == "coo":
        return coo([[0, 0, 1, 1, 1], [1, 1, 0, 2, 2]], values, [2, 3])
    return sparse.sparse_csr_tensor([0, 2, 5], [1, 1, 0, 2, 2], values, [2, 3])


def _dense_of(values):
    out = np.zeros((2, 3))
    np.add.at(out, ([0, 0, 1, 1, 1], [1, 1, 0, 2, 2]), values)
    return out


OPERATORS = {"abs": (abs, np.abs), "square": (lambda t: t ** 2, np.square),
             "cube": (lambda t: t ** 3.0, lambda a: a ** 3.0)}


@pytest.mark.parametrize("layout", ["coo", "csr"])
@pytest.mark.parametrize("name", sorted(OPERATORS))
def test_abs_and_pow_operators_act_on_the_logical_values(layout, name):
    op, ref = OPERATORS[name]
    vals = np.array([2.0, -1.5, 3.0, -0.5, -0.25])
    v = dense.to_tensor(vals, stop_gradient=False)
    out = op(_with_duplicates(layout, v))
    assert out.layout == ("sparse_coo" if layout == "coo" else "sparse_csr")
    np.testing.assert_allclose(out.to_dense().numpy(), ref(_dense_of(vals)))
    w = np.arange(1.0, 7.0).reshape(2, 3)
    (out.to_dense() * dense.to_tensor(w)).sum().backward()
    expect = numeric_vjp(lambda a: ref(_dense_of(a)), [vals], 0, w)
    np.testing.assert_allclose(v.grad.numpy(), expect, rtol=1e-6, atol=1e-8)


def test_the_named_value_wise_ops_still_act_entry_by_entry():
    x = _with_duplicates("coo", [2.0, -1.5, 3.0, -0.5, -0.25])
    np.testing.assert_array_equal(sparse.abs(x).values().numpy(), [2.0, 1.5, 3.0, 0.5, 0.25])
    np.testing.assert_array_equal(sparse.pow(x, 2).values().numpy(), [4.0, 2.25, 9.0, 0.25,
                                                                     0.0625])


def test_operators_on_a_tensor_storing_each_coordinate_once_keep_its_entries():
    x = coo([[0, 1], [1, 2]], np.array([-2.0, 3.0], np.float32), [2, 3])
    out = abs(x)
    assert out.indices().numpy().tolist() == [[0, 1], [1, 2]]
    assert out.values().numpy().tolist() == [2.0, 3.0] and out.dtype == np.float32


@pytest.mark.parametrize("op", ["add", "multiply", "divide"])
def test_broadcast_repeats_beyond_memory_are_refused_before_any_work(op):
    """[2**30, 2] with [1, 2]: broadcasting repeats y's entry 2**30 times (60 GB of
    coordinates): a ValueError naming the op and the repeat, not an allocation that the
    kernel kills the process for."""
    x = coo([[0, 2 ** 30 - 1], [0, 1]], [1.0, 2.0], [2 ** 30, 2])
    y = coo([[0], [1]], [3.0], [1, 2])
    with pytest.raises(ValueError, match=rf"^{op}: broadcasting a sparse operand's 1 entries "
                                         r"from sparse dims \[1, 2\] .* repeats each "
                                         r"1073741824 times"):
        getattr(sparse, op)(x, y)


def test_three_argument_pow_names_the_op():
    x = dense.to_tensor(np.eye(2)).to_sparse_coo(2)
    with pytest.raises(TypeError, match=r"^pow: takes no modulo"):
        pow(x, 2, 3)


def test_a_product_with_dense_on_rising_coordinates_is_flagged_coalesced():
    """x * dense keeps x's entries; where they were found in rising C order (each
    coordinate once, sorted) the result says it is coalesced, true to its data; with
    duplicates the result is summed and sorted, coalesced too."""
    d = dense.to_tensor(np.array([1.0, 2.0, 3.0, 4.0]))
    rising = sparse.sparse_coo_tensor(np.array([[0, 1, 3]]), np.array([3.0, 6.0, 5.0]), [4])
    assert not rising.is_coalesced()
    out = sparse.multiply(rising, d)
    assert out.is_coalesced() and out.indices().numpy().tolist() == [[0, 1, 3]]
    np.testing.assert_array_equal(out.values().numpy(), [3.0, 12.0, 20.0])
    unsorted = sparse.sparse_coo_tensor(np.array([[3, 0, 1]]), np.array([5.0, 3.0, 6.0]), [4])
    out = sparse.multiply(unsorted, d)
    keys = out.indices().numpy()[0]
    assert out.is_coalesced() == bool(np.all(keys[1:] > keys[:-1]))
    np.testing.assert_array_equal(out.to_dense().numpy(), [3.0, 12.0, 0.0, 20.0])


@pytest.mark.parametrize("layout", ["coo", "csr"])
@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "divide"])
@pytest.mark.parametrize("sparse_first", [True, False])
def test_a_real_dense_operands_gradient_from_a_complex_sparse_one_warns_nothing(
        layout, op, sparse_first):
    """A real dense operand's gradient is the real part of the complex one (as dense beside
    dense gives), taken without numpy's ComplexWarning, which ``-W error`` made an error."""
    s = coo([[0, 1], [0, 2]], np.array([1 + 1j, 2 - 1j]), [2, 3])
    s = s.to_sparse_csr() if layout == "csr" else s
    s.stop_gradient = False
    d = dense.to_tensor(np.arange(1.0, 7.0).reshape(2, 3), stop_gradient=False)
    s_dense = dense.to_tensor(s.to_dense().numpy(), stop_gradient=False)
    ref_d = dense.to_tensor(d.numpy(), stop_gradient=False)
    args, ref_args = ((s, d), (s_dense, ref_d)) if sparse_first else ((d, s), (ref_d, s_dense))
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        warnings.simplefilter("error", np.exceptions.ComplexWarning)
        out = getattr(sparse, op)(*args)
        seed = np.ones(out.shape, complex)
        out.backward(dense.to_tensor(seed) if out.layout == "dense" else None)
        ref = getattr(dense, op)(*ref_args)
        if out.layout == "dense":
            ref.backward(dense.to_tensor(seed))
        else:       # a sparse product: ones at the stored entries only
            ref.backward(dense.to_tensor(np.where(s.to_dense().numpy() != 0, 1.0 + 0j, 0)))
    want = ref_d.grad.numpy()
    if out.layout != "dense":   # stored at s's entries only (README: dense / sparse too)
        want = np.where(s.to_dense().numpy() != 0, want, 0.0)
    assert d.grad.dtype == np.float64
    np.testing.assert_allclose(d.grad.numpy(), want)


class _NotNumpy:
    """numpy under another name: the array module a GPU passes, so ``xp is np`` is false."""

    def __getattr__(self, name):
        return getattr(np, name)


@pytest.mark.parametrize("sizes", [(0, 0), (0, 5), (5, 0), (1, 1), (300, 200), (2000, 3000)])
@pytest.mark.parametrize("dtypes", [(np.int64, np.int64), (np.int32, np.int64),
                                    (np.int32, np.int32)])
def test_union_and_intersect_merge_alike_by_sort_and_by_search(sizes, dtypes):
    """The CPU merges two sorted unique key arrays by a stable sort, a GPU by binary
    search: both give numpy's union1d / intersect1d and the slots that map each input."""
    from kernels.sparse.binary import intersect, union
    rng = np.random.default_rng(sum(sizes))
    a = np.unique(rng.integers(0, 3 * max(sizes) + 1, sizes[0])).astype(dtypes[0])
    b = np.unique(rng.integers(0, 3 * max(sizes) + 1, sizes[1])).astype(dtypes[1])
    want = np.union1d(a, b)
    both, ia, ib = np.intersect1d(a, b, return_indices=True)
    for xp in (np, _NotNumpy()):
        keys, pa, pb = union(a, b, xp)
        np.testing.assert_array_equal(keys, want)
        np.testing.assert_array_equal(keys[pa], a)
        np.testing.assert_array_equal(keys[pb], b)
        got_a, got_b = intersect(a, b, xp)
        np.testing.assert_array_equal(got_a, ia)
        np.testing.assert_array_equal(got_b, ib)


@pytest.mark.parametrize("dtype", [None, "float64", "complex128"])
def test_sum_over_dense_dims_in_another_dtype_has_positional_gradients(dtype):
    """Summing a hybrid COO's dense dim in a dtype unlike its values first coalesces x (its
    duplicates add in their own dtype): the gradient still comes back entry for entry, in
    x's storage order.  Entries at (1, 0), (0, 1), (1, 2) and (0, 1) again; the seed at
    [i, j] is 10 * (3i + j + 1), so each entry gets its coordinate's seed on every value."""
    values = np.arange(16, dtype=np.float32).reshape(4, 4)
    x = sparse.sparse_coo_tensor([[1, 0, 1, 0], [0, 1, 2, 1]], values, [2, 3, 4],
                                 stop_gradient=False)
    out = sparse.sum(x, axis=-1, dtype=dtype)
    want_out = values.sum(axis=1)
    np.testing.assert_allclose(out.to_dense().numpy()[[1, 0, 1], [0, 1, 2]],
                               [want_out[0], want_out[1] + want_out[3], want_out[2]])
    seed = (np.arange(6).reshape(2, 3) * 10 + 10).astype(out.dtype)
    out.to_dense().backward(dense.to_tensor(seed))
    np.testing.assert_array_equal(x.grad.values().numpy(),
                                  np.repeat([[40.0], [20.0], [60.0], [20.0]], 4, axis=1))


# ---------------------------------------------------------------- the sign of a stored zero
def _signs(a):
    return np.signbit(np.asarray(a, dtype=float)).tolist()


@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_to_dense_keeps_a_stored_negative_zero_whatever_the_coalesced_flag(layout):
    """A coordinate's value is the IEEE sum of its entries: -0.0 alone (or -0.0 + -0.0)
    is -0.0, -0.0 + 0.0 is +0.0; implicit zeros are +0.0.  add.at into zeros made the
    first +0.0 for an uncoalesced COO and for every CSR (a randomized multi-rank round's
    find); a coalesced COO, which assigns, kept it."""
    idx = np.array([[0, 0, 1, 1, 2], [0, 0, 1, 1, 2]])
    vals = np.array([-0.0, -0.0, -0.0, 0.0, -0.0])
    x = sparse.sparse_coo_tensor(idx, vals, [3, 4])
    x = x if layout == "coo" else x.to_sparse_csr()
    got = x.to_dense().numpy()
    assert _signs(got[[0, 1, 2, 0], [0, 1, 2, 3]]) == [True, False, True, False]
    assert np.array_equal(got, np.zeros((3, 4)))
    hybrid = sparse.sparse_coo_tensor(np.array([[1, 0]]), np.array([[-0.0, 1.0], [-0.0, -0.0]]),
                                      [2, 2])                    # one sparse dim, one dense
    assert _signs(hybrid.to_dense().numpy()) == [[True, True], [True, False]]
    parts = [complex(-0.0, -0.0), complex(-0.0, 0.0), complex(1.0, -0.0)]  # each part alone
    c = sparse.sparse_coo_tensor(np.array([[0, 0, 1]]), np.array(parts), [3])
    dense_c = c.to_dense().numpy()
    assert _signs(dense_c.real) == [True, False, False]
    assert _signs(dense_c.imag) == [False, True, False]


def test_coalesce_by_buckets_keeps_a_lone_negative_zero():
    """Unsorted unique coordinates are coalesced by counting into buckets (bincount adds
    from +0.0): a key whose entries are all -0.0 stays -0.0, and so does its product
    (multiply of an unsorted operand gave +0.0 where the coalesced operand gave -0.0)."""
    x = sparse.sparse_coo_tensor(np.array([[0, 0, 0], [1, 0, 2]]), np.array([1.0, -0.0, -0.0]),
                                 [1, 3])
    y = sparse.sparse_coo_tensor(np.array([[0], [0]]), np.array([2.5]), [1, 3])
    assert _signs(x.coalesce().values().numpy()) == [True, False, True]
    assert _signs(sparse.multiply(x, y).values().numpy()) == [True]
    mixed = sparse.sparse_coo_tensor(np.array([[0, 0, 0], [1, 0, 1]]),
                                     np.array([-0.0, 3.0, 0.0]), [1, 3])
    assert _signs(mixed.coalesce().values().numpy()) == [False, False]
