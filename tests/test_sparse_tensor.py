"""Sparse tensors: construction, validation, attributes, conversions and scipy interop."""
import numpy as np
import pytest
import scipy.sparse as sp

import dense
import sparse
from kernels.core.dtypes import ALL

IDX = np.array([[0, 1, 1, 3], [2, 0, 3, 1]])
VALS = np.array([1.0, 2.0, 3.0, 4.0])


def _dense_of(indices, values, shape):
    out = np.zeros(shape, dtype=np.asarray(values).dtype)
    np.add.at(out, tuple(np.asarray(indices)), values)
    return out


def _random_dense(rng, shape, density=0.3):
    return (rng.random(shape) < density) * rng.standard_normal(shape)


# ---------------------------------------------------------------- COO construction
def test_coo_attributes_and_dense_form(backend):
    x = sparse.sparse_coo_tensor(IDX, VALS, [4, 4], place=backend)
    assert x.shape == [4, 4] and x.ndim == 2 and x.nnz() == 4
    np.testing.assert_array_equal(x.indices().numpy(), IDX)
    assert x.sparse_dim() == 2 and x.dense_dim() == 0
    assert x.is_sparse_coo() and not x.is_sparse_csr()
    assert x.dtype == np.float64 and x.place == backend and x.stop_gradient
    assert not x.is_coalesced()
    np.testing.assert_array_equal(x.values().numpy(), VALS)
    if backend == "cpu":  # the conversions have CPU kernels (GPU ones: the CUDA issue)
        np.testing.assert_array_equal(x.to_dense().numpy(), _dense_of(IDX, VALS, (4, 4)))


def test_coo_shape_is_inferred_from_the_largest_index_plus_one():
    x = sparse.sparse_coo_tensor(IDX, VALS)
    assert x.shape == [4, 4]
    v = np.arange(8.0).reshape(4, 2)
    assert sparse.sparse_coo_tensor(IDX, v).shape == [4, 4, 2]


def test_coo_with_dense_dims():
    vals = np.arange(12.0).reshape(4, 3)
    x = sparse.sparse_coo_tensor(IDX, vals, [4, 5, 3])
    assert (x.sparse_dim(), x.dense_dim()) == (2, 1)
    ref = np.zeros((4, 5, 3))
    ref[tuple(IDX)] = vals
    np.testing.assert_array_equal(x.to_dense().numpy(), ref)


def test_coo_duplicates_are_accepted_and_summed_by_to_dense_and_coalesce():
    idx = np.array([[1, 0, 1, 1], [2, 0, 2, 0]])
    x = sparse.sparse_coo_tensor(idx, [1.0, 2.0, 3.0, 4.0], [2, 3])
    np.testing.assert_array_equal(x.to_dense().numpy(), [[2, 0, 0], [4, 0, 4]])
    c = x.coalesce()
    assert c.is_coalesced() and c.nnz() == 3
    np.testing.assert_array_equal(c.indices().numpy(), [[0, 1, 1], [0, 0, 2]])
    np.testing.assert_array_equal(c.values().numpy(), [2.0, 4.0, 4.0])
    assert c.coalesce()._data().indices is c._data().indices   # already coalesced: shared


def test_coalesce_of_sorted_unique_entries_only_sets_the_flag():
    x = sparse.sparse_coo_tensor([[0, 1, 1], [3, 0, 2]], [1.0, 2.0, 3.0], [2, 4])
    assert not x.is_coalesced()
    c = x.coalesce()
    assert c.is_coalesced() and c.indices()._data() is x.indices()._data()


def test_coalesce_with_dense_dims_sums_value_rows():
    idx = np.array([[2, 0, 2]])
    vals = np.array([[1, 2], [3, 4], [5, 6]])
    c = sparse.sparse_coo_tensor(idx, vals, [3, 2]).coalesce()
    np.testing.assert_array_equal(c.indices().numpy(), [[0, 2]])
    np.testing.assert_array_equal(c.values().numpy(), [[3, 4], [6, 8]])


