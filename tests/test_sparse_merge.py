"""Same-shape sparse arithmetic through the compiled merge (kernels/sparse/merge.py).

Each case runs twice, once through the merge and once with it turned off
(the sort-based merge of kernels/sparse/binary.py), and both are compared
with numpy on the dense forms; gradients are checked by finite differences.
"""
import numpy as np
import pytest

import dense
import sparse
from kernels.core import owned
from kernels.funcs import jit, threads
from kernels.sparse import binary, merge

OPS = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide}


def random_coo(rng, shape, nnz, sparse_dim, zeros=True, idt=np.int64):
    """A coalesced COO tensor with ``nnz`` distinct coordinates, some values exactly 0."""
    sshape = shape[:sparse_dim]
    flat = rng.choice(int(np.prod(sshape)), size=nnz, replace=False)
    idx = np.stack(np.unravel_index(np.sort(flat), sshape)).astype(idt)
    values = rng.standard_normal((nnz,) + tuple(shape[sparse_dim:]))
    if zeros and nnz:
        values[rng.random(nnz) < 0.2] = 0.0
    return sparse.sparse_coo_tensor(idx, values, shape).coalesce()


def pair(rng, layout, shape, sparse_dim, nnz=(13, 9), idt=(np.int64, np.int64)):
    x = random_coo(rng, shape, nnz[0], sparse_dim, idt=idt[0])
    y = random_coo(rng, shape, nnz[1], sparse_dim, idt=idt[1])
    if layout == "csr":
        x, y = x.to_sparse_csr(), y.to_sparse_csr()
    return x, y


CASES = [("coo", (6, 7), 2), ("coo", (4, 5, 3), 3), ("coo", (5, 6, 2), 2), ("coo", (19,), 1),
         ("csr", (6, 7), 2), ("csr", (3, 4, 5), 3)]


def pattern(t):
    c = t.to_sparse_coo(len(t.shape)) if t.is_sparse_csr() else t
    return c.indices().numpy().T.tolist()


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("layout,shape,sparse_dim", CASES)
def test_merge_matches_the_sort_path_and_numpy(op, layout, shape, sparse_dim, monkeypatch):
    rng = np.random.default_rng(abs(hash((op, layout, shape))) % 2**32)
    x, y = pair(rng, layout, shape, sparse_dim)
    assert binary.provenance(op, *(t._d for t in (x, y))) is not None
    fast = getattr(sparse, op)(x, y)
    monkeypatch.setattr(merge, "usable", lambda *a: False)
    slow = getattr(sparse, op)(x, y)
    assert pattern(fast) == pattern(slow) and fast.is_sparse_coo() == slow.is_sparse_coo()
    with np.errstate(all="ignore"):
        want = OPS[op](x.to_dense().numpy(), y.to_dense().numpy())
    np.testing.assert_array_equal(fast.to_dense().numpy(), slow.to_dense().numpy())
    at = tuple(np.array(pattern(fast), dtype=np.int64).reshape(-1, sparse_dim).T)
    got = fast.to_dense().numpy()
    np.testing.assert_allclose(got[at], want[at], rtol=1e-12)    # divide: numpy's value there
    if op != "divide":
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_explicit_zeros_and_cancellations_stay_stored():
    x = sparse.sparse_coo_tensor([[0, 0, 1], [0, 2, 1]], [0.0, 2.0, 3.0], [2, 3]).coalesce()
    y = sparse.sparse_coo_tensor([[0, 1], [2, 0]], [-2.0, 5.0], [2, 3]).coalesce()
    s = x + y
    assert s.indices().numpy().tolist() == [[0, 0, 1, 1], [0, 2, 0, 1]]
    assert s.values().numpy().tolist() == [0.0, 0.0, 5.0, 3.0]
    m = x * y
    assert m.indices().numpy().tolist() == [[0], [2]] and m.values().numpy().tolist() == [-4.0]


