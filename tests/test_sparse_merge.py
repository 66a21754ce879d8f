"""Same-shape sparse arithmetic through scipy's compiled merge (kernels/sparse/merge.py).

Each case runs twice, once through the merge and once with it turned off
(the sort-based merge of kernels/sparse/binary.py), and both are compared
with numpy on the dense forms; gradients are checked by finite differences.
"""
import numpy as np
import pytest

import dense
import sparse
from kernels.core import owned
from kernels.funcs import threads
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


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_values_computed_in_the_walk_are_numpys_in_the_values_dtype(dtype, layout):
    rng = np.random.default_rng(7)
    x, y = pair(rng, layout, (30, 40), 2, nnz=(300, 250))
    x, y = (_rebuild(t, t.values().numpy().astype(dtype) * 1e3 / 7) for t in (x, y))
    both = x - x                                    # every sum cancels: all stay stored
    assert both.nnz() == x.nnz() and not both.values().numpy().any()
    y = _rebuild(y, np.where(y.values().numpy() == 0, dtype(3), y.values().numpy()))
    x = _rebuild(x, np.where(x.values().numpy() == 0, dtype(-2), x.values().numpy()))
    assert merge.products_nonzero(x.values().numpy(), y.values().numpy())
    for op in ("add", "subtract", "multiply"):
        out = getattr(sparse, op)(x, y)
        assert out.values().numpy().dtype == dtype
        want = OPS[op](x.to_dense().numpy(), y.to_dense().numpy())
        np.testing.assert_array_equal(out.to_dense().numpy(), want)


def test_products_that_could_vanish_take_the_flag_walk():
    x = sparse.sparse_coo_tensor([[0, 1], [0, 1]], np.float32([1e-30, 2.0]), [2, 2])
    y = sparse.sparse_coo_tensor([[0, 1], [0, 1]], np.float32([1e-30, 0.0]), [2, 2])
    assert not merge.products_nonzero(x.values().numpy(), y.values().numpy())
    out = x * y                           # 1e-30 * 1e-30 underflows to 0 in float32: stored
    assert out.indices().numpy().tolist() == [[0, 1], [0, 1]]
    assert out.values().numpy().tolist() == [0.0, 0.0]


@pytest.mark.parametrize("layout", ["coo", "csr"])
@pytest.mark.parametrize("inside", [False, True])
def test_a_product_walk_that_may_lose_a_zero_is_counted(layout, inside, monkeypatch):
    """Stored zeros fail products_nonzero; the product walk still serves unless a zero
    lies in the intersection (then the walk on int8 ones counts more entries, and the
    flags walk runs)."""
    rng = np.random.default_rng(12)
    x, y = pair(rng, layout, (30, 40), 2, nnz=(300, 250))
    stored = [_rebuild(t, np.ones(t.nnz())).to_dense().numpy() != 0 for t in (x, y)]
    vx = np.where(x.values().numpy() == 0, 1.5, x.values().numpy())
    vy = np.where(y.values().numpy() == 0, -0.5, y.values().numpy())
    both = stored[0] & stored[1]
    coo_x = x.to_sparse_coo(2) if layout == "csr" else x
    at_x = [tuple(c) for c in coo_x.indices().numpy().T]
    ins = [i for i, c in enumerate(at_x) if both[c]]
    outs = [i for i, c in enumerate(at_x) if not both[c]]
    vx[(ins if inside else outs)[0]] = 0.0
    x, y = _rebuild(x, vx), _rebuild(y, vy)
    assert not merge.products_nonzero(x.values().numpy(), y.values().numpy())
    flag_walks = []
    real = merge._flags
    monkeypatch.setattr(merge, "_flags", lambda *a: flag_walks.append(a) or real(*a))
    monkeypatch.setattr(threads, "_num_threads", 4)
    out = x * y
    assert bool(flag_walks) == inside
    dx, dy = x.to_dense().numpy(), y.to_dense().numpy()
    np.testing.assert_array_equal(out.to_dense().numpy(), dx * dy)
    assert out.nnz() == np.count_nonzero(both)              # the zero product stays stored


@pytest.mark.parametrize("layout", ["coo", "csr"])
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_same_sign_sums_walk_on_the_values_and_keep_the_union(layout, sign):
    rng = np.random.default_rng(11)
    x, y = pair(rng, layout, (30, 40), 2, nnz=(300, 250))
    x, y = (_rebuild(t, sign * (np.abs(t.values().numpy()) + 0.5)) for t in (x, y))
    assert merge.sums_nonzero(x.values().numpy(), y.values().numpy())
    out = x + y
    dx, dy = x.to_dense().numpy(), y.to_dense().numpy()
    np.testing.assert_array_equal(out.to_dense().numpy(), dx + dy)
    assert out.nnz() == np.count_nonzero((dx != 0) | (dy != 0))     # the whole union
    mixed = _rebuild(y, -y.values().numpy())
    assert not merge.sums_nonzero(x.values().numpy(), mixed.values().numpy())


