"""The sparse autograd contract (API2.md): values, constructors, conversions, mask_as.

References are hand-worked gradients and the dense forms computed by numpy.
"""
import warnings

import numpy as np
import pytest

import dense
import sparse

IDX = [[0, 1, 1, 0], [2, 0, 2, 2]]          # (0, 2) stored twice
G = np.arange(6.0).reshape(2, 3) + 1.0


def _values(stop_gradient=False):
    return dense.to_tensor([1.0, 2.0, 3.0, 4.0], stop_gradient=stop_gradient)


@pytest.mark.parametrize("flag", [True, False])
def test_coo_constructor_is_differentiable_in_values(flag):
    v = _values()
    x = sparse.sparse_coo_tensor(IDX, v, [2, 3], stop_gradient=flag)
    assert not x.stop_gradient
    x.to_dense().backward(dense.to_tensor(G))
    assert v.grad.shape == [4]
    np.testing.assert_array_equal(v.grad.numpy(), G[tuple(np.array(IDX))])


def test_csr_constructor_is_differentiable_in_values():
    v = _values()
    x = sparse.sparse_csr_tensor([0, 2, 4], [2, 0, 1, 1], v, [2, 3])
    x.to_dense().backward(dense.to_tensor(G))
    np.testing.assert_array_equal(v.grad.numpy(), [G[0, 2], G[0, 0], G[1, 1], G[1, 1]])


@pytest.mark.parametrize("layout", ["coo", "csr"])
@pytest.mark.parametrize("dtype", ["float32", "complex128"])
def test_constructor_dtype_casts_the_values_differentiably(layout, dtype):
    """``dtype=`` casts the values as Paddle does (``values.astype``): the gradient
    flows back through the cast, cast back to the values' dtype; for a complex
    target, d(sum |x|^2)/dv is 2v, as finite differences of the real map say."""
    v = _values()
    if layout == "coo":
        x = sparse.sparse_coo_tensor(IDX, v, [2, 3], dtype=dtype)
    else:
        x = sparse.sparse_csr_tensor([0, 2, 4], [2, 0, 1, 1], v, [2, 3], dtype=dtype)
    assert not x.stop_gradient and x.dtype == np.dtype(dtype)
    sparse.sum(sparse.square(sparse.abs(x))).backward()
    assert v.grad.dtype == np.float64
    eps, v0 = 1e-6, np.array([1.0, 2.0, 3.0, 4.0])
    fd = [((v0 + eps * e) ** 2).sum() - ((v0 - eps * e) ** 2).sum() for e in np.eye(4)]
    np.testing.assert_allclose(v.grad.numpy(), np.array(fd) / (2 * eps), rtol=1e-5)


def test_constructor_with_values_that_need_no_gradient_is_a_plain_leaf():
    x = sparse.sparse_coo_tensor(IDX, _values(stop_gradient=True), [2, 3])
    assert x.stop_gradient and x.is_leaf


@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_values_is_differentiable_and_fills_the_leaf_grad(layout):
    x = sparse.sparse_coo_tensor(IDX, [1.0, 2.0, 3.0, 4.0], [2, 3], stop_gradient=False)
    if layout == "csr":
        x = sparse.sparse_csr_tensor([0, 2, 4], [2, 0, 1, 1], [1.0, 2.0, 3.0, 4.0], [2, 3],
                                     stop_gradient=False)
    v = x.values()
    assert not v.stop_gradient
    w = np.array([1.0, -2.0, 3.0, 0.5])
    v.backward(dense.to_tensor(w))
    assert x.grad.layout == x.layout
    np.testing.assert_array_equal(x.grad.values().numpy(), w)   # positional, duplicates kept


def test_values_of_a_tensor_without_gradient_shares_memory():
    x = sparse.sparse_coo_tensor(IDX, [1.0, 2.0, 3.0, 4.0], [2, 3])
    assert x.values().stop_gradient
    assert x.values().data_ptr() == x.values().data_ptr()


@pytest.mark.parametrize("convert", [lambda t: t.to_sparse_coo(2), lambda t: t.to_sparse_coo(1),
                                     lambda t: t.to_sparse_csr()])
def test_dense_to_sparse_passes_the_whole_gradient(convert):
    x = dense.to_tensor(np.array([[0.0, 1.0, 0.0], [2.0, 0.0, 0.0]]), stop_gradient=False)
    convert(x).backward(dense.to_tensor(G))
    np.testing.assert_array_equal(x.grad.numpy(), G)
    x.clear_grad()
    g = sparse.sparse_coo_tensor([[1, 0, 1], [2, 0, 2]], [5.0, 6.0, 7.0], [2, 3])
    convert(x).backward(g)                      # a sparse seed of another pattern, made dense
    np.testing.assert_array_equal(x.grad.numpy(), g.to_dense().numpy())