def test_mixed_index_dtypes_and_nnz0():
    rng = np.random.default_rng(3)
    x, y = pair(rng, "coo", (8, 9), 2, idt=(np.int32, np.int64))
    assert (x + y).indices().numpy().dtype == np.int64
    x32, y32 = pair(rng, "coo", (8, 9), 2, idt=(np.int32, np.int32))
    assert (x32 * y32).indices().numpy().dtype == np.int32
    e = sparse.sparse_coo_tensor(np.zeros((2, 0), np.int64), np.zeros(0), [8, 9]).coalesce()
    np.testing.assert_array_equal((x + e).to_dense().numpy(), x.to_dense().numpy())
    assert (x * e).nnz() == 0


def test_unsorted_csr_rows_take_the_sort_path():
    c = sparse.sparse_csr_tensor([0, 2, 3], [2, 0, 1], [1.0, 2.0, 3.0], [2, 3])
    d = sparse.sparse_csr_tensor([0, 1, 2], [0, 1], [4.0, 5.0], [2, 3])
    assert binary.provenance("add", c._d, d._d) is None
    np.testing.assert_array_equal((c + d).to_dense().numpy(),
                                  c.to_dense().numpy() + d.to_dense().numpy())


def test_a_csr_found_canonical_is_checked_once_and_only_while_its_buffers_live():
    c = sparse.sparse_csr_tensor([0, 2, 3], [0, 2, 1], [1.0, 2.0, 3.0], [2, 3])
    d = sparse.sparse_csr_tensor([0, 1, 2], [2, 1], [4.0, 5.0], [2, 3])
    u = sparse.sparse_csr_tensor([0, 2, 3], [2, 0, 1], [1.0, 2.0, 3.0], [2, 3])
    assert not merge.known_canonical(c._d.crows, c._d.cols)
    expected = c.to_dense().numpy() + d.to_dense().numpy()
    np.testing.assert_array_equal((c + d).to_dense().numpy(), expected)
    assert merge.known_canonical(c._d.crows, c._d.cols)
    assert merge.known_canonical(d._d.crows, d._d.cols)
    assert not merge.known_canonical(c._d.crows, d._d.cols)        # the pair, not each buffer
    np.testing.assert_array_equal((c + d).to_dense().numpy(), expected)   # the check skipped
    assert binary.provenance("add", u._d, d._d) is None               # never remembered
    assert not merge.known_canonical(u._d.crows, u._d.cols)
    writable = np.array([0, 1]), np.array([1])
    merge.remember_canonical(*writable)                             # could still change
    assert not merge.known_canonical(*writable)
    key = ("canonical", id(c._d.cols), id(c._d.crows))
    assert key in owned._FACTS
    del c
    assert key not in owned._FACTS


def test_a_coos_row_pointers_are_remembered_for_its_locked_index_matrix():
    rng = np.random.default_rng(4)
    dense_x = rng.standard_normal((6, 5)) * (rng.random((6, 5)) < 0.4)
    dense_y = rng.standard_normal((6, 5)) * (rng.random((6, 5)) < 0.4)
    x, y = (sparse.coalesce(dense.to_tensor(a).to_sparse_coo(2)) for a in (dense_x, dense_y))
    key = ("rows", (6,))
    assert owned.recall((x._d.indices,), key) is None
    np.testing.assert_array_equal((x + y).to_dense().numpy(), dense_x + dense_y)
    indptr = owned.recall((x._d.indices,), key)
    np.testing.assert_array_equal(indptr, np.r_[0, np.cumsum((dense_x != 0).sum(1))])
    assert not indptr.flags.writeable
    np.testing.assert_array_equal((x * y).to_dense().numpy(), dense_x * dense_y)  # reused
    z = sparse.coalesce(dense.to_tensor(dense_x[:, :4]).to_sparse_coo(2))
    assert owned.recall((z._d.indices,), key) is None               # another index matrix


def test_only_frozen_arrays_have_facts_remembered():
    base = np.arange(4)
    view = base[:2]
    view.setflags(write=False)                  # read-only, but base can still change it
    assert not owned.frozen(view) and not owned.frozen(base)
    assert owned.remember((view,), "fact", 1) == 1
    assert owned.recall((view,), "fact") is None
    locked = owned.lock(np.arange(4))
    assert owned.frozen(locked) and owned.frozen(locked[1:])
    owned.remember((locked,), "fact", 2)
    assert owned.recall((locked,), "fact") == 2
    assert owned.recall((locked[1:],), "fact") is None              # these very arrays only