def test_a_stored_zero_makes_only_its_own_block_mark_its_sums(monkeypatch):
    """Positive values with one stored zero: that block walks its values with the zero
    marked (NaN) and keeps it (scipy's walk would drop it), the others walk the plain
    values, and no block is tagged."""
    rng = np.random.default_rng(6)
    x, y = pair(rng, "csr", (400, 300), 2, nnz=(20000, 15000))
    vx, vy = np.abs(x.values().numpy()) + 0.25, np.abs(y.values().numpy()) + 0.25
    vx[123] = 0.0
    x, y = _rebuild(x, vx), _rebuild(y, vy)
    monkeypatch.setattr(threads, "MIN_BYTES_PER_THREAD", 1)
    monkeypatch.setattr(threads, "MIN_BYTES_PER_PIECE", 1)
    monkeypatch.setattr(threads, "_num_threads", 4)
    assert len(merge._cuts(x._d.crows, y._d.crows)) > 3
    tagged, marked = [], []
    real, real_marked = merge._tagged, merge._marked
    monkeypatch.setattr(merge, "_tagged", lambda av, bv: (lambda *a: tagged.append(a)
                                                          or real(av, bv)(*a)))
    monkeypatch.setattr(merge, "_marked", lambda a, b, z: marked.append(z)
                        or real_marked(a, b, z))
    out = x + y
    assert not tagged and len(marked) == 1
    assert [z.shape[0] for z in marked[0]] == [1, 0]
    stored = [_rebuild(t, np.ones(t.nnz())).to_dense().numpy() != 0 for t in (x, y)]
    assert out.nnz() == np.count_nonzero(stored[0] | stored[1])        # the zero is kept
    np.testing.assert_array_equal(out.to_dense().numpy(),
                                  x.to_dense().numpy() + y.to_dense().numpy())


def test_on_one_thread_a_product_that_may_vanish_is_counted_only_in_its_own_block(
        monkeypatch):
    """One thread walks one block, unless a product may be zero: then FINE_BLOCKS blocks,
    and only the block holding the stored zero takes the counting walk."""
    rng = np.random.default_rng(8)
    x, y = pair(rng, "csr", (400, 300), 2, nnz=(20000, 15000))
    vx, vy = np.abs(x.values().numpy()) + 0.25, np.abs(y.values().numpy()) + 0.25
    monkeypatch.setattr(threads, "MIN_BYTES_PER_PIECE", 1)
    monkeypatch.setattr(threads, "_num_threads", 1)
    assert len(merge._cuts(x._d.crows, y._d.crows)) == 2
    assert len(merge._cuts(x._d.crows, y._d.crows, fine=True)) == merge.FINE_BLOCKS + 1
    vx[123] = 0.0
    x, y = _rebuild(x, vx), _rebuild(y, vy)
    counted = []
    real = merge._dropped
    monkeypatch.setattr(merge, "_dropped", lambda *a: counted.append(a[5:7]) or real(*a))
    out = x * y
    assert len(counted) == 1 and x._d.crows[counted[0][0]] <= 123 < x._d.crows[counted[0][1]]
    dx, dy = x.to_dense().numpy(), y.to_dense().numpy()
    np.testing.assert_array_equal(out.to_dense().numpy(), dx * dy)
    stored = [_rebuild(t, np.ones(t.nnz())).to_dense().numpy() != 0 for t in (x, y)]
    assert out.nnz() == np.count_nonzero(stored[0] & stored[1])


@pytest.mark.parametrize("layout", ["coo", "csr"])
@pytest.mark.parametrize("y_cols", [[], [2], [1, 2]])
def test_an_infinite_value_outside_the_intersection_is_not_stored(layout, y_cols):
    """scipy's walk pairs an entry of one operand only with 0 and keeps inf * 0 = NaN;
    a non-finite value takes the flags walk, so the product is the intersection's, as
    the sort-based merge gives (the NaN of x at column 0 stays out too)."""
    x = sparse.sparse_coo_tensor([[0, 0, 0], [0, 1, 2]], [np.nan, np.inf, 1.0], [2, 3])
    y = sparse.sparse_coo_tensor([[0] * len(y_cols), y_cols], np.ones(len(y_cols)), [2, 3])
    x, y = x.coalesce(), y.coalesce()
    if layout == "csr":
        x, y = x.to_sparse_csr(), y.to_sparse_csr()
    for out in (x * y, y * x):
        want = [[0.0, np.inf if 1 in y_cols else 0.0, 1.0 if 2 in y_cols else 0.0], [0, 0, 0]]
        np.testing.assert_array_equal(out.to_dense().numpy(), want)
        assert out.nnz() == len(y_cols)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_one_block_tagged_sum_keeps_its_zero_and_holds_no_complex_buffer(dtype, monkeypatch):
    """On one thread the whole sum is one block: a stored zero tags it, the result keeps
    the zero, its values are real, and its columns own a buffer of their own (they had
    shared one with the complex walk values, twice a float64 result's size).  The
    operands' signs are remembered per tensor, and a second call gives the same."""
    rng = np.random.default_rng(8)
    x, y = pair(rng, "csr", (60, 50), 2, nnz=(900, 700))
    vx, vy = np.abs(x.values().numpy()) + 0.25, np.abs(y.values().numpy()) + 0.25
    vx[17] = 0.0
    x, y = _rebuild(x, vx.astype(dtype)), _rebuild(y, vy.astype(dtype))
    monkeypatch.setattr(threads, "_num_threads", 1)
    want = x.to_dense().numpy() + y.to_dense().numpy()
    stored = [_rebuild(t, np.ones(t.nnz())).to_dense().numpy() != 0 for t in (x, y)]
    for _ in range(2):
        out = x + y
        np.testing.assert_array_equal(out.to_dense().numpy(), want)
        assert out.nnz() == np.count_nonzero(stored[0] | stored[1])
        assert out.values().dtype == dtype
        cols = out._d.cols
        owner = cols.base if cols.base is not None else cols
        assert owner.nbytes <= cols.nbytes * 1.5, (owner.nbytes, cols.nbytes)
    assert merge.signs(x._d.values) == (False, False)      # the zero: neither sign
    assert merge.signs(y._d.values) == (True, False)


