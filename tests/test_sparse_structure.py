"""sparse.transpose, slice, index_select, concat and stack: what the generic op database
(tests/sparse_opdb/structure.py: forward, infer-meta and finite-difference gradients on
every sparse operand and dtype) does not cover.

Hypothesis-driven permutations, windows and indices against numpy on the dense form
(duplicates summed by np.add.at), scipy.sparse parity on 2-D and n-D COO, hand-worked
gradients, index dtypes, coalesced flags and errors.
"""
import itertools
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, strategies as st

import dense
import sparse
from kernels.core.meta import MetaTensor


# ---------------------------------------------------------------- builders
def coo(shape, sparse_dim=None, nnz=12, index_dtype=np.int64, dtype=np.float64, seed=0,
        dups=True, place="cpu"):
    """A random COO tensor (duplicate coordinates when ``dups``) and its dense numpy form."""
    rng = np.random.default_rng(seed)
    sd = len(shape) if sparse_dim is None else sparse_dim
    idx = np.array([rng.integers(0, max(s, 1), nnz) for s in shape[:sd]]).reshape(sd, nnz)
    if not dups and nnz:
        flat = np.unique(np.ravel_multi_index(tuple(idx), shape[:sd]))
        idx = np.array(np.unravel_index(flat, shape[:sd])).reshape(sd, -1)
    if 0 in shape[:sd]:
        idx = idx[:, :0]
    vals = rng.standard_normal((idx.shape[1],) + tuple(shape[sd:])).astype(dtype)
    x = sparse.sparse_coo_tensor(idx.astype(index_dtype), vals, list(shape), place=place)
    return x, dense_of(x)


def csr(shape, density=0.4, index_dtype=np.int64, seed=0, shuffle=True, place="cpu"):
    """A random 2-D/3-D CSR tensor with unsorted cols and a duplicate entry, and its dense form."""
    rng = np.random.default_rng(seed)
    batch = shape[0] if len(shape) == 3 else 1
    rows, ncols = shape[-2], shape[-1]
    crows, cols = [], []
    for _ in range(batch):
        counts = [int(rng.binomial(ncols, density)) for _ in range(rows)]
        crows += list(np.concatenate([[0], np.cumsum(counts)]))
        for n in counts:
            c = rng.choice(ncols, n, replace=False)
            if shuffle and n > 1:
                c[0] = c[1]                      # a duplicate (row, col)
            cols += list(c if shuffle else np.sort(c))
    vals = rng.standard_normal(len(cols))
    x = sparse.sparse_csr_tensor(np.array(crows, index_dtype), np.array(cols, index_dtype), vals,
                                 list(shape), place=place)
    return x, dense_of(x)


def dense_of(x):
    """numpy dense form from the buffers (duplicates summed), independent of to_dense."""
    c = x if x.is_sparse_coo() else x.to_sparse_coo(len(x.shape))
    out = np.zeros(x.shape, x.dtype)
    np.add.at(out, tuple(c.indices().numpy()), c.values().numpy())
    return out


def is_c_sorted_unique(x):
    if x.nnz() < 2:
        return True
    flat = np.ravel_multi_index(tuple(x.indices().numpy()), x.shape[:x.sparse_dim()])
    return bool(np.all(np.diff(flat) > 0))


# ---------------------------------------------------------------- transpose
COO_SHAPES = [((3, 4, 5), 3), ((3, 4, 5), 2), ((3, 4, 5), 1), ((2, 3, 2, 2), 2)]


@given(st.sampled_from(COO_SHAPES), st.data())
def test_coo_transpose_any_permutation_matches_numpy(case, data):
    shape, sd = case
    perm = data.draw(st.permutations(range(len(shape))))
    x, d = coo(shape, sd, seed=data.draw(st.integers(0, 99)))
    y = sparse.transpose(x, perm)
    np.testing.assert_array_equal(dense_of(y), d.transpose(perm))
    keeps = sorted(perm[:sd]) == list(range(sd))
    assert y.dense_dim() == (len(shape) - sd if keeps else 0)
    assert y.shape == [shape[p] for p in perm]


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_coo_transpose_keeps_index_dtype_and_values(index_dtype, backend):
    x, d = coo((3, 4, 5), 2, index_dtype=index_dtype, place=backend)
    y = sparse.transpose(x, [1, 0, 2])
    assert y.indices().dtype == index_dtype
    np.testing.assert_array_equal(y.indices().numpy(), x.indices().numpy()[[1, 0]])
    np.testing.assert_array_equal(y.values().numpy(), x.values().numpy())
    z = sparse.transpose(x, [2, 0, 1])                   # mixed: dense dim folded first
    assert z.dense_dim() == 0 and z.indices().dtype == index_dtype
    np.testing.assert_array_equal(dense_of(z), d.transpose(2, 0, 1))


