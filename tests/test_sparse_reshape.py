"""sparse.reshape: scipy parity, numpy-of-the-dense-form properties, dtypes and corners."""
import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

import dense
import sparse
from kernels.infermeta import resolve_reshape
from test_sparse_restride import _primes


def _random_dense(rng, shape, density=0.3):
    return (rng.random(shape) < density) * rng.standard_normal(shape)


def _coo(d, sparse_dim=None, place="cpu", index_dtype=np.int64):
    """COO of dense ``d`` built from indices and values (works on every backend)."""
    sparse_dim = d.ndim if sparse_dim is None else sparse_dim
    mask = (d != 0).any(axis=tuple(range(sparse_dim, d.ndim))) if sparse_dim < d.ndim \
        else d != 0
    coords = np.nonzero(mask)
    return sparse.sparse_coo_tensor(np.array(coords, dtype=index_dtype).reshape(sparse_dim, -1),
                                    d[coords], d.shape, place=place)


def _dense_of(x):
    """numpy dense form of a COO tensor from its buffers (on any backend)."""
    out = np.zeros(x.shape, x.dtype)
    np.add.at(out, tuple(x.indices().numpy()), x.values().numpy())
    return out


# ------------------------------------------------ the Paddle sparse-reshape RFC's examples
@pytest.mark.parametrize("shape, expect", [([6, 8], [6, 8]), ([2, 3, -1, 2], [2, 3, 4, 2]),
                                           ([-1, 0, 3, 2], [2, 4, 3, 2])])
def test_rfc_examples(shape, expect, backend):
    d = _random_dense(np.random.default_rng(0), (2, 4, 6))
    y = sparse.reshape(_coo(d, place=backend), shape)
    assert y.shape == expect
    np.testing.assert_array_equal(_dense_of(y), d.reshape(expect))


# ---------------------------------------------------------------- scipy parity
COO_CASES = [((3, 4, 5), (12, 5)), ((3, 4, 5), (5, 12)), ((3, 4, 5), (60,)),
             ((3, 4, 5), (2, 2, 15)), ((60,), (3, 4, 5)), ((6, 10), (4, 15)),
             ((1, 6, 1, 10), (10, 1, 6)), ((7, 1), (1, 7))]


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("old, new", COO_CASES)
def test_coo_matches_scipy_nd_coo_array(old, new, order, backend):
    rng = np.random.default_rng(1)
    nnz = 40
    coords = tuple(rng.integers(0, s, nnz) for s in old)  # duplicates included
    vals = rng.standard_normal(nnz)
    m = sp.coo_array((vals, coords), shape=old)
    x = sparse.sparse_coo_tensor(np.array(coords), vals, old, place=backend)
    y = sparse.reshape(x, new, order=order)
    ref = m.reshape(new, order=order)
    np.testing.assert_array_equal(y.indices().numpy(), np.array(ref.coords))
    np.testing.assert_array_equal(y.values().numpy(), ref.data)


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("old, new", [((6, 8), (8, 6)), ((6, 8), (12, 4)), ((6, 8), (1, 48)),
                                      ((6, 8), (48, 1)), ((5, 7), (7, 5)), ((4, 4), (4, 4))])
def test_csr_matches_scipy_csr_array(old, new, order):
    rng = np.random.default_rng(2)
    m = sp.csr_array(_random_dense(rng, old))
    y = sparse.reshape(sparse.from_scipy(m), new, order=order).to_scipy()
    ref = m.reshape(new, order=order).tocsr()
    y.sort_indices()
    ref.sort_indices()
    np.testing.assert_array_equal(y.indptr, ref.indptr)
    np.testing.assert_array_equal(y.indices, ref.indices)
    np.testing.assert_array_equal(y.data, ref.data)