def test_index_dtypes_int32_kept_other_integers_become_int64():
    assert sparse.sparse_coo_tensor(IDX.astype(np.int32), VALS).indices().dtype == np.int32
    assert sparse.sparse_coo_tensor(IDX.astype(np.int64), VALS).indices().dtype == np.int64
    assert sparse.sparse_coo_tensor(IDX.astype(np.uint8), VALS).indices().dtype == np.int64
    assert sparse.sparse_coo_tensor(IDX.tolist(), VALS).indices().dtype == np.int64


def test_dtype_argument_casts_values():
    x = sparse.sparse_coo_tensor(IDX, VALS, [4, 4], dtype="float32")
    assert x.dtype == np.float32 and x.values().dtype == np.float32


def test_buffers_are_copied_from_numpy_and_shared_from_tensors():
    idx, vals = IDX.copy(), VALS.copy()
    x = sparse.sparse_coo_tensor(idx, vals, [4, 4])
    idx[0, 0], vals[0] = 3, 100.0          # the caller's arrays stay theirs
    np.testing.assert_array_equal(x.indices().numpy(), IDX)
    np.testing.assert_array_equal(x.values().numpy(), VALS)
    assert idx.flags.writeable and vals.flags.writeable
    ti, tv = dense.to_tensor(IDX), dense.to_tensor(VALS)
    y = sparse.sparse_coo_tensor(ti, tv, [4, 4])
    assert y.indices()._data() is ti._data() and y.values()._data() is tv._data()


def test_column_major_indices_are_copied_into_coordinate_rows():
    """A transposed ``(nnz, ndim)`` array is column-major; the tensor stores one
    contiguous row per sparse dim (what its kernels read) and still owns a copy."""
    a = np.array([[0.0, 2.0, 0.0], [3.0, 0.0, 4.0]])
    idx = np.ascontiguousarray(np.argwhere(a)).T
    assert idx.flags.f_contiguous and not idx.flags.c_contiguous
    x = sparse.sparse_coo_tensor(idx, a[a != 0], a.shape)
    stored = x.indices().numpy()
    assert stored.flags.c_contiguous and not np.shares_memory(stored, idx)
    np.testing.assert_array_equal(stored, np.nonzero(a))
    np.testing.assert_array_equal(x.to_dense().numpy(), a)


def test_indices_and_values_share_memory_and_are_read_only():
    x = sparse.sparse_coo_tensor(IDX, VALS, [4, 4])
    assert np.shares_memory(x.indices()._data(), x._data().indices)
    assert np.shares_memory(x.values()._data(), x._data().values)
    with pytest.raises(ValueError):
        x.values()._data()[0] = 7.0


@pytest.mark.parametrize("indices, values, shape, exc, words", [
    ([[0, -1], [1, 1]], [1.0, 2.0], [2, 2], IndexError, "non-negative"),
    ([[0, 2], [1, 1]], [1.0, 2.0], [2, 2], IndexError, "out of range for dim 0"),
    ([[0, 1], [1, 5]], [1.0, 2.0], [2, 2], IndexError, "out of range for dim 1"),
    (np.array([[0.0, 1.0]]), [1.0, 2.0], [2], TypeError, "integers"),
    (np.array([[True, False]]), [1.0, 2.0], [2], TypeError, "integers"),
    ([[0, 1]], [1.0, 2.0, 3.0], [2], ValueError, "nnz = 2"),
    ([0, 1], [1.0, 2.0], [2], ValueError, "2-D"),
    ([[0, 1]], [1.0, 2.0], [2, 2], ValueError, "expected rank 1"),
    ([[0, 1]], [[1.0, 2.0], [3.0, 4.0]], [2, 3], ValueError, "ending with [2]"),
    ([[0, 1]], 5.0, [2], ValueError, "nnz"),
    (np.zeros((2, 0), np.int64), np.zeros(0), None, ValueError, "pass shape"),
    ([[0, 1]], [1.0, 2.0], [-2], ValueError, "negative"),
])
def test_malformed_coo_raises(indices, values, shape, exc, words):
    with pytest.raises(exc, match="sparse_coo_tensor") as info:
        sparse.sparse_coo_tensor(indices, values, shape)
    assert words in str(info.value)