def _forward_and_grads(op, x, y):
    leaves = [dense.to_tensor(t.values().numpy(), stop_gradient=False) for t in (x, y)]
    out = getattr(sparse, op)(*(_rebuild(t, v) for t, v in zip((x, y), leaves)))
    w = np.cos(np.arange(out.nnz()))
    dense.sum(out.values() * dense.to_tensor(w)).backward()
    return out.to_dense().numpy(), leaves[0].grad.numpy(), leaves[1].grad.numpy()


@pytest.mark.parametrize("op", ["add", "multiply", "divide"])
def test_many_blocks_on_threads_match_one_block(op, monkeypatch):
    rng = np.random.default_rng(5)
    x, y = pair(rng, "csr", (400, 300), 2, nnz=(20000, 15000))
    with np.errstate(all="ignore"):
        one = _forward_and_grads(op, x, y)
        monkeypatch.setattr(threads, "MIN_BYTES_PER_THREAD", 1)
        monkeypatch.setattr(threads, "MIN_BYTES_PER_PIECE", 1)
        monkeypatch.setattr(threads, "_num_threads", 4)
        assert len(merge._cuts(x._d.crows, y._d.crows)) > 3
        many = _forward_and_grads(op, x, y)
    for a, b in zip(one, many):
        np.testing.assert_array_equal(a, b)
    if op != "divide":
        np.testing.assert_allclose(one[0], OPS[op](x.to_dense().numpy(), y.to_dense().numpy()))


def _rebuild(t, values):
    """t's pattern with other values (a dense Tensor keeps them differentiable)."""
    if t.is_sparse_csr():
        return sparse.sparse_csr_tensor(t.crows(), t.cols(), values, t.shape)
    return sparse.sparse_coo_tensor(t.indices(), values, t.shape)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_gradients_by_finite_differences(op, layout):
    rng = np.random.default_rng(11)
    x, y = pair(rng, layout, (5, 6), 2, nnz=(12, 10))
    if op == "divide":          # y stores every coordinate of x, and no zero divisor
        y = _rebuild(x + y, np.abs((x + y).values().numpy()) + 1.0)
    fn = getattr(sparse, op)
    w = rng.standard_normal(fn(x, y).nnz())
    base = [x.values().numpy(), y.values().numpy()]

    def loss(a, b):
        out = fn(_rebuild(x, a), _rebuild(y, b))
        return dense.sum(out.values() * dense.to_tensor(w))

    assert binary.provenance(op, _rebuild(x, base[0])._d, _rebuild(y, base[1])._d)
    leaves = [dense.to_tensor(v, stop_gradient=False) for v in base]
    loss(*leaves).backward()
    for which, leaf in enumerate(leaves):
        fd = np.zeros_like(base[which])
        for i in range(fd.shape[0]):
            vals = [v.copy() for v in base], [v.copy() for v in base]
            vals[0][which][i] += 1e-6
            vals[1][which][i] -= 1e-6
            fd[i] = (float(loss(*vals[0]).numpy()) - float(loss(*vals[1]).numpy())) / 2e-6
        np.testing.assert_allclose(leaf.grad.numpy(), fd, rtol=1e-5, atol=1e-6)


VALUE_DTYPES = [np.float32, np.float64, np.complex64, np.int8, np.int32, np.uint8]


def _values_of(rng, dtype, n):
    """n values of ``dtype``, some zero; integers wide enough to wrap when summed or
    multiplied (numpy wraps them, and so must the walk)."""
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        v = rng.integers(info.min, int(info.max) + 1, n, dtype=np.int64).astype(dtype)
    else:
        v = (rng.standard_normal(n) * 1e3 / 7).astype(dtype)
        if np.dtype(dtype).kind == "c":
            v = v + 1j * rng.standard_normal(n).astype(dtype)
    v[rng.random(n) < 0.2] = 0
    return v