# ---------------------------------------------------------------- hypothesis vs numpy
@st.composite
def reshapes(draw, ranks=(1, 4), new_ranks=(1, 4), max_dim=5):
    """(old shape, requested new shape, resolved new shape) with 0 and -1 in play."""
    old = draw(st.lists(st.integers(0, max_dim), min_size=ranks[0], max_size=ranks[1]))
    size = int(np.prod(old))
    lo, hi = new_ranks
    if size == 0:   # a literal 0 copies x's dim, so a 0-size result copies x's 0
        i = draw(st.sampled_from([i for i, s in enumerate(old) if s == 0]))
        new = draw(st.lists(st.integers(1, max_dim), min_size=max(lo, i + 1),
                            max_size=max(hi, i + 1)))
        new[i] = 0
    else:
        factors = [p for s in old for p in _primes(s)]
        factors = draw(st.permutations(factors))
        n = draw(st.integers(lo, hi))
        cuts = sorted(draw(st.lists(st.integers(0, len(factors)), min_size=n - 1,
                                    max_size=n - 1)))
        bounds = [0] + cuts + [len(factors)]
        new = [int(np.prod(factors[a:b])) for a, b in itertools.pairwise(bounds)]
    request = [s if s else -2 for s in new]   # -2 marks the copied 0 until it is set
    if size and draw(st.booleans()):
        request[draw(st.integers(0, len(new) - 1))] = -1
    for i in range(min(len(old), len(new))):
        if request[i] == -2 or (request[i] == old[i] and draw(st.booleans())):
            request[i] = 0
    resolved = resolve_reshape(old, request)
    assert resolved == tuple(new)
    return tuple(old), request, resolved


@given(case=reshapes(), order=st.sampled_from("CF"), dense_dims=st.integers(0, 2),
       seed=st.integers(0, 2**16), duplicates=st.booleans())
def test_coo_reshape_equals_numpy_reshape_of_the_dense_form(case, order, dense_dims, seed,
                                                            duplicates):
    old, request, new = case
    rng = np.random.default_rng(seed)
    d = _random_dense(rng, old)
    sparse_dim = max(1, len(old) - dense_dims)
    x = _coo(d, sparse_dim)
    if duplicates and x.nnz():
        half = x.values().numpy() / 2
        idx = np.concatenate([x.indices().numpy()] * 2, axis=1)
        x = sparse.sparse_coo_tensor(idx, np.concatenate([half, half]), old)
    y = sparse.reshape(x, request, order=order)
    assert y.shape == list(new)
    np.testing.assert_allclose(y.to_dense().numpy(), d.reshape(new, order=order), atol=1e-12)
    assert y.nnz() * max(1, int(np.prod(y.shape[y.sparse_dim():]))) >= x.values().numpy().size
    k = len(old) - sparse_dim
    lead = len(new) - k
    kept = lead >= 1 and tuple(new[lead:]) == old[sparse_dim:] and \
        np.prod(new[:lead]) == np.prod(old[:sparse_dim])
    if tuple(new) != old:
        assert y.dense_dim() == (k if kept else 0)         # kept, or folded into sparse dims
        assert (y.values()._data() is x.values()._data()) == (kept or k == 0)
    assert sparse.reshape.infer_meta(x, request, order) == y.meta


@given(case=reshapes(ranks=(2, 3), new_ranks=(2, 3)), order=st.sampled_from("CF"),
       seed=st.integers(0, 2**16))
def test_csr_reshape_equals_numpy_reshape_of_the_dense_form(case, order, seed):
    old, request, new = case
    d = _random_dense(np.random.default_rng(seed), old)
    x = dense.to_tensor(d).to_sparse_csr()
    y = sparse.reshape(x, request, order=order)
    assert y.is_sparse_csr() and y.shape == list(new)
    np.testing.assert_array_equal(y.to_dense().numpy(), d.reshape(new, order=order))
    # crows is monotone per batch and cols lie in range: the result is a valid CSR
    sparse.sparse_csr_tensor(y.crows(), y.cols(), y.values(), y.shape)