# ---------------------------------------------------------------- CSR construction
def test_csr_attributes_and_unsorted_columns():
    x = sparse.sparse_csr_tensor([0, 2, 3], [3, 1, 2], [1.0, 2.0, 3.0], [2, 4])
    assert x.is_sparse_csr() and x.shape == [2, 4] and x.nnz() == 3
    assert x.sparse_dim() == 2 and x.dense_dim() == 0
    np.testing.assert_array_equal(x.to_dense().numpy(), [[0, 2, 0, 1], [0, 0, 3, 0]])
    assert x.crows()._data() is x._data().crows and x.cols()._data() is x._data().cols


def test_batched_csr_follows_paddles_layout():
    d = np.array([[[0, 1, 0], [2, 0, 3]], [[0, 0, 0], [4, 0, 0]]], dtype=float)
    x = dense.to_tensor(d).to_sparse_csr()
    # crows restarts from 0 in every batch; cols and values run over all batches
    np.testing.assert_array_equal(x.crows().numpy(), [0, 1, 3, 0, 0, 1])
    np.testing.assert_array_equal(x.cols().numpy(), [1, 0, 2, 0])
    np.testing.assert_array_equal(x.values().numpy(), [1, 2, 3, 4])
    y = sparse.sparse_csr_tensor([0, 1, 3, 0, 0, 1], [1, 0, 2, 0], [1.0, 2, 3, 4], [2, 2, 3])
    np.testing.assert_array_equal(y.to_dense().numpy(), d)
    for b in range(2):  # each batch is scipy's CSR of that slice
        m = sp.csr_array(d[b])
        np.testing.assert_array_equal(x.crows().numpy()[3 * b:3 * b + 3], m.indptr)


def test_csr_index_dtypes_are_made_consistent():
    i32, i64 = np.array([0, 1], np.int32), np.array([0], np.int64)
    x = sparse.sparse_csr_tensor(i32, i64.astype(np.int32), [1.0], [1, 1])
    assert x.crows().dtype == np.int32 and x.cols().dtype == np.int32
    y = sparse.sparse_csr_tensor(i32, i64, [1.0], [1, 1])
    assert y.crows().dtype == np.int64 and y.cols().dtype == np.int64


@pytest.mark.parametrize("crows, cols, values, shape, exc, words", [
    ([1, 2, 3], [0, 1], [1.0, 2.0], [2, 2], ValueError, "start at 0"),
    ([0, 2, 1], [0, 1], [1.0, 2.0], [2, 2], ValueError, "non-decreasing"),
    ([0, 1, 1], [0, 1], [1.0, 2.0], [2, 2], ValueError, "hold 2 entries"),
    ([0, 1], [0], [1.0], [2, 2], ValueError, "batch * (rows + 1) = 3"),
    ([0, 1, 2], [0, 1], [1.0], [2, 2], ValueError, "must match"),
    ([0, 1, 2], [0, 2], [1.0, 2.0], [2, 2], IndexError, "out of range for dim 1 of size 2"),
    ([0, 1, 1], [3], [1.0], [2, 3], IndexError, "cols holds 3, out of range for dim 1 of"),
    ([0, 1, 0, 0], [4], [1.0], [2, 1, 4], IndexError, "out of range for dim 2 of size 4"),
    ([0, 1, 2], [0, -1], [1.0, 2.0], [2, 2], IndexError, "non-negative"),
    ([0, 1], [0], [1.0], [2], ValueError, "rank 1"),
    ([0, 1], [0], [1.0], [1, 1, 1, 1], ValueError, "rank 4"),
    ([0.0, 1.0], [0], [1.0], [1, 1], TypeError, "crows must hold integers"),
    ([0, 1], [0.5], [1.0], [1, 1], TypeError, "cols must hold integers"),
    ([0, 1, 0, 2], [0, 1], [1.0, 2.0], [2, 1, 2], ValueError, "(sum 3)"),
    ([0, 1, 1, 1], [0, 1], [1.0, 2.0], [2, 1, 2], ValueError, "start at 0"),
    ([[0, 1]], [0], [1.0], [1, 1], ValueError, "1-D"),
])
def test_malformed_csr_raises(crows, cols, values, shape, exc, words):
    with pytest.raises(exc, match="sparse_csr_tensor") as info:
        sparse.sparse_csr_tensor(crows, cols, values, shape)
    assert words in str(info.value)