def test_coo_transpose_negative_perm_and_errors():
    x, d = coo((3, 4, 5))
    np.testing.assert_array_equal(dense_of(sparse.transpose(x, [-1, 0, 1])), d.transpose(2, 0, 1))
    for perm, match in [([0, 1], "has 2 entries"), ([0, 0, 1], "repeats"), ([0, 1, 3], "range")]:
        with pytest.raises(ValueError, match=f"^transpose: .*{match}"):
            sparse.transpose(x, perm)


def test_coalesced_flag_is_true_to_the_data():
    x = sparse.coalesce(coo((3, 4, 5), 2)[0])
    assert x.is_coalesced()
    assert sparse.transpose(x, [0, 1, 2]).is_coalesced()
    y = sparse.transpose(x, [1, 0, 2])
    assert not y.is_coalesced()
    assert sparse.transpose(sparse.coalesce(coo((3, 4, 5), 1)[0]), [0, 2, 1]).is_coalesced()
    s = sparse.slice(x, [0, 1], [1, 1], [3, 3])
    assert s.is_coalesced() and is_c_sorted_unique(s)
    i = sparse.index_select(x, np.array([0, 2]), axis=1)
    assert i.is_coalesced() and is_c_sorted_unique(i)
    assert not sparse.index_select(x, np.array([2, 0]), axis=1).is_coalesced()
    assert not sparse.index_select(x, np.array([1, 1]), axis=0).is_coalesced()


def test_coo_transpose_matches_scipy_nd_coo_array():
    rng = np.random.default_rng(3)
    shape = (4, 5, 6)
    coords = tuple(rng.integers(0, s, 30) for s in shape)
    m = sp.coo_array((rng.standard_normal(30), coords), shape=shape)
    x = sparse.from_scipy(m)
    for perm in itertools.permutations(range(3)):
        ref = m.transpose(perm)
        y = sparse.transpose(x, list(perm))
        np.testing.assert_array_equal(y.indices().numpy(), np.array(ref.coords))
        np.testing.assert_array_equal(y.values().numpy(), ref.data)


@pytest.mark.parametrize("shape, perm", [((5, 7), [1, 0]), ((3, 4, 5), [2, 1, 0]),
                                         ((3, 4, 5, 2), [2, 1, 0, 3])])