# ---------------------------------------------------------------- dense dims
def test_kept_dense_dims_share_values_and_remap_only_indices(backend):
    d = _random_dense(np.random.default_rng(3), (4, 6, 5))
    x = _coo(d, 2, place=backend)
    y = sparse.reshape(x, [3, 8, 5])
    assert (y.sparse_dim(), y.dense_dim()) == (2, 1)
    assert y.values()._data() is x.values()._data()
    np.testing.assert_array_equal(_dense_of(y), d.reshape(3, 8, 5))


def test_changed_dense_dims_are_folded_to_dense_dim_zero():
    vals = np.array([[1.0, 0.0], [0.0, 2.0]])
    x = sparse.sparse_coo_tensor([[0, 2]], vals, [3, 2])
    y = sparse.reshape(x, [2, 3])
    assert (y.sparse_dim(), y.dense_dim(), y.nnz()) == (2, 0, 4)
    np.testing.assert_array_equal(y.indices().numpy(), [[0, 0, 1, 1], [0, 1, 1, 2]])
    np.testing.assert_array_equal(y.values().numpy(), [1.0, 0.0, 0.0, 2.0])


# ---------------------------------------------------------------- flags and dtypes
def test_coalesced_flag_kept_by_c_order_cleared_by_f():
    x = _coo(_random_dense(np.random.default_rng(4), (4, 6)))
    assert x.is_coalesced() is False
    c = x.coalesce()
    assert sparse.reshape(c, [6, 4]).is_coalesced()
    assert not sparse.reshape(c, [6, 4], order="F").is_coalesced()
    assert sparse.reshape(c, [4, 6], order="F").is_coalesced()   # same shape: unchanged
    y = sparse.reshape(c, [3, 8])
    assert np.all(np.diff(np.ravel_multi_index(tuple(y.indices().numpy()), (3, 8))) > 0)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_index_dtype_is_kept_when_dims_fit(dtype, backend):
    x = _coo(_random_dense(np.random.default_rng(5), (4, 6, 5)), place=backend,
             index_dtype=dtype)
    assert sparse.reshape(x, [24, 5]).indices().dtype == dtype
    assert sparse.reshape(x, [5, 2, 12], order="F").indices().dtype == dtype
    c = dense.to_tensor(np.eye(6)).to_sparse_coo(2)
    c = sparse.sparse_coo_tensor(c.indices().numpy().astype(dtype), c.values(), [6, 6])
    y = sparse.reshape(c.to_sparse_csr(), [4, 9])
    assert y.crows().dtype == dtype and y.cols().dtype == dtype


