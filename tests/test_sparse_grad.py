"""Gradients through sparse reshape and the layout conversions.

Every sparse gradient has its input's pattern: one value per stored entry,
duplicates included, with the input's indices and layout.  References are
hand-worked maps of the coordinates and central finite differences.
"""
import numpy as np
import pytest

import dense
import sparse

RNG = np.random.default_rng(0)
IDX = np.array([[0, 1, 1, 3, 0], [2, 0, 3, 1, 2]])     # (0, 2) twice
VALS = RNG.standard_normal(5)


def _leaf_coo(indices=IDX, values=VALS, shape=(4, 4), place="cpu"):
    return sparse.sparse_coo_tensor(indices, values, shape, place=place, stop_gradient=False)


def _leaf_csr(place="cpu"):
    # unsorted cols in row 0, so reshapes must reorder entries
    return sparse.sparse_csr_tensor([0, 3, 3, 5], [5, 1, 3, 4, 0], RNG.standard_normal(5),
                                    [3, 6], place=place, stop_gradient=False)


def _moved(coords, old, new, order):
    flat = np.ravel_multi_index(tuple(coords), old, order=order)
    return np.unravel_index(flat, new, order=order)


# ---------------------------------------------------------------- default seed
@pytest.mark.parametrize("order", ["C", "F"])
def test_default_backward_gives_the_0_1_pattern(order, backend):
    x = _leaf_coo(place=backend)
    sparse.reshape(x, [2, 8], order=order).backward()
    assert x.grad.is_sparse_coo()
    np.testing.assert_array_equal(x.grad.indices().numpy(), IDX)
    np.testing.assert_array_equal(x.grad.values().numpy(), np.ones(5))


def test_default_backward_on_csr_keeps_csr():
    x = _leaf_csr()
    sparse.reshape(x, [9, 2], order="F").backward()
    assert x.grad.is_sparse_csr()
    np.testing.assert_array_equal(x.grad.crows().numpy(), x.crows().numpy())
    np.testing.assert_array_equal(x.grad.cols().numpy(), x.cols().numpy())
    np.testing.assert_array_equal(x.grad.values().numpy(), np.ones(5))


def test_leaf_backward_of_a_sparse_tensor_itself():
    x = _leaf_coo()
    x.backward()
    np.testing.assert_array_equal(x.grad.values().numpy(), np.ones(5))


# ---------------------------------------------------------------- weighted seeds
@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("new", [(2, 8), (16,), (4, 2, 2)])
def test_weighted_dense_out_grad_maps_back_exactly(new, order, backend):
    x = _leaf_coo(place=backend)
    w = RNG.standard_normal(new)
    sparse.reshape(x, list(new), order=order).backward(dense.to_tensor(w, place=backend))
    np.testing.assert_array_equal(x.grad.values().numpy(), w[_moved(IDX, (4, 4), new, order)])


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("new", [(9, 2), (2, 9), (3, 3, 2)])
def test_weighted_out_grad_maps_back_exactly_for_csr(new, order):
    x = _leaf_csr()
    w = RNG.standard_normal(new)
    sparse.reshape(x, list(new), order=order).backward(dense.to_tensor(w))
    coords = x.to_sparse_coo().indices().numpy()
    np.testing.assert_array_equal(x.grad.values().numpy(), w[_moved(coords, (3, 6), new, order)])


def test_sparse_out_grad_of_another_pattern_is_looked_up_by_coordinate():
    x = _leaf_coo()
    y = sparse.reshape(x, [2, 8])            # x's entries land at (0,2) (0,4) (0,7) (1,5) (0,2)
    g = sparse.sparse_coo_tensor([[0, 1, 0, 1, 0], [2, 5, 2, 0, 4]],
                                 [10.0, 20.0, 1.0, 99.0, 7.0], [2, 8])
    y.backward(g)
    np.testing.assert_array_equal(x.grad.values().numpy(), [11.0, 7.0, 0.0, 20.0, 11.0])
    x.clear_grad()
    sparse.reshape(x, [2, 8]).backward(g.to_sparse_csr())
    np.testing.assert_array_equal(x.grad.values().numpy(), [11.0, 7.0, 0.0, 20.0, 11.0])