def test_coo_transpose_reversing_the_sparse_dims_shares_the_index_rows(shape, perm):
    """A reversal of the sparse dims (every 2-D transpose) reads x's index rows backwards,
    as scipy's transpose shares its coordinates: nothing is copied, and every op reads
    the result as it reads a copy."""
    x, dense_x = coo(shape, sparse_dim=3 if len(shape) == 4 else None, nnz=40, seed=5)
    y = sparse.transpose(x, perm)
    assert np.shares_memory(y._data().indices, x._data().indices)
    ref = np.transpose(dense_x, perm)
    np.testing.assert_allclose(y.to_dense().numpy(), ref, rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(y.indices().numpy(), x.indices().numpy()[::-1])
    np.testing.assert_allclose(y.coalesce().to_dense().numpy(), ref, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(sparse.sum(y, 0).to_dense().numpy(), ref.sum(0))
    np.testing.assert_allclose((y + y).to_dense().numpy(), 2 * ref, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_csr_2d_transpose_matches_scipy(index_dtype, backend):
    m = sp.random_array((7, 9), density=0.3, format="csr", random_state=4)
    x = sparse.sparse_csr_tensor(m.indptr.astype(index_dtype), m.indices.astype(index_dtype),
                                 m.data, [7, 9], place=backend)
    y = sparse.transpose(x, [1, 0])
    ref = m.T.tocsr()
    assert y.is_sparse_csr() and y.crows().dtype == index_dtype
    np.testing.assert_array_equal(y.crows().numpy(), ref.indptr)
    np.testing.assert_array_equal(y.cols().numpy(), ref.indices)
    np.testing.assert_array_equal(y.values().numpy(), ref.data)


@pytest.mark.parametrize("perm", list(itertools.permutations(range(3))))
def test_csr_3d_all_six_permutations_give_csr(perm, backend):
    x, d = csr((3, 4, 5), place=backend)
    y = sparse.transpose(x, list(perm))
    assert y.is_sparse_csr() and y.shape == [d.shape[p] for p in perm]
    np.testing.assert_array_equal(dense_of(y), d.transpose(perm))
    assert y.nnz() == x.nnz()


# ---------------------------------------------------------------- slice
def paddle_window(shape, axes, starts, ends):
    ref = [slice(None)] * len(shape)
    for a, s, e in zip(axes, starts, ends):
        n = shape[a]
        s, e = s + n if s < 0 else s, e + n if e < 0 else e
        ref[a] = slice(min(max(s, 0), n), min(max(e, 0), n))
    return tuple(ref)


@given(st.sampled_from(COO_SHAPES + [((4, 6), 2)]), st.sampled_from(["coo", "csr"]), st.data())
def test_slice_matches_numpy(case, layout, data):
    shape, sd = case
    if layout == "csr" and len(shape) > 3:
        shape = shape[:3]
    x, d = coo(shape, sd, seed=3) if layout == "coo" else csr(shape, seed=3)
    nd = len(shape)
    axes = data.draw(st.lists(st.integers(-nd, nd - 1), unique_by=lambda a: a % nd, max_size=nd))
    starts = data.draw(st.lists(st.integers(-7, 7), min_size=len(axes), max_size=len(axes)))
    ends = data.draw(st.lists(st.integers(-7, 7), min_size=len(axes), max_size=len(axes)))
    y = sparse.slice(x, axes, starts, ends)
    ref = d[paddle_window(shape, [a % nd for a in axes], starts, ends)]
    assert y.layout == x.layout and y.shape == list(ref.shape)
    np.testing.assert_allclose(dense_of(y), ref)
    if layout == "coo":      # exactly the entries inside the window, duplicates kept
        inside = np.ones(x.nnz(), bool)
        win = paddle_window(shape, [a % nd for a in axes], starts, ends)
        for k in range(sd):
            lo, hi, _ = win[k].indices(shape[k])
            inside &= (x.indices().numpy()[k] >= lo) & (x.indices().numpy()[k] < hi)
        assert y.nnz() == int(inside.sum())


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_slice_matches_scipy_2d(index_dtype, backend):
    m = sp.random_array((8, 9), density=0.35, format="csr", random_state=5)
    x = sparse.sparse_csr_tensor(m.indptr.astype(index_dtype), m.indices.astype(index_dtype),
                                 m.data, [8, 9], place=backend)
    c = sparse.from_scipy(m.tocoo(), place=backend)
    for (a, b), (u, v) in [((2, 6), (1, 8)), ((0, 8), (3, 4)), ((5, 5), (0, 9)), ((1, 7), (0, 9))]:
        ref = m[a:b, u:v]
        y = sparse.slice(x, [0, 1], [a, u], [b, v])
        assert y.crows().dtype == index_dtype and y.cols().dtype == index_dtype
        np.testing.assert_array_equal(y.crows().numpy(), ref.indptr)
        np.testing.assert_array_equal(y.cols().numpy(), ref.indices)
        np.testing.assert_array_equal(y.values().numpy(), ref.data)
        np.testing.assert_array_equal(dense_of(sparse.slice(c, [0, 1], [a, u], [b, v])),
                                      ref.toarray())


def test_slice_dense_dims_and_empty_results():
    x, d = coo((3, 4, 5), 1)
    y = sparse.slice(x, [2, 0], [1, -2], [-1, 100])
    assert y.dense_dim() == 2
    np.testing.assert_array_equal(dense_of(y), d[1:, :, 1:4])
    e = sparse.slice(x, [0], [2], [1])
    assert e.shape == [0, 4, 5] and e.nnz() == 0
    z = sparse.slice(csr((3, 4, 5))[0], [1], [3], [-5])
    assert z.shape == [3, 0, 5] and z.nnz() == 0 and z.crows().numpy().tolist() == [0] * 3


def test_slice_errors():
    x = coo((3, 4))[0]
    with pytest.raises(ValueError, match="^slice: axes .* lengths 1, 2 and 1"):
        sparse.slice(x, [0], [0, 1], [1])
    with pytest.raises(ValueError, match="^slice: axes 2 is out of range"):
        sparse.slice(x, [2], [0], [1])
    with pytest.raises(ValueError, match="^slice: .*more than once"):
        sparse.slice(x, [0, -2], [0, 0], [1, 1])


def test_slice_grad_is_zero_where_cut_and_upstream_where_kept():
    x = sparse.sparse_coo_tensor([[0, 2, 1, 2]], [1.0, 2.0, 3.0, 4.0], [3], stop_gradient=False)
    sparse.slice(x, [0], [1], [3]).backward(dense.to_tensor(np.array([10.0, 20.0])))
    np.testing.assert_array_equal(x.grad.values().numpy(), [0.0, 20.0, 10.0, 20.0])


# ---------------------------------------------------------------- index_select
@given(st.sampled_from(COO_SHAPES + [((4, 6), 2)]), st.sampled_from(["coo", "csr"]), st.data())
def test_index_select_matches_numpy_take(case, layout, data):
    shape, sd = case
    if layout == "csr" and len(shape) > 3:
        shape = shape[:3]
    x, d = coo(shape, sd, seed=5) if layout == "coo" else csr(shape, seed=5)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    n = shape[axis]
    idx = np.array(data.draw(st.lists(st.integers(0, n - 1), max_size=6)), dtype=np.int64)
    y = sparse.index_select(x, idx.astype(data.draw(st.sampled_from([np.int32, np.int64]))), axis)
    assert y.layout == x.layout
    np.testing.assert_allclose(dense_of(y), np.take(d, idx, axis=axis))


def test_index_select_repeats_entries_and_keeps_index_dtype():
    x, d = coo((4, 3), index_dtype=np.int32, dups=False)
    idx = np.array([3, 1, 3], np.int64)
    y = sparse.index_select(x, idx, 0)
    per_row = np.bincount(x.indices().numpy()[0], minlength=4)
    assert y.nnz() == int(per_row[idx].sum()) and y.indices().dtype == np.int32
    c = sparse.index_select(csr((4, 3), index_dtype=np.int32)[0], idx, 1 - 1)
    assert c.crows().dtype == np.int32 and c.cols().dtype == np.int32


def test_index_select_matches_scipy_rows():
    m = sp.random_array((9, 7), density=0.3, format="csr", random_state=6)
    idx = np.array([4, 0, 4, 8, 2])
    ref = m[idx]
    y = sparse.index_select(sparse.from_scipy(m), idx, 0)
    np.testing.assert_array_equal(y.crows().numpy(), ref.indptr)
    np.testing.assert_array_equal(y.cols().numpy(), ref.indices)
    np.testing.assert_array_equal(y.values().numpy(), ref.data)
    cols = idx[idx < 7]
    np.testing.assert_array_equal(dense_of(sparse.index_select(sparse.from_scipy(m), cols, 1)),
                                  m[:, cols].toarray())


def test_index_select_errors_before_work():
    x = coo((3, 4))[0]
    with pytest.raises(TypeError, match="^index_select: index dtype float64"):
        sparse.index_select(x, np.array([0.0]), 0)
    with pytest.raises(TypeError, match="^index_select: index dtype int16"):
        sparse.index_select(x, np.array([0], np.int16), 0)
    with pytest.raises(ValueError, match="^index_select: index has shape \\[1, 1\\]"):
        sparse.index_select(x, np.array([[0]]), 0)
    with pytest.raises(IndexError, match="^index_select: index 4 at position 1 .*axis 1 of size 4"):
        sparse.index_select(x, np.array([0, 4]), 1)
    with pytest.raises(IndexError, match="index -1"):
        sparse.index_select(csr((3, 4))[0], np.array([-1]), 0)
    with pytest.raises(ValueError, match="^index_select: axis 2 is out of range"):
        sparse.index_select(x, np.array([0]), 2)


def test_index_select_grad_sums_repeated_images():
    x = sparse.sparse_coo_tensor([[0, 2, 1]], [1.0, 2.0, 3.0], [3], stop_gradient=False)
    y = sparse.index_select(x, np.array([2, 2, 0]), 0)
    y.backward(dense.to_tensor(np.array([1.0, 10.0, 100.0])))
    np.testing.assert_array_equal(x.grad.values().numpy(), [100.0, 11.0, 0.0])


# ---------------------------------------------------------------- concat and stack
@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_coo_concat_matches_numpy(axis):
    parts = [coo(s, sd, seed=k) for k, (s, sd) in
             enumerate([((3, 4, 2), 2), ((3, 4, 2), 1), ((3, 4, 2), 3)])]
    if axis in (0,):
        parts[1] = coo((5, 4, 2), 1, seed=9)
    y = sparse.concat([p for p, _ in parts], axis)
    np.testing.assert_array_equal(dense_of(y), np.concatenate([d for _, d in parts], axis))
    ax = axis % 3
    assert y.sparse_dim() == max(3, ax + 1)


def test_coo_concat_keeps_dense_dims_on_a_sparse_axis():
    a, da = coo((3, 4, 2), 2, seed=1)
    b, db = coo((1, 4, 2), 2, seed=2)
    y = sparse.concat([a, b], 0)
    assert y.dense_dim() == 1 and y.indices().dtype == np.int64
    np.testing.assert_array_equal(dense_of(y), np.concatenate([da, db]))


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_csr_2d_concat_matches_scipy_vstack_hstack(axis):
    ms = [sp.random_array((4, 5), density=0.4, format="csr", random_state=k) for k in range(3)]
    y = sparse.concat([sparse.from_scipy(m) for m in ms], axis)
    ref = (sp.vstack if axis == 0 else sp.hstack)(ms, format="csr")
    assert y.is_sparse_csr()
    np.testing.assert_array_equal(y.crows().numpy(), ref.indptr)
    np.testing.assert_array_equal(y.cols().numpy(), ref.indices)
    np.testing.assert_array_equal(y.values().numpy(), ref.data)


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_csr_3d_concat_matches_numpy(axis):
    shapes = [(2, 3, 4), (2, 3, 4)]
    shapes[1] = tuple(s + (k == axis) for k, s in enumerate(shapes[1]))
    parts = [csr(s, seed=k) for k, s in enumerate(shapes)]
    y = sparse.concat([p for p, _ in parts], axis)
    assert y.is_sparse_csr()
    np.testing.assert_array_equal(dense_of(y), np.concatenate([d for _, d in parts], axis))


def test_concat_index_dtypes():
    a = coo((3, 4), index_dtype=np.int32)[0]
    b = coo((2, 4), index_dtype=np.int32, seed=1)[0]
    assert sparse.concat([a, b]).indices().dtype == np.int32
    c = coo((2, 4), index_dtype=np.int64, seed=1)[0]
    assert sparse.concat([a, c]).indices().dtype == np.int64
    big = sparse.sparse_coo_tensor(np.array([[2**30 - 1], [0]], np.int32), [1.0], [2**30, 4])
    y = sparse.concat([big, big], 0)
    assert y.shape == [2**31, 4] and y.indices().dtype == np.int64
    assert y.indices().numpy()[0].tolist() == [2**30 - 1, 2**31 - 1]
    ca, cb = csr((3, 4), index_dtype=np.int32)[0], csr((3, 4), index_dtype=np.int32, seed=1)[0]
    assert sparse.concat([ca, cb], 1).cols().dtype == np.int32


def test_concat_and_stack_errors():
    a, b = coo((3, 4))[0], coo((3, 5))[0]
    with pytest.raises(ValueError, match="^concat: xs\\[1\\] has shape \\[3, 5\\]"):
        sparse.concat([a, b], 0)
    with pytest.raises(ValueError, match="^concat: .*rank"):
        sparse.concat([a, coo((3,))[0]], 0)
    with pytest.raises(TypeError, match="^concat: .*mixes layouts"):
        sparse.concat([a, a.to_sparse_csr()], 0)
    with pytest.raises(TypeError, match="^stack: .*mixes layouts"):
        sparse.stack([a, a.to_sparse_csr()], 0)
    with pytest.raises(ValueError, match="^stack: xs\\[1\\] has shape"):
        sparse.stack([a, b], 0)
    with pytest.raises(ValueError, match="^stack: .*3-D"):
        sparse.stack([csr((2, 3, 4))[0]] * 2, 0)
    with pytest.raises(ValueError, match="^stack: axis 3 is out of range"):
        sparse.stack([a, a], 3)
    with pytest.raises(ValueError, match="^concat: .*at least one"):
        sparse.concat([], 0)


@pytest.mark.parametrize("axis", [0, 1, 2, 3, -1])
def test_coo_stack_matches_numpy(axis):
    parts = [coo((3, 4, 2), 2, seed=k) for k in range(3)]
    y = sparse.stack([p for p, _ in parts], axis)
    np.testing.assert_array_equal(dense_of(y), np.stack([d for _, d in parts], axis))
    if axis == 0:
        assert y.sparse_dim() == 3 and y.dense_dim() == 1


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_csr_stack_gives_3d_csr(axis):
    parts = [csr((3, 4), seed=k) for k in range(3)]
    y = sparse.stack([p for p, _ in parts], axis)
    assert y.is_sparse_csr() and len(y.shape) == 3
    np.testing.assert_array_equal(dense_of(y), np.stack([d for _, d in parts], axis))


# ---------------------------------------------------------------- zero-size inputs
#: (layout, shape, sparse_dim, nnz): no entries, or a dense dim of size 0.
EMPTY = [("coo", (0, 3), 2, 0), ("coo", (2, 0), 1, 2), ("coo", (2, 3), 2, 0),
         ("coo", (2, 3), 1, 0), ("coo", (0, 3, 4), 3, 0), ("csr", (0, 3), 2, 0),
         ("csr", (2, 0), 2, 0), ("csr", (2, 3), 2, 0), ("csr", (0, 3, 4), 3, 0),
         ("csr", (2, 0, 4), 3, 0), ("csr", (2, 3, 0), 3, 0), ("csr", (2, 3, 4), 3, 0)]


def build(layout, shape, sparse_dim=None, nnz=0, index_dtype=np.int64, seed=0, grad=False):
    """A COO (``nnz`` entries) or CSR (``nnz`` 0: none; else random) tensor, a leaf
    receiving a gradient when ``grad``, and its dense form."""
    if layout == "coo":
        x, d = coo(shape, sparse_dim, nnz=nnz, index_dtype=index_dtype, seed=seed)
    else:
        x, d = csr(shape, density=0.5 if nnz else 0.0, index_dtype=index_dtype, seed=seed)
    if grad:
        v = x.values().numpy()
        x = sparse.sparse_coo_tensor(x.indices(), v, x.shape, stop_gradient=False) \
            if layout == "coo" else \
            sparse.sparse_csr_tensor(x.crows(), x.cols(), v, x.shape, stop_gradient=False)
    return x, d


def index_dtypes(t):
    bufs = [t.indices()] if t.is_sparse_coo() else [t.crows(), t.cols()]
    return [b.numpy().dtype for b in bufs]


def structure_cases(x, d):
    """(op on a tensor like x, numpy reference) for every structure op x takes."""
    n = len(x.shape)
    cases = [(lambda t, p=p: sparse.transpose(t, list(p)), np.transpose(d, p))
             for p in itertools.permutations(range(n))]
    for ax in range(n):
        cases.append((lambda t, ax=ax: sparse.slice(t, [ax], [0], [1]),
                      d[(np.s_[:],) * ax + (np.s_[0:1],)]))
        for index in ([], [0, 0])[:1 + (x.shape[ax] > 0)]:
            cases.append((lambda t, ax=ax, i=index: sparse.index_select(
                t, np.array(i, np.int64), ax), np.take(d, np.array(index, np.int64), ax)))
        cases.append((lambda t, ax=ax: sparse.concat([t, t], ax), np.concatenate([d, d], ax)))
    for ax in range(n + 1) if x.is_sparse_coo() or n == 2 else ():
        cases.append((lambda t, ax=ax: sparse.stack([t, t], ax), np.stack([d, d], ax)))
    return cases


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("case", EMPTY, ids=str)
def test_structure_ops_on_zero_size_inputs_match_numpy(case, index_dtype):
    layout, shape, sd, nnz = case
    x, d = build(layout, shape, sd, nnz, index_dtype)
    for op, ref in structure_cases(x, d):
        y = op(x)
        assert y.is_sparse_coo() == x.is_sparse_coo()
        assert index_dtypes(y)[-1] == np.dtype(index_dtype)
        np.testing.assert_array_equal(dense_of(y), ref)
        leaf, _ = build(layout, shape, sd, nnz, index_dtype, grad=True)
        op(leaf).backward()
        assert leaf.grad.values().shape == leaf.values().shape
        assert index_dtypes(leaf.grad) == index_dtypes(leaf)


@pytest.mark.parametrize("layout, shapes", [
    ("csr", [(0, 3, 4), (2, 3, 4), (0, 3, 4)]), ("csr", [(2, 0, 4), (2, 3, 4), (2, 0, 4)]),
    ("csr", [(2, 3, 0), (2, 3, 4), (2, 3, 0)]), ("csr", [(0, 4), (3, 4), (0, 4)]),
    ("csr", [(3, 0), (3, 4), (3, 0)]), ("coo", [(0, 3, 4), (2, 3, 4), (0, 3, 4)]),
    ("coo", [(2, 3, 0), (2, 3, 4), (2, 3, 0)])])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_concat_of_empty_and_non_empty_tensors(layout, shapes, index_dtype):
    axis = [a for a in range(len(shapes[0])) if shapes[0][a] == 0][0]
    parts = [build(layout, s, nnz=0 if 0 in s else 9, index_dtype=index_dtype, seed=k,
                   grad=True) for k, s in enumerate(shapes)]
    y = sparse.concat([p for p, _ in parts], axis)
    assert y.is_sparse_coo() == (layout == "coo") and y.shape == list(shapes[1])
    assert index_dtypes(y)[-1] == np.dtype(index_dtype)
    np.testing.assert_array_equal(dense_of(y), parts[1][1])
    w = np.random.default_rng(1).standard_normal(y.shape)
    y.backward(dense.to_tensor(w))
    x = parts[1][0]
    coords = x.indices().numpy() if layout == "coo" else x.to_sparse_coo(3 if len(shapes[0]) == 3
                                                                        else 2).indices().numpy()
    np.testing.assert_array_equal(x.grad.values().numpy(), w[tuple(coords)])
    assert parts[0][0].grad.values().shape == [0]


# ---------------------------------------------------------------- infer_meta
def test_infer_meta_without_data():
    m = MetaTensor((3, 4, 5), np.float32, "sparse_coo", sparse_dim=1)
    t = sparse.transpose.infer_meta(m, [0, 2, 1])
    assert t.shape == (3, 5, 4) and t.sparse_dim == 1
    assert sparse.transpose.infer_meta(m, [1, 0, 2]).sparse_dim == 3
    assert sparse.slice.infer_meta(m, [0, 2], [-2, 1], [9, 3]).shape == (2, 4, 2)
    idx = MetaTensor((7,), np.int32)
    assert sparse.index_select.infer_meta(m, idx, -1).shape == (3, 4, 7)
    c = sparse.concat.infer_meta([m, m.with_(shape=(3, 4, 1))], axis=2)
    assert c.shape == (3, 4, 6) and c.sparse_dim == 3
    s = sparse.stack.infer_meta([m, m], axis=0)
    assert s.shape == (2, 3, 4, 5) and s.sparse_dim == 2
    r = MetaTensor((3, 4), np.float64, "sparse_csr")
    assert sparse.stack.infer_meta([r, r, r], axis=1).shape == (3, 3, 4)


def test_dense_inputs_raise_type_error():
    d = dense.to_tensor(np.ones((2, 3)))
    for call in (lambda: sparse.transpose(d, [1, 0]), lambda: sparse.slice(d, [0], [0], [1]),
                 lambda: sparse.index_select(d, np.array([0]), 0),
                 lambda: sparse.concat([d, d], 0), lambda: sparse.stack([d, d], 0)):
        with pytest.raises(TypeError, match=r"no kernel for input layouts \[('dense', )*'dense'\]; "
                           r"argument '(x|xs)' is a dense tensor and must be sparse_coo or "
                           r"sparse_csr; convert it with to_sparse_coo\(\) or to_sparse_csr"):
            call()


@pytest.mark.parametrize("dtype", [np.float64, np.float16, np.complex64, np.bool_])
def test_index_select_rows_through_scipy_row_gather(dtype):
    """Above SCIPY_MIN_NNZ the CPU row gather is scipy's: same result as numpy's path."""
    from kernels.sparse.select import SCIPY_MIN_NNZ
    m = sp.random_array((400, 300), density=0.7, format="csr", random_state=8)
    assert m.nnz >= SCIPY_MIN_NNZ
    x = sparse.sparse_csr_tensor(m.indptr, m.indices, m.data.astype(dtype), [400, 300])
    idx = np.array([399, 0, 5, 5, 200, 17])
    y = sparse.index_select(x, idx, 0)
    ref = m[idx]
    assert y.values().dtype == dtype
    np.testing.assert_array_equal(y.crows().numpy(), ref.indptr)
    np.testing.assert_array_equal(y.cols().numpy(), ref.indices)
    np.testing.assert_array_equal(y.values().numpy(), ref.data.astype(dtype))
    d = m.toarray().astype(dtype)
    b = dense.to_tensor(np.stack([d[:200], d[200:]])).to_sparse_csr()
    np.testing.assert_array_equal(dense_of(sparse.index_select(b, np.array([199, 3, 3]), 1)),
                                  np.stack([d[:200], d[200:]])[:, [199, 3, 3]])


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_index_select_rows_on_threads_match_scipy_and_one_thread(index_dtype, dtype,
                                                                 monkeypatch):
    """The row gather cut into many blocks on threads gives scipy's result, bit for bit."""
    from kernels.funcs import threads
    from kernels.sparse import select
    m = sp.random_array((300, 200), density=0.5, format="csr", random_state=9)
    x = sparse.sparse_csr_tensor(m.indptr.astype(index_dtype), m.indices.astype(index_dtype),
                                 m.data.astype(dtype), [300, 200])
    idx = np.random.default_rng(3).integers(0, 300, 500).astype(index_dtype)
    monkeypatch.setattr(select, "SCIPY_MIN_NNZ", 0)
    one = sparse.index_select(x, idx, 0)
    monkeypatch.setattr(threads, "MIN_BYTES_PER_THREAD", 1)
    monkeypatch.setattr(threads, "MIN_BYTES_PER_PIECE", 1)
    monkeypatch.setattr(threads, "_num_threads", 4)
    cum = np.concatenate([[0], np.cumsum(np.diff(m.indptr)[idx])])
    assert len(threads.balanced_cuts(cum, 1 << 20)) == 17
    many = sparse.index_select(x, idx, 0)
    ref = m[idx]
    for y in (one, many):
        assert y.cols().dtype == index_dtype and y.values().dtype == dtype
        np.testing.assert_array_equal(y.crows().numpy(), ref.indptr)
        np.testing.assert_array_equal(y.cols().numpy(), ref.indices)
        np.testing.assert_array_equal(y.values().numpy(), ref.data.astype(dtype))
    b = sparse.stack([x, x], 0)
    np.testing.assert_array_equal(dense_of(sparse.index_select(b, idx[:7], 1)),
                                  np.stack([m.toarray()] * 2).astype(dtype)[:, idx[:7]])


@pytest.mark.parametrize("axis", [0, 1])
def test_csr_concat_copied_on_threads_matches_scipy_and_one_thread(axis, monkeypatch):
    """The joins cut into pieces on threads give scipy's vstack/hstack, bit for bit."""
    from kernels.funcs import threads
    ms = [sp.random_array((30, 40), density=0.3, format="csr", random_state=k, dtype=np.float32)
          for k in range(4)]
    xs = [sparse.sparse_csr_tensor(m.indptr.astype(np.int32), m.indices.astype(np.int32),
                                   m.data, [30, 40]) for m in ms]
    xs[2] = sparse.sparse_csr_tensor(ms[2].indptr.astype(np.int64),   # the join promotes
                                     ms[2].indices.astype(np.int64), ms[2].data, [30, 40])
    one = sparse.concat(xs, axis)
    monkeypatch.setattr(threads, "MIN_BYTES_PER_THREAD", 1)
    monkeypatch.setattr(threads, "MIN_BYTES_PER_PIECE", 1)
    monkeypatch.setattr(threads, "_num_threads", 4)
    assert len(threads.split_index((100,), 800, candidates=[0])) == 16
    many = sparse.concat(xs, axis)
    ref = (sp.vstack if axis == 0 else sp.hstack)(ms, format="csr")
    for y in (one, many):
        assert y.cols().dtype == np.int64 and y.values().dtype == np.float32
        np.testing.assert_array_equal(y.crows().numpy(), ref.indptr)
        np.testing.assert_array_equal(y.cols().numpy(), ref.indices)
        np.testing.assert_array_equal(y.values().numpy(), ref.data)


def test_csr_concat_shifts_int32_cols_in_the_wider_output_dtype():
    n = 2**31 - 8
    x = sparse.sparse_csr_tensor(np.array([0, 1], np.int32), np.array([n - 1], np.int32),
                                 [2.0], [1, n])
    y = sparse.concat([x, x], 1)
    assert y.cols().dtype == np.int64 and y.cols().numpy().tolist() == [n - 1, 2 * n - 1]


def test_csr_reshape_keeping_the_columns_of_rows_in_any_order():
    """A C-order CSR reshape that keeps the last dim keeps the rows in order whatever the
    order of the columns inside a row (no look at the data, see _rows_stay_in_order):
    a batched CSR with descending columns in each row, against numpy."""
    crows = np.array([0, 3, 3, 5, 6, 0, 2, 2, 2, 4])
    cols = np.array([5, 2, 0, 4, 1, 3, 5, 0, 3, 2])
    values = np.arange(1.0, 11.0)
    x = sparse.sparse_csr_tensor(crows, cols, values, [2, 4, 6])
    want = x.to_dense().numpy().reshape(4, 2, 6)
    out = sparse.reshape(x, [4, 2, 6])
    np.testing.assert_array_equal(out.to_dense().numpy(), want)
    np.testing.assert_array_equal(out.values().numpy(), values)    # no entry moved


def test_csr_transpose_to_a_long_dim_peaks_near_its_row_pointers():
    """A [1, 2**28] CSR transposed once peaked at 3x its 1 GiB output row pointers (an
    int64 copy of the int32 key bounds, then an int32 copy back), which took a 2**31
    dim past this machine's memory: the bounds now stay in the walk's dtype."""
    code = ("import numpy as np, resource, sparse\n"
            "c = sparse.sparse_csr_tensor(np.array([0, 1], np.int32), np.array([0], np.int32),"
            " [1.0], [1, 2**28])\n"
            "t = sparse.transpose(c, [1, 0])\n"
            "assert t.shape == [2**28, 1] and t.crows().dtype == np.int32\n"
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert int(out.stdout) < 1.6 * 4 * 2**28