# ---------------------------------------------------------------- conversions
@pytest.mark.parametrize("sparse_dim", [1, 2, 3])
def test_dense_to_sparse_coo_stores_nonzero_blocks(sparse_dim):
    rng = np.random.default_rng(0)
    d = _random_dense(rng, (4, 3, 2))
    x = dense.to_tensor(d).to_sparse_coo(sparse_dim)
    mask = d != 0 if sparse_dim == 3 else (d != 0).any(axis=tuple(range(sparse_dim, 3)))
    np.testing.assert_array_equal(x.indices().numpy(), np.array(np.nonzero(mask)))
    assert x.sparse_dim() == sparse_dim and x.is_coalesced()
    assert x.indices().dtype == np.int64
    np.testing.assert_array_equal(x.to_dense().numpy(), d)


def test_to_sparse_coo_rejects_bad_sparse_dim():
    d = dense.to_tensor(np.ones((2, 3)))
    for bad in (0, 3):
        with pytest.raises(ValueError, match="to_sparse_coo: sparse_dim"):
            d.to_sparse_coo(bad)
    with pytest.raises(ValueError, match=r"expected a value in \[2, 2\]"):
        d.to_sparse_csr().to_sparse_coo(1)


def test_coo_to_sparse_coo_folds_leading_dense_dims():
    vals = np.arange(12.0).reshape(2, 3, 2)
    x = sparse.sparse_coo_tensor([[0, 2]], vals, [3, 3, 2])
    y = x.to_sparse_coo(2)
    assert (y.sparse_dim(), y.dense_dim(), y.nnz()) == (2, 1, 6)
    np.testing.assert_array_equal(y.to_dense().numpy(), x.to_dense().numpy())
    assert x.to_sparse_coo(1) is x
    with pytest.raises(ValueError, match="to_sparse_coo"):
        y.to_sparse_coo(1)


@pytest.mark.parametrize("shape", [(5, 7), (3, 4, 6), (0, 3), (2, 0, 3)])
def test_dense_csr_coo_round_trips(shape):
    rng = np.random.default_rng(1)
    d = _random_dense(rng, shape)
    c = dense.to_tensor(d).to_sparse_csr()
    assert c.crows().dtype == np.int64
    np.testing.assert_array_equal(c.to_dense().numpy(), d)
    coo = c.to_sparse_coo()
    np.testing.assert_array_equal(coo.to_dense().numpy(), d)
    np.testing.assert_array_equal(coo.to_sparse_csr().crows().numpy(), c.crows().numpy())
    assert c.to_sparse_csr() is c


def test_coo_to_csr_sorts_rows_stably_and_keeps_duplicates():
    idx = np.array([[1, 0, 1, 0], [2, 1, 0, 1]], dtype=np.int32)
    x = sparse.sparse_coo_tensor(idx, [1.0, 2.0, 3.0, 4.0], [2, 3])
    c = x.to_sparse_csr()
    assert c.crows().dtype == np.int32
    np.testing.assert_array_equal(c.crows().numpy(), [0, 2, 4])
    np.testing.assert_array_equal(c.cols().numpy(), [1, 1, 2, 0])
    np.testing.assert_array_equal(c.values().numpy(), [2.0, 4.0, 1.0, 3.0])


def test_coo_with_dense_dims_to_csr_folds_them():
    x = sparse.sparse_coo_tensor([[2, 0]], [[1.0, 0.0], [3.0, 4.0]], [3, 2])
    c = x.to_sparse_csr()
    np.testing.assert_array_equal(c.to_dense().numpy(), x.to_dense().numpy())
    assert c.nnz() == 4   # every value element is an entry, zeros included


def test_to_sparse_csr_rejects_other_ranks():
    for shape in [(4,), (1, 2, 3, 4)]:
        with pytest.raises(ValueError, match="to_sparse_csr"):
            dense.to_tensor(np.ones(shape)).to_sparse_csr()