@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_grad_tensor_with_duplicates_counts_by_coordinate_even_on_the_same_pattern(layout):
    # x's own pattern (with (0, 2) twice) as grad_tensor: every entry gets the
    # dense grad_tensor's value at its coordinate, as for any other pattern
    w = np.arange(1.0, 6.0)
    if layout == "coo":
        x, g = _leaf_coo(), sparse.sparse_coo_tensor(IDX, w, [4, 4])
    else:
        x = sparse.sparse_csr_tensor([0, 2, 2], [1, 1], [1.0, 2.0], [2, 3], stop_gradient=False)
        g = sparse.sparse_csr_tensor([0, 2, 2], [1, 1], w[:2], [2, 3])
    x.backward(g)
    coords = tuple(x.to_sparse_coo().indices().numpy())
    np.testing.assert_array_equal(x.grad.values().numpy(), g.to_dense().numpy()[coords])


def test_sparse_out_grad_with_dense_dims_is_looked_up():
    x = sparse.sparse_coo_tensor([[0, 2]], [[1.0, 2.0], [3.0, 4.0]], [3, 2],
                                 stop_gradient=False)
    g = sparse.sparse_coo_tensor([[2, 1], [1, 0]], [5.0, 6.0], [3, 2])   # all dims sparse
    x.backward(g)
    np.testing.assert_array_equal(x.grad.values().numpy(), [[0.0, 0.0], [0.0, 5.0]])
    x.clear_grad()
    x.backward(g.to_dense())
    np.testing.assert_array_equal(x.grad.values().numpy(), [[0.0, 0.0], [0.0, 5.0]])


def test_grad_tensor_of_the_wrong_shape_raises():
    y = sparse.reshape(_leaf_coo(), [2, 8])
    with pytest.raises(ValueError, match="backward: grad_tensor has shape"):
        y.backward(dense.to_tensor(np.ones((8, 2))))


# ---------------------------------------------------------------- dense dims
@pytest.mark.parametrize("new", [[12, 2], [2, 6, 2], [4, 6], [24]])
def test_dense_dims_kept_or_folded_map_back(new):
    vals = RNG.standard_normal((3, 2))
    x = sparse.sparse_coo_tensor([[0, 2, 5], [1, 0, 1]], vals, [6, 2, 2], stop_gradient=False)
    w = RNG.standard_normal(new)
    sparse.reshape(x, new).backward(dense.to_tensor(w))
    full = w.reshape(6, 2, 2)
    np.testing.assert_array_equal(x.grad.values().numpy(), full[[0, 2, 5], [1, 0, 1]])
    assert x.grad.values().shape == [3, 2]


# ---------------------------------------------------------------- finite differences
def _fd(f, v, eps=1e-6):
    out = np.zeros_like(v)
    for i in np.ndindex(v.shape):
        hi, lo = v.copy(), v.copy()
        hi[i] += eps
        lo[i] -= eps
        out[i] = (f(hi) - f(lo)) / (2 * eps)
    return out


@pytest.mark.parametrize("layout, order", [("coo", "C"), ("coo", "F"), ("csr", "C"),
                                           ("csr", "F")])
def test_gradient_through_to_dense_matches_finite_differences(layout, order):
    w = RNG.standard_normal((9, 2))

    def build(values, stop_gradient=True):
        if layout == "coo":
            return sparse.sparse_coo_tensor([[0, 2, 1, 0], [5, 1, 3, 5]], values, [3, 6],
                                            stop_gradient=stop_gradient)
        return sparse.sparse_csr_tensor([0, 2, 3, 4], [5, 1, 3, 0], values, [3, 6],
                                        stop_gradient=stop_gradient)

    def loss(values):
        out = sparse.reshape(build(values), [9, 2], order=order).to_dense().numpy()
        return float(np.sum(out * w))

    v = RNG.standard_normal(4)
    x = build(v, stop_gradient=False)
    d = sparse.reshape(x, [9, 2], order=order).to_dense()
    d.backward(dense.to_tensor(w))     # the vector-Jacobian product with w
    np.testing.assert_allclose(x.grad.values().numpy(), _fd(loss, v), rtol=1e-6, atol=1e-8)