@pytest.mark.parametrize("dtype", VALUE_DTYPES)
@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_values_computed_in_the_walk_are_numpys_in_the_values_dtype(dtype, layout,
                                                                    monkeypatch):
    rng = np.random.default_rng(7)
    x, y = pair(rng, layout, (30, 40), 2, nnz=(300, 250))
    x, y = (_rebuild(t, _values_of(rng, dtype, t.nnz())) for t in (x, y))
    assert merge.computes("add", x._d.values, y._d.values)
    both = x - x                                    # every sum cancels: all stay stored
    assert both.nnz() == x.nnz() and not both.values().numpy().any()
    walks = []
    real = merge._computed
    monkeypatch.setattr(merge, "_computed", lambda *a: walks.append(1) or real(*a))
    for op in ("add", "subtract", "multiply"):
        out = getattr(sparse, op)(x, y)
        assert out.values().numpy().dtype == dtype
        with np.errstate(over="ignore"):
            want = OPS[op](x.to_dense().numpy(), y.to_dense().numpy())
        np.testing.assert_array_equal(out.to_dense().numpy(), want)
        stored = [_rebuild(t, np.ones(t.nnz())).to_dense().numpy() != 0 for t in (x, y)]
        keep = stored[0] & stored[1] if op == "multiply" else stored[0] | stored[1]
        assert out.nnz() == np.count_nonzero(keep)      # zero results stay stored
    assert len(walks) == (2 if np.dtype(dtype).kind == "c" else 3)    # see merge.computes


@pytest.mark.parametrize("dtype", [np.float16, np.bool_])
def test_dtypes_the_walk_does_not_compile_combine_from_its_positions(dtype):
    """float16 and bool values: the walk says where each operand's entries land and
    numpy combines them (merge.at), with numpy's result."""
    rng = np.random.default_rng(9)
    x, y = pair(rng, "csr", (20, 30), 2, nnz=(120, 100))
    x, y = (_rebuild(t, (t.values().numpy() * 4).astype(dtype)) for t in (x, y))
    assert not merge.computes("add", x._d.values, y._d.values)
    assert binary.provenance("add", x._d, y._d) is not None
    for op in ("add", "multiply"):
        out = getattr(sparse, op)(x, y)
        want = OPS[op](x.to_dense().numpy(), y.to_dense().numpy())
        assert out.values().numpy().dtype == want.dtype
        np.testing.assert_array_equal(out.to_dense().numpy(), want)