@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_every_dtype_converts(dtype):
    rng = np.random.default_rng(2)
    d = (rng.integers(-3, 3, size=(3, 4)) * (rng.random((3, 4)) < 0.5)).astype(dtype)
    c = dense.to_tensor(d).to_sparse_csr()
    assert c.dtype == dtype
    np.testing.assert_array_equal(c.to_dense().numpy(), d)
    coo = dense.to_tensor(d).to_sparse_coo(2)
    np.testing.assert_array_equal(coo.to_dense().numpy(), d)
    np.testing.assert_array_equal(coo.coalesce().to_dense().numpy(), d)


# ---------------------------------------------------------------- scipy interop
def test_from_scipy_coo_any_rank_and_back():
    rng = np.random.default_rng(3)
    d = _random_dense(rng, (3, 4, 5))
    m = sp.coo_array(d)
    x = sparse.from_scipy(m)
    assert x.shape == [3, 4, 5] and x.nnz() == m.nnz
    assert x.is_coalesced() == bool(m.has_canonical_format)
    np.testing.assert_array_equal(x.to_dense().numpy(), d)
    back = x.to_scipy()
    assert isinstance(back, sp.coo_array) and back.shape == (3, 4, 5)
    np.testing.assert_array_equal(back.toarray(), d)


def test_from_scipy_matrices_and_other_formats():
    d = np.array([[0.0, 1.0, 0.0], [2.0, 0.0, 3.0]])
    for m in (sp.coo_matrix(d), sp.csr_matrix(d), sp.csr_array(d), sp.csc_array(d)):
        x = sparse.from_scipy(m)
        assert x.is_sparse_csr() == (m.format == "csr")
        np.testing.assert_array_equal(x.to_dense().numpy(), d)
    with pytest.raises(TypeError, match="from_scipy"):
        sparse.from_scipy(d)


def test_from_scipy_1d_csr_array_becomes_coo():
    v = np.array([1.0, 0.0, 2.0])
    x = sparse.from_scipy(sp.csr_array(v))       # CSR tensors are 2-D or 3-D only
    assert x.is_sparse_coo() and x.shape == [3]
    np.testing.assert_array_equal(x.to_dense().numpy(), v)


def test_from_scipy_copies():
    m = sp.csr_array(np.array([[0.0, 1.0], [2.0, 0.0]]))
    x = sparse.from_scipy(m)
    m.data[:] = 9.0
    np.testing.assert_array_equal(x.values().numpy(), [1.0, 2.0])


def test_to_scipy_folds_dense_dims_and_keeps_the_canonical_flag():
    vals = np.array([[1.0, 2.0], [3.0, 0.0]])
    x = sparse.sparse_coo_tensor([[0, 2]], vals, [3, 2]).coalesce()
    m = x.to_scipy()
    assert m.shape == (3, 2) and m.nnz == 4 and m.has_canonical_format
    np.testing.assert_array_equal(m.toarray(), x.to_dense().numpy())
    m.data[:] = 0.0   # a copy: the tensor is unchanged
    np.testing.assert_array_equal(x.values().numpy(), vals)


def test_csr_to_scipy_is_2d_only():
    d = np.array([[0.0, 1.0], [2.0, 0.0]])
    m = dense.to_tensor(d).to_sparse_csr().to_scipy()
    assert isinstance(m, sp.csr_array)
    np.testing.assert_array_equal(m.toarray(), d)
    with pytest.raises(ValueError, match="to_scipy"):
        dense.to_tensor(np.ones((2, 2, 2))).to_sparse_csr().to_scipy()


def test_to_scipy_of_float16_gives_float32_exactly():
    d = np.array([[0.0, 1.5], [-2.25, 0.0]], np.float16)
    coo = dense.to_tensor(d).to_sparse_coo(2)
    for m in (coo.to_scipy(), coo.to_sparse_csr().to_scipy()):
        assert m.dtype == np.float32
        np.testing.assert_array_equal(m.toarray(), d.astype(np.float32))


def test_repr_is_paddle_like():
    text = repr(sparse.sparse_csr_tensor([0, 1], [0], [2.5], [1, 1]))
    assert text.startswith("Tensor(shape=[1, 1], dtype=float64, place=Place(cpu)")
    assert "crows=[0, 1]" in text and "values=[2.5]" in text