@pytest.mark.parametrize("layout", ["coo", "csr"])
@pytest.mark.parametrize("sign", [1.0, -1.0])
@pytest.mark.parametrize("blocks", [1, 4])
def test_a_sum_of_one_signed_values_with_a_few_zeros_keeps_every_entry(layout, sign, blocks,
                                                                         monkeypatch):
    """One-signed values with a few stored zeros (±0.0) walk with the zeros marked NaN
    instead of tagging the whole block: every union entry stays stored, the sums are
    numpy's, and a zero's sum is its IEEE sum with the other operand's value (or +0.0
    alone, as the tagged walk gives); past FEW_ZEROS, or with a NaN, the tags serve."""
    if blocks > 1:
        monkeypatch.setattr(threads, "MIN_BYTES_PER_THREAD", 1)
        monkeypatch.setattr(threads, "MIN_BYTES_PER_PIECE", 1)
        monkeypatch.setattr(threads, "_num_threads", blocks)
    marked = []
    monkeypatch.setattr(merge, "_marked", lambda *a, real=merge._marked: marked.append(1)
                        or real(*a))
    rng = np.random.default_rng(7)
    for trial in range(20):
        shape, n = (30, 40), 300
        keys = [np.sort(rng.choice(1200, n, replace=False)) for _ in range(2)]
        vals = [sign * rng.random(n) for _ in range(2)]
        for v in vals:                                   # zeros, some negative
            at = rng.choice(n, int(rng.integers(1, 6)), replace=False)
            v[at] = rng.choice([0.0, -0.0], at.shape[0])
        if trial % 5 == 4:
            vals[0][: merge.FEW_ZEROS + 1] = 0.0          # too many: tagged
        ops = [sparse.sparse_coo_tensor(np.stack([k // 40, k % 40]), v, list(shape)).coalesce()
               for k, v in zip(keys, vals)]
        if layout == "csr":
            ops = [o.to_sparse_csr() for o in ops]
        out = ops[0] + ops[1]
        at = [np.full(1200, np.nan) for _ in range(2)]
        for a, k, v in zip(at, keys, vals):
            a[k] = v
        has = [~np.isnan(a) for a in at]                # IEEE: a + b, or one value + 0.0
        want = np.where(has[0] & has[1], at[0] + at[1],
                        np.where(has[0], at[0], at[1]) + 0.0)
        want[~(has[0] | has[1])] = 0.0
        union = np.union1d(*keys)
        assert out.nnz() == union.shape[0]
        got = out.to_dense().numpy().ravel()
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got[union]), np.signbit(want[union]))
    assert marked                                       # the few-zeros walk ran


def test_the_few_zeros_walk_with_infinities_and_negative_zeros(monkeypatch):
    """One-signed values may hold infinities of their sign (inf + x is never NaN): the
    zeros are marked all the same; -0.0 + -0.0 stays -0.0 and -0.0 alone becomes +0.0,
    as the tagged walk gives (-0.0 + 0.0)."""
    marked = []
    monkeypatch.setattr(merge, "_marked", lambda *a, real=merge._marked: marked.append(1)
                        or real(*a))
    x = sparse.sparse_coo_tensor(np.array([[0, 0, 1, 1], [0, 2, 1, 2]]),
                                 np.array([-0.0, -np.inf, -0.0, -0.0]), [2, 3])
    y = sparse.sparse_coo_tensor(np.array([[0, 1, 1], [2, 1, 2]]), np.array([-5.0, -2.0, -0.0]),
                                 [2, 3])
    z = x + y
    got = z.to_dense().numpy()
    want = np.array([[0.0, 0.0, -np.inf], [0.0, -2.0, -0.0]])
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    assert z.nnz() == 4 and marked