@pytest.mark.parametrize("blocks", [1, 4])
@pytest.mark.parametrize("op", ["add", "subtract"])
def test_the_signs_of_zero_sums_are_numpys(op, blocks, monkeypatch):
    """Every sum is IEEE's, as numpy adds the dense forms: an entry of one operand meets
    the other's implicit +0.0 (-0.0 + 0.0 is +0.0, -0.0 - 0.0 is -0.0, 0.0 - 0.0 is +0.0),
    and -0.0 + -0.0 stays -0.0; infinities and NaNs too."""
    if blocks > 1:
        monkeypatch.setattr(threads, "MIN_BYTES_PER_THREAD", 1)
        monkeypatch.setattr(threads, "MIN_BYTES_PER_PIECE", 1)
        monkeypatch.setattr(threads, "_num_threads", blocks)
    rng = np.random.default_rng(13)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.5, -1.5])
    for _ in range(10):
        keys = [np.sort(rng.choice(1200, 300, replace=False)) for _ in range(2)]
        vals = [rng.choice(special, 300) for _ in range(2)]
        ops = [sparse.sparse_coo_tensor(np.stack([k // 40, k % 40]), v, [30, 40]).coalesce()
               for k, v in zip(keys, vals)]
        out = getattr(sparse, op)(ops[0].to_sparse_csr(), ops[1].to_sparse_csr())
        with np.errstate(invalid="ignore"):
            want = OPS[op](*(o.to_dense().numpy() for o in ops)).ravel()
        union = np.union1d(*keys)
        assert out.nnz() == union.shape[0]
        got = out.to_dense().numpy().ravel()
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got[union]), np.signbit(want[union]))


def test_products_that_underflow_stay_stored():
    x = sparse.sparse_coo_tensor([[0, 1], [0, 1]], np.float32([1e-30, 2.0]), [2, 2])
    y = sparse.sparse_coo_tensor([[0, 1], [0, 1]], np.float32([1e-30, 0.0]), [2, 2])
    out = x * y                           # 1e-30 * 1e-30 underflows to 0 in float32: stored
    assert out.indices().numpy().tolist() == [[0, 1], [0, 1]]
    assert out.values().numpy().tolist() == [0.0, 0.0]


@pytest.mark.parametrize("bad_block", ["first", "last"])
def test_an_unsorted_row_in_any_block_refuses_the_walk(bad_block, monkeypatch):
    """A CSR operand with one unsorted row (in the first block or the last) is not
    merged by the walk (provenance None, nothing remembered); the sort path answers."""
    monkeypatch.setattr(threads, "MIN_BYTES_PER_THREAD", 1)
    monkeypatch.setattr(threads, "MIN_BYTES_PER_PIECE", 1)
    monkeypatch.setattr(threads, "_num_threads", 4)
    rng = np.random.default_rng(14)
    x, y = pair(rng, "csr", (400, 300), 2, nnz=(20000, 15000))
    cuts = merge._cuts(x._d.crows, y._d.crows)
    assert len(cuts) > 3
    crows, cols = x.crows().numpy(), x.cols().numpy().copy()
    lo, hi = cuts[:2] if bad_block == "first" else cuts[-2:]
    row = next(r for r in range(lo, hi)
               if crows[r + 1] - crows[r] > 1)
    cols[crows[row]], cols[crows[row] + 1] = cols[crows[row] + 1], cols[crows[row]]
    u = sparse.sparse_csr_tensor(crows, cols, x.values().numpy(), x.shape)
    assert binary.provenance("add", u._d, y._d) is None
    assert not merge.known_canonical(u._d.crows, u._d.cols)
    np.testing.assert_array_equal((u + y).to_dense().numpy(),
                                  u.to_dense().numpy() + y.to_dense().numpy())


def test_without_numba_the_sort_path_serves(monkeypatch):
    """An install where numba does not import: the merge is not usable, and the
    sort-based path gives the same result."""
    rng = np.random.default_rng(15)
    x, y = pair(rng, "csr", (30, 40), 2, nnz=(300, 250))
    with_walk = [(x + y).to_dense().numpy(), (x * y).to_dense().numpy()]
    monkeypatch.setattr(jit, "_FOUND", [False])
    assert not merge.usable(x.nnz(), y.nnz(), 30)
    assert binary.provenance("add", x._d, y._d) is None
    for got, want in zip(((x + y).to_dense().numpy(), (x * y).to_dense().numpy()), with_walk):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("layout", ["coo", "csr"])
@pytest.mark.parametrize("y_cols", [[], [2], [1, 2]])
def test_an_infinite_value_outside_the_intersection_is_not_stored(layout, y_cols):
    """A product is the intersection's: an entry of one operand only is never paired
    with 0 (scipy's walk would keep inf * 0 = NaN there), as in the sort-based merge."""
    x = sparse.sparse_coo_tensor([[0, 0, 0], [0, 1, 2]], [np.nan, np.inf, 1.0], [2, 3])
    y = sparse.sparse_coo_tensor([[0] * len(y_cols), y_cols], np.ones(len(y_cols)), [2, 3])
    x, y = x.coalesce(), y.coalesce()
    if layout == "csr":
        x, y = x.to_sparse_csr(), y.to_sparse_csr()
    for out in (x * y, y * x):
        want = [[0.0, np.inf if 1 in y_cols else 0.0, 1.0 if 2 in y_cols else 0.0], [0, 0, 0]]
        np.testing.assert_array_equal(out.to_dense().numpy(), want)
        assert out.nnz() == len(y_cols)