def test_docstring_examples_run():
    import doctest

    import kernels.funcs.restride
    import kernels.infermeta.sparse
    import sparse.compare
    import sparse.creation
    for module in (kernels.funcs.restride, kernels.infermeta.sparse, sparse.creation,
                   sparse.compare):
        res = doctest.testmod(module)
        assert res.failed == 0 and res.attempted > 0, module.__name__


def test_is_same_shape_compares_shapes_across_layouts():
    """As paddle.sparse.is_same_shape: shapes only, any mix of dense, COO and CSR."""
    x = sparse.sparse_coo_tensor(IDX, VALS, [4, 4])
    same = [x, x.to_sparse_csr(), x.to_dense(), dense.zeros([4, 4], dtype="int32")]
    for a in same:
        for b in same:
            assert sparse.is_same_shape(a, b) is True
    other = [sparse.sparse_coo_tensor(IDX, VALS, [4, 5]), dense.zeros([4]),
             dense.zeros([4, 4, 1]), dense.unsqueeze(x.to_dense(), 0)]
    for b in other:
        assert sparse.is_same_shape(x, b) is False and sparse.is_same_shape(b, x) is False
    for bad in (np.zeros((4, 4)), [[0.0] * 4] * 4, None):
        with pytest.raises(TypeError, match="is_same_shape: y must be a dense or sparse"):
            sparse.is_same_shape(x, bad)


@pytest.mark.parametrize("values, dtype", [([300], "uint8"), ([float("nan")], "int64"),
                                           ([1 + 2j], "float64"), ([-1], "uint8")])
def test_constructors_build_python_values_in_dtype_as_numpy_and_to_tensor_do(values, dtype):
    """np.array(values, dtype) refuses these, and so does to_tensor; a cast would have
    stored 44, -2**63, 1.0 or 255 silently."""
    with pytest.raises((OverflowError, ValueError, TypeError)):
        np.array(values, dtype=dtype)
    with pytest.raises(ValueError, match="^to_tensor"):
        dense.to_tensor(values, dtype=dtype)
    with pytest.raises(ValueError, match=f"^sparse_coo_tensor: values cannot become dtype "
                                         f"{dtype}"):
        sparse.sparse_coo_tensor([[0]], values, [2], dtype=dtype)
    with pytest.raises(ValueError, match=f"^sparse_csr_tensor: values cannot become dtype"):
        sparse.sparse_csr_tensor([0, 1], [0], values, [1, 2], dtype=dtype)
    ok = sparse.sparse_coo_tensor([[0]], [3], [2], dtype="float32")
    assert ok.dtype == np.float32 and ok.values().numpy().tolist() == [3.0]


def test_layout_specific_accessors_raise_type_error_naming_what_exists():
    c = sparse.sparse_csr_tensor([0, 1], [0], [1.0], [1, 1])
    x = c.to_sparse_coo()
    for call, name in ((c.indices, "indices"), (c.coalesce, "coalesce"), (x.crows, "crows"),
                       (x.cols, "cols")):
        with pytest.raises(TypeError, match=rf"^{name}: .*(to_sparse_coo|to_sparse_csr)"):
            call()


def test_a_float_argument_beyond_float64_raises_value_error_naming_the_op():
    x = sparse.sparse_coo_tensor([[0]], [1.0], [2])
    with pytest.raises(ValueError, match=r"^leaky_relu: argument 'negative_slope' .* largest"):
        sparse.leaky_relu(x, 10 ** 400)


@pytest.mark.parametrize("make, op", [
    (lambda: sparse.sparse_coo_tensor([[0]], [1], [2], stop_gradient=False), "sparse_coo_tensor"),
    (lambda: sparse.sparse_csr_tensor([0, 1], [0], [1], [1, 1], stop_gradient=False),
     "sparse_csr_tensor"),
    (lambda: dense.to_tensor([1], stop_gradient=False), "to_tensor")])
def test_constructors_name_themselves_when_an_int_dtype_cannot_take_a_gradient(make, op):
    with pytest.raises(TypeError, match=rf"^{op}: stop_gradient=False needs a floating"):
        make()