def test_dense_to_sparse_default_seed_is_ones_on_the_stored_entries():
    x = dense.to_tensor(np.array([[0.0, 1.0], [2.0, 0.0]]), stop_gradient=False)
    x.to_sparse_coo(2).backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0.0, 1.0], [1.0, 0.0]])


def test_to_dense_of_to_sparse_masks_the_gradient_to_the_nonzeros():
    x = dense.to_tensor(np.array([[0.0, 1.0], [2.0, 0.0]]), stop_gradient=False)
    x.to_sparse_coo(2).to_dense().backward(dense.to_tensor(np.full((2, 2), 3.0)))
    np.testing.assert_array_equal(x.grad.numpy(), [[0.0, 3.0], [3.0, 0.0]])


@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_mask_as_keeps_the_mask_entry_for_entry(layout):
    x = dense.to_tensor(G.astype(np.float32), stop_gradient=False)
    m = sparse.sparse_coo_tensor(np.array(IDX, dtype=np.int32), [9, 9, 9, 9], [2, 3])
    if layout == "csr":
        m = sparse.sparse_csr_tensor(np.array([0, 2, 3], np.int32), np.array([2, 2, 1], np.int32),
                                     [9, 9, 9], [2, 3])
    out = sparse.mask_as(x, m)
    assert out.layout == m.layout and out.dtype == np.float32
    coords = np.array(IDX) if layout == "coo" else np.array([[0, 0, 1], [2, 2, 1]])
    np.testing.assert_array_equal(out.values().numpy(), G[tuple(coords)])
    if layout == "coo":
        assert out.indices().numpy().dtype == np.int32
    else:
        assert out.crows().numpy().dtype == np.int32
    out.backward()
    expect = np.zeros((2, 3))
    np.add.at(expect, tuple(coords), 1.0)           # duplicates accumulate
    np.testing.assert_array_equal(x.grad.numpy(), expect)


def test_mask_as_rejects_a_sparse_x_and_a_dense_mask():
    m = sparse.sparse_coo_tensor(IDX, [1.0] * 4, [2, 3])
    with pytest.raises(TypeError, match="mask_as"):
        sparse.mask_as(m, m)
    with pytest.raises(TypeError, match="mask_as"):
        sparse.mask_as(dense.to_tensor(G), dense.to_tensor(G))
    with pytest.raises(ValueError, match="mask_as"):
        sparse.mask_as(dense.to_tensor(np.ones((3, 2))), m)


@pytest.mark.parametrize("layout", ["coo", "csr"])
@pytest.mark.parametrize("dtype", ["float64", np.float64, np.dtype("float64")])
@pytest.mark.parametrize("source", [np.float32, np.int64])
def test_constructor_dtype_float64_casts_tensor_values(layout, dtype, source):
    """float64 is not skipped as 'no dtype' (numpy's ``np.dtype('float64') == None`` is
    True): float32 or int64 values become float64, and can then require a gradient."""
    v = dense.to_tensor(np.array([1, 2, 3, 4], source))
    args = (IDX, v, [2, 3]) if layout == "coo" else ([0, 2, 4], [2, 0, 1, 1], v, [2, 3])
    make = sparse.sparse_coo_tensor if layout == "coo" else sparse.sparse_csr_tensor
    x = make(*args, dtype=dtype, stop_gradient=False)
    assert x.dtype == np.float64 and x.values().numpy().tolist() == [1.0, 2.0, 3.0, 4.0]


@pytest.mark.parametrize("name", ["mul", "div", "sum", "add", "concat"])
def test_complex_results_of_real_values_give_real_gradients_silently(name):
    """The gradient of real values is the real part of the complex one, taken without
    numpy's ComplexWarning (as the dense ops do): checked against finite differences."""
    ops = {"mul": lambda a: a * (2 + 1j), "div": lambda a: a / (1 - 2j),
           "sum": lambda a: sparse.sum(a, dtype="complex128"),
           "add": lambda a: sparse.add(a, dense.to_tensor(np.array([1j, 2j]))),
           "concat": lambda a: sparse.concat([a * (1 + 1j), a * 3j])}
    w = np.array([0.5 - 1j, 2 + 0.25j, -1 + 1j, 0.5j])

    def loss(vals, tensor=False):
        v = dense.to_tensor(vals, stop_gradient=not tensor)
        out = ops[name](sparse.sparse_coo_tensor(np.array([[0, 1]]), v, [2]))
        out = out if out.layout == "dense" else out.to_dense()
        return v, (out * dense.to_tensor(w[:out.shape[0]])).sum()
    v0 = np.array([1.5, 2.5])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        v, total = loss(v0, tensor=True)
        total.backward()
    fd = [(loss(v0 + 1e-6 * e)[1].numpy().real - loss(v0 - 1e-6 * e)[1].numpy().real) / 2e-6
          for e in np.eye(2)]
    np.testing.assert_allclose(v.grad.numpy(), fd, rtol=1e-6, atol=1e-9)