# ---------------------------------------------------------------- conversions
def test_dense_to_coo_to_dense_gradient_is_masked_by_the_pattern():
    d = np.array([[0.0, 1.5, 0.0], [2.0, 0.0, -1.0]])
    x = dense.to_tensor(d, stop_gradient=False)
    w = RNG.standard_normal((3, 2))
    sparse.reshape(x.to_sparse_coo(2), [3, 2]).to_dense().backward(dense.to_tensor(w))
    np.testing.assert_array_equal(x.grad.numpy(), w.reshape(2, 3) * (d != 0))


def test_dense_to_csr_gradient():
    d = np.array([[0.0, 1.5, 0.0], [2.0, 0.0, -1.0]])
    x = dense.to_tensor(d, stop_gradient=False)
    w = RNG.standard_normal((6, 1))
    sparse.reshape(x.to_sparse_csr(), [6, 1], order="F").to_dense().backward(dense.to_tensor(w))
    np.testing.assert_array_equal(x.grad.numpy(), w.reshape(2, 3, order="F") * (d != 0))


def test_csr_to_coo_and_coo_to_csr_gradients_keep_each_pattern():
    x = _leaf_csr()
    w = RNG.standard_normal((3, 6))
    x.to_sparse_coo().to_sparse_csr().to_dense().backward(dense.to_tensor(w))
    coords = x.to_sparse_coo().indices().numpy()
    assert x.grad.is_sparse_csr()
    np.testing.assert_array_equal(x.grad.values().numpy(), w[tuple(coords)])
    c = sparse.sparse_coo_tensor([[2, 0, 2, 1], [1, 3, 0, 3]], [1.0, 2.0, 3.0, 4.0], [3, 4],
                                 stop_gradient=False)
    c.to_sparse_csr().backward(dense.to_tensor(np.arange(12.0).reshape(3, 4)))
    assert c.grad.is_sparse_coo()
    np.testing.assert_array_equal(c.grad.values().numpy(), [9.0, 3.0, 8.0, 7.0])


def test_coalesce_gradient_reaches_every_duplicate():
    x = _leaf_coo()
    w = np.arange(16.0).reshape(4, 4)
    x.coalesce().backward(dense.to_tensor(w))
    np.testing.assert_array_equal(x.grad.values().numpy(), w[tuple(IDX)])
    np.testing.assert_array_equal(x.grad.indices().numpy(), IDX)


def test_fold_to_sparse_coo_gradient():
    x = sparse.sparse_coo_tensor([[0, 2]], [[1.0, 2.0], [3.0, 4.0]], [3, 2],
                                 stop_gradient=False)
    x.to_sparse_coo(2).backward(dense.to_tensor(np.arange(6.0).reshape(3, 2)))
    np.testing.assert_array_equal(x.grad.values().numpy(), [[0.0, 1.0], [4.0, 5.0]])


def test_stop_gradient_false_on_a_conversion_result_makes_a_leaf():
    s = dense.to_tensor(np.array([[0.0, 2.0], [3.0, 0.0]])).to_sparse_coo(2)
    s.stop_gradient = False
    sparse.reshape(s, [4]).to_dense().backward(dense.to_tensor(np.array([1.0, 2.0, 3.0, 4.0])))
    assert s.is_leaf and s.grad.is_sparse_coo()
    np.testing.assert_array_equal(s.grad.values().numpy(), [2.0, 3.0])


def test_gradients_accumulate_over_two_uses():
    x = _leaf_coo()
    a = sparse.reshape(x, [2, 8]).to_dense()
    b = sparse.reshape(x, [8, 2], order="F").to_dense()
    wa, wb = RNG.standard_normal((2, 8)), RNG.standard_normal((8, 2))
    a.backward(dense.to_tensor(wa))
    b.backward(dense.to_tensor(wb))
    want = wa[_moved(IDX, (4, 4), (2, 8), "C")] + wb[_moved(IDX, (4, 4), (8, 2), "F")]
    np.testing.assert_allclose(x.grad.values().numpy(), want)


def test_no_graph_is_recorded_for_stop_gradient_inputs():
    x = sparse.sparse_coo_tensor(IDX, VALS, [4, 4])
    y = sparse.reshape(x, [2, 8])
    assert y.stop_gradient and y.is_leaf
    with pytest.raises(RuntimeError, match="stop_gradient"):
        y.backward()