def test_flat_index_beyond_int32_is_exact_without_densifying(backend):
    old, new = (2**20, 2**20, 3), (2**30, 3 * 2**10)
    coords = np.array([[2**20 - 1, 12345, 0, 2**19], [2**20 - 1, 777, 1, 3], [2, 1, 0, 2]],
                      dtype=np.int32)
    x = sparse.sparse_coo_tensor(coords, np.ones(4), old, place=backend)
    y = sparse.reshape(x, new)
    assert y.indices().dtype == np.int32          # every new dim fits int32
    for order in "CF":
        y = sparse.reshape(x, new, order=order)
        got = y.indices().numpy()
        for k in range(4):
            c = [int(v) for v in coords[:, k]]
            flat = (c[0] * old[1] + c[1]) * old[2] + c[2] if order == "C" else \
                c[0] + old[0] * (c[1] + old[1] * c[2])
            assert flat >= 0
            want = [flat // new[1], flat % new[1]] if order == "C" else \
                [flat % new[0], flat // new[0]]
            assert got[:, k].tolist() == want
    assert max(int(v) for v in coords[0]) * old[1] * old[2] > 2**31


def test_a_new_dim_of_2_31_or_more_makes_the_indices_int64():
    x = sparse.sparse_coo_tensor(np.array([[2**20 - 1, 3], [2**20 - 1, 5]], np.int32),
                                 [1.0, 2.0], [2**20, 2**20])
    y = sparse.reshape(x, [-1])
    assert y.indices().dtype == np.int64
    assert y.indices().numpy().tolist() == [[2**40 - 1, 3 * 2**20 + 5]]
    c = sparse.sparse_csr_tensor(np.array([0, 1, 1], np.int32), np.array([5], np.int32),
                                 [1.0], [2, 2**30])
    z = sparse.reshape(c, [1, 2**31])
    assert z.cols().dtype == np.int64 and z.cols().numpy().tolist() == [5]


def test_element_count_of_2_63_or_more_raises_in_infer_meta():
    x = sparse.sparse_coo_tensor([[1], [2]], [1.0], [2**32, 2**32])
    with pytest.raises(ValueError, match="reshape: .* more than 2\\*\\*63 - 1"):
        sparse.reshape.infer_meta(x.meta, [-1])
    with pytest.raises(ValueError, match="reshape"):
        sparse.reshape(x, [2**64])


# ---------------------------------------------------------------- errors
def test_order_other_than_c_or_f_raises():
    x = _coo(np.eye(3))
    for bad in ("A", "c", ""):
        with pytest.raises(ValueError, match="reshape: order"):
            sparse.reshape(x, [9], order=bad)


def test_a_0d_result_raises():
    x = sparse.sparse_coo_tensor([[0]], [2.0], [1])
    with pytest.raises(ValueError, match="reshape: .* 0-d"):
        sparse.reshape(x, [])


@pytest.mark.parametrize("shape", [[9], [1, 1, 3, 3]])
def test_csr_target_rank_other_than_2_or_3_raises(shape):
    x = dense.to_tensor(np.eye(3)).to_sparse_csr()
    with pytest.raises(ValueError, match="reshape: the new shape .* CSR tensor is 2-D"):
        sparse.reshape(x, shape)


@pytest.mark.parametrize("shape, words", [([-1, -1], "more than one -1"), ([4, 4], "elements"),
                                          ([5, 0, 0], "0 at index 2"), ([-2, 9], "negative")])
def test_shape_rules_are_dense_reshapes(shape, words):
    x = _coo(np.eye(3))
    with pytest.raises(ValueError, match="reshape") as info:
        sparse.reshape(x, shape)
    assert words in str(info.value)
    with pytest.raises(ValueError, match="reshape"):
        dense.reshape(dense.to_tensor(np.eye(3)), shape)


# ---------------------------------------------------------------- corners
def test_same_shape_is_a_fast_path_sharing_everything():
    x = _coo(np.eye(4))
    y = sparse.reshape(x, [4, -1])
    assert y.indices()._data() is x.indices()._data()
    c = x.to_sparse_csr()
    z = sparse.reshape(c, [0, 4])
    assert z.cols()._data() is c.cols()._data()


@pytest.mark.parametrize("old, new", [((3, 4), (2, 6)), ((0, 4), (0, 2, 2)),
                                      ((2, 0, 3), (6, 0)), ((5,), (1, 5))])
def test_no_stored_entries(old, new, backend):
    x = sparse.sparse_coo_tensor(np.zeros((len(old), 0), np.int32), np.zeros(0), old,
                                 place=backend)
    y = sparse.reshape(x, new)
    assert y.shape == list(new) and y.nnz() == 0 and y.indices().dtype == np.int32
    assert y.indices().shape == [len(new), 0]


def test_empty_csr_and_zero_size_dims():
    for old, new in [((3, 4), (6, 2)), ((0, 4), (0, 2)), ((2, 0, 3), (3, 0, 2)),
                     ((2, 3, 4), (4, 6))]:
        x = sparse.sparse_csr_tensor(np.zeros(int(np.prod(old[:-1])) + (old[0] if len(old) == 3
                                                                         else 1), np.int64),
                                     np.zeros(0, np.int64), np.zeros(0), old)
        y = sparse.reshape(x, new)
        assert y.shape == list(new) and y.nnz() == 0
        np.testing.assert_array_equal(y.to_dense().numpy(), np.zeros(new))


def test_dense_dims_of_size_zero():
    x = sparse.sparse_coo_tensor([[0, 2], [1, 1]], np.zeros((2, 0)), [3, 4, 0])
    y = sparse.reshape(x, [4, 3, 0])
    assert (y.sparse_dim(), y.nnz()) == (2, 2)
    z = sparse.reshape(x, [5, 0, 0])    # 0 copies x's dim: [5, 4, 0]; the sparse part changes
    assert z.shape == [5, 4, 0] and z.nnz() == 0 and z.dense_dim() == 0


def test_batched_csr_reshape_keeps_paddles_layout():
    d = _random_dense(np.random.default_rng(6), (3, 4, 6))
    x = dense.to_tensor(d).to_sparse_csr()
    y = sparse.reshape(x, [3, 8, 3])
    ref = [sp.csr_array(d[b].reshape(8, 3)) for b in range(3)]
    np.testing.assert_array_equal(y.crows().numpy(), np.concatenate([m.indptr for m in ref]))
    np.testing.assert_array_equal(y.cols().numpy(), np.concatenate([m.indices for m in ref]))
    np.testing.assert_array_equal(y.values().numpy(), np.concatenate([m.data for m in ref]))


def test_inputs_are_never_mutated():
    rng = np.random.default_rng(7)
    idx = rng.integers(0, 6, size=(3, 30))
    vals = rng.standard_normal((30, 2))
    idx0, vals0 = idx.copy(), vals.copy()
    x = sparse.sparse_coo_tensor(idx, vals, [6, 6, 6, 2])
    for shape, order in [([36, 6, 2], "C"), ([6, 72], "F"), ([-1], "C")]:
        sparse.reshape(x, shape, order=order)
        sparse.reshape(x.to_sparse_coo(4), shape, order=order)
    c = sparse.sparse_csr_tensor([0, 2, 3], [3, 1, 2], [1.0, 2.0, 3.0], [2, 4])
    sparse.reshape(c, [4, 2], order="F")
    np.testing.assert_array_equal(idx, idx0)
    np.testing.assert_array_equal(vals, vals0)
    np.testing.assert_array_equal(x.indices().numpy(), idx0)
    np.testing.assert_array_equal(c.cols().numpy(), [3, 1, 2])


def test_unsorted_csr_columns_are_regrouped_by_row():
    c = sparse.sparse_csr_tensor([0, 2, 3], [3, 0, 2], [1.0, 2.0, 3.0], [2, 4])
    y = sparse.reshape(c, [4, 2])
    np.testing.assert_array_equal(y.crows().numpy(), [0, 1, 2, 2, 3])
    np.testing.assert_array_equal(y.cols().numpy(), [0, 1, 0])
    np.testing.assert_array_equal(y.values().numpy(), [2.0, 1.0, 3.0])


def test_tensor_method_and_integer_tensor_shape():
    x = _coo(np.eye(4))
    y = x.reshape(dense.to_tensor(np.array([2, 8])))
    assert y.shape == [2, 8]
    np.testing.assert_array_equal(y.to_dense().numpy(), np.eye(4).reshape(2, 8))


@pytest.mark.parametrize("old, new", [((100, 100, 100, 3), (10000, 100, 3)),
                                      ((64, 64, 3), (16, 16, 16, 3)),
                                      ((60, 70, 3), (70, 60, 3))])
def test_peak_memory_is_the_output_plus_at_most_one_int64_row(old, new):
    import tracemalloc
    rng = np.random.default_rng(8)
    nnz = 200_000
    coords = np.array([rng.integers(0, s, nnz) for s in old[:-1]])
    x = sparse.sparse_coo_tensor(coords, rng.standard_normal((nnz, 3)), old)
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    y = sparse.reshape(x, new)
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    out_bytes = y.indices()._data().nbytes
    assert y.values()._data() is x.values()._data()
    assert peak <= out_bytes + nnz * 8 + 256 * 1024, (peak, out_bytes)   # + ufunc buffers


@pytest.mark.parametrize("old, new", [((6, 12), (12, 6)), ((6, 12), (18, 4)), ((6, 12), (72, 1)),
                                      ((6, 12), (6, 12)), ((2, 6, 12), (2, 18, 4)),
                                      ((2, 6, 12), (4, 6, 6)), ((2, 6, 12), (12, 12)),
                                      ((6, 12), (3, 6, 4)), ((2, 6, 12), (3, 4, 12)),
                                      ((6, 12), (3, 24)), ((6, 12), (1, 72)),
                                      ((2, 6, 12), (2, 3, 24)), ((2, 6, 12), (6, 24)),
                                      ((12, 6), (2, 2, 18)), ((6, 12), (4, 18))])
@pytest.mark.parametrize("case", ["canonical", "unsorted", "duplicates", "empty rows"])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_csr_column_split_and_row_merge_match_numpy(old, new, case, index_dtype):
    """A C-order reshape whose last dim divides x's (each row cut into runs of columns)
    takes the column-split path when every row's columns ascend, one whose last dim is
    a multiple of x's (consecutive rows joined) the row-merge path whatever the order,
    and any other the general path; all give numpy's reshape of the dense form, rows in
    order with x's values in x's order, and keep int32 indices."""
    rng = np.random.default_rng(12)
    a = _random_dense(rng, old)
    if case == "empty rows":
        a[..., ::2, :] = 0
    batch = old[0] if len(old) == 3 else 1
    mats = [sp.csr_array(m) for m in a.reshape((batch,) + old[-2:])]
    crows = np.concatenate([m.indptr for m in mats])
    cols = np.concatenate([m.indices for m in mats])
    vals = np.concatenate([m.data for m in mats])
    if case in ("unsorted", "duplicates"):
        r = crows[: old[-2] + 1]
        k = int(np.argmax(np.diff(r) >= 2))            # a row with two entries or more
        i = r[k]
        if case == "unsorted":
            cols[i], cols[i + 1], vals[i], vals[i + 1] = cols[i + 1], cols[i], vals[i + 1], vals[i]
        else:                                           # the second entry doubles the first
            a.reshape((batch,) + old[-2:])[0][k, cols[i + 1]] -= vals[i + 1]
            a.reshape((batch,) + old[-2:])[0][k, cols[i]] += vals[i + 1]
            cols[i + 1] = cols[i]
    x = sparse.sparse_csr_tensor(crows.astype(index_dtype), cols.astype(index_dtype), vals, old)
    for _ in range(2):                                  # the second call recalls the walk
        y = sparse.reshape(x, new)
        assert y.shape == list(new)
        np.testing.assert_array_equal(y.to_dense().numpy(), a.reshape(new))
        assert y.crows().numpy().dtype == index_dtype and y.cols().numpy().dtype == index_dtype
        if case != "duplicates":
            rows = y.crows().numpy().reshape(-1, new[-2] + 1)
            assert all(np.all(np.diff(r) >= 0) for r in rows)
            assert y.nnz() == x.nnz()
    g = rng.standard_normal(new)                        # each entry's gradient is g at
    xs = sparse.sparse_csr_tensor(crows.astype(index_dtype), cols.astype(index_dtype), vals, old,
                                  stop_gradient=False)  # its image, duplicates included
    y = sparse.reshape(xs, new)
    y.backward(dense.to_tensor(g))
    coords = tuple(x.to_sparse_coo().indices().numpy())
    np.testing.assert_array_equal(xs.grad.values().numpy(), g.reshape(old)[coords])
