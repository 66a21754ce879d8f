"""The sparse matmul family: matmul, mv, addmm, masked_matmul.

References are independent of the kernels: the dense form of every sparse
operand is built here with ``np.add.at`` from the buffers, the products are
numpy's, scipy's ``csr_array`` products for 2-D parity, and gradients are
central finite differences of ``L = Re(sum(conj(W) * out))`` (the PyTorch
convention for complex gradients): on the stored values of a sparse operand,
on the entries of a dense one.
"""
import numpy as np
import pytest
import scipy.sparse as sp

import dense
import sparse
from kernels.core.meta import MetaTensor
from opdb import numeric_vjp

RNG = np.random.default_rng(7)
LAYOUTS = ["coo", "csr"]


# ---------------------------------------------------------------- builders
def random_coo(shape, nnz, rng, dtype=np.float64, index_dtype=np.int64):
    """COO buffers: random coordinates (duplicates likely), values of ``dtype``."""
    nnz = 0 if 0 in shape else nnz
    coords = [rng.integers(0, s, nnz) for s in shape]
    indices = np.array(coords, dtype=index_dtype).reshape(len(shape), -1)
    values = rng.standard_normal(indices.shape[1])
    if np.dtype(dtype).kind == "c":
        values = values + 1j * rng.standard_normal(indices.shape[1])
    if np.dtype(dtype).kind in "iu":
        values = rng.integers(-4, 5, indices.shape[1])
    return indices, values.astype(dtype)


def dense_of(indices, values, shape):
    out = np.zeros(shape, values.dtype)
    np.add.at(out, tuple(indices), values)
    return out


def make(layout, shape, nnz, rng, dtype=np.float64, index_dtype=np.int64, grad=False):
    """A sparse tensor of ``layout`` and its dense reference (duplicates summed)."""
    indices, values = random_coo(shape, nnz, rng, dtype, index_dtype)
    ref = dense_of(indices, values, shape)
    x = sparse.sparse_coo_tensor(indices, values, list(shape), stop_gradient=not grad)
    if layout == "csr":
        x = sparse.sparse_coo_tensor(indices, values, list(shape)).to_sparse_csr()
        x = sparse.sparse_csr_tensor(x.crows(), x.cols(), x.values(), list(shape),
                                     stop_gradient=not grad)
    return x, ref


def dense_t(a, grad=False):
    return dense.to_tensor(a, stop_gradient=not grad)


def rand(shape, rng, dtype=np.float64):
    a = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal(shape)
    if np.dtype(dtype).kind in "iu":
        a = rng.integers(-4, 5, shape)
    return a.astype(dtype)


def as_dense(t):
    return t.numpy() if t.layout == "dense" else t.to_dense().numpy()


def tol(dtype):
    return dict(rtol=1e-5, atol=1e-5) if np.dtype(dtype) in (np.float32, np.complex64) \
        else dict(rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------- forward
SHAPES = [((5, 4), (4, 3)), ((3, 5, 4), (3, 4, 2)), ((1, 6), (6, 1)), ((4, 0), (0, 3)),
          ((2, 0, 3), (2, 3, 4))]
DTYPES = [np.float32, np.float64, np.complex64, np.complex128, np.int32, np.int64]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("xs,ys", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_sparse_at_dense_and_dense_at_sparse(layout, xs, ys, dtype):
    rng = np.random.default_rng(1)
    x, xr = make(layout, xs, 9, rng, dtype)
    y = rand(ys, rng, dtype)
    out = sparse.matmul(x, dense_t(y))
    assert out.layout == "dense" and out.dtype == np.dtype(dtype)
    np.testing.assert_allclose(out.numpy(), xr @ y, **tol(dtype))
    left = rand(xs[:-2] + (3, xs[-2]), rng, dtype)
    out = sparse.matmul(dense_t(left), x)
    np.testing.assert_allclose(out.numpy(), left @ xr, **tol(dtype))


@pytest.mark.parametrize("lx", LAYOUTS)
@pytest.mark.parametrize("ly", LAYOUTS)
@pytest.mark.parametrize("xs,ys", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_sparse_at_sparse_takes_x_layout(lx, ly, xs, ys, dtype):
    rng = np.random.default_rng(2)
    x, xr = make(lx, xs, 10, rng, dtype)
    y, yr = make(ly, ys, 8, rng, dtype)
    out = sparse.matmul(x, y)
    assert out.layout == x.layout and out.dtype == np.dtype(dtype) and out.shape == list(
        xr.shape[:-1] + yr.shape[-1:])
    np.testing.assert_allclose(as_dense(out), xr @ yr, **tol(dtype))
    if lx == "coo":
        assert out.sparse_dim() == len(xs)


def test_batches_with_different_nnz_including_an_empty_one():
    rng = np.random.default_rng(3)
    parts = [random_coo((4, 5), n, rng) for n in (0, 7, 2)]
    indices = np.concatenate([np.vstack([np.full((1, i.shape[1]), b), i])
                              for b, (i, _) in enumerate(parts)], axis=1)
    values = np.concatenate([v for _, v in parts])
    xr = dense_of(indices, values, (3, 4, 5))
    y = rand((3, 5, 2), rng)
    for x in (sparse.sparse_coo_tensor(indices, values, [3, 4, 5]),
              sparse.sparse_coo_tensor(indices, values, [3, 4, 5]).to_sparse_csr()):
        np.testing.assert_allclose(sparse.matmul(x, dense_t(y)).numpy(), xr @ y)
        z, zr = make(x.layout[7:], (3, 5, 4), 11, rng)
        np.testing.assert_allclose(as_dense(sparse.matmul(x, z)), xr @ zr)


def test_empty_rows_unsorted_columns_and_duplicates_in_csr():
    x = sparse.sparse_csr_tensor([0, 3, 3, 5], [4, 1, 4, 0, 0], [1.0, 2.0, 3.0, 4.0, 5.0],
                                 [3, 5])
    xr = np.zeros((3, 5))
    xr[0, 4], xr[0, 1], xr[2, 0] = 4.0, 2.0, 9.0
    y = rand((5, 3), RNG)
    np.testing.assert_allclose(sparse.matmul(x, dense_t(y)).numpy(), xr @ y)
    np.testing.assert_allclose(as_dense(sparse.matmul(x, sparse.to_sparse_coo(
        dense_t(y), 2))), xr @ y)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_int32_indices_stay_int32_and_int64_wins(layout):
    rng = np.random.default_rng(4)
    x, xr = make(layout, (6, 5), 12, rng, index_dtype=np.int32)
    y, yr = make(layout, (5, 4), 9, rng, index_dtype=np.int32)
    z, zr = make(layout, (5, 4), 9, rng, index_dtype=np.int64)
    index = (lambda t: t.indices()) if layout == "coo" else (lambda t: t.crows())
    out = sparse.matmul(x, y)
    assert index(x).dtype == np.int32 and index(out).dtype == np.int32
    np.testing.assert_allclose(as_dense(out), xr @ yr)
    assert index(sparse.matmul(x, z)).dtype == np.int64


def test_mixed_dtypes_promote_and_integers_stay_exact():
    x = sparse.sparse_coo_tensor([[0, 1], [1, 0]], np.array([2**40, 3], np.int64), [2, 2])
    y = np.array([[1, 2], [2**20, 5]], np.int64)
    out = sparse.matmul(x, dense_t(y))
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out.numpy(), np.array([[0, 2**40], [3, 0]]) @ y)
    f = sparse.matmul(x.to_sparse_csr(), dense_t(y.astype(np.float32)))
    assert f.dtype == np.float64


def test_cancelling_products_stay_stored_unlike_scipy():
    x = sparse.sparse_csr_tensor([0, 2], [0, 1], [1.0, 1.0], [1, 2])
    y = sparse.sparse_csr_tensor([0, 1, 2], [0, 0], [1.0, -1.0], [2, 1])
    out = sparse.matmul(x, y)
    assert out.nnz() == 1 and out.values().numpy().tolist() == [0.0]
    assert (x.to_scipy() @ y.to_scipy()).nnz == 0
    x0 = sparse.sparse_coo_tensor([[0, 1], [1, 0]], [0.0, 5.0], [2, 2])   # a stored zero
    assert sparse.matmul(x0, x0).nnz() == 2


def test_stored_zeros_keep_the_structural_pattern_in_every_row():
    rng = np.random.default_rng(15)
    indices, values = random_coo((60, 40), 300, rng)
    values[rng.random(300) < 0.1] = 0.0            # stored zeros: their products cancel
    x = sparse.sparse_coo_tensor(indices, values, [60, 40]).to_sparse_csr()
    yi, yv = random_coo((40, 50), 250, rng)
    y = sparse.sparse_coo_tensor(yi, yv, [40, 50]).to_sparse_csr()
    out = sparse.matmul(x, y)
    structure = (dense_of(indices, np.ones(300), (60, 40)) @ dense_of(yi, np.ones(250),
                                                                     (40, 50))) > 0
    got = out.to_sparse_coo().indices().numpy()
    assert out.nnz() == structure.sum() > (x.to_scipy() @ y.to_scipy()).nnz
    assert structure[tuple(got)].all()
    np.testing.assert_allclose(as_dense(out), dense_of(indices, values, (60, 40))
                               @ dense_of(yi, yv, (40, 50)), rtol=1e-12, atol=1e-12)


def test_many_row_blocks_restore_only_their_own_cancellations(monkeypatch):
    """scipy's SpGEMM (complex values: the compiled loop takes real ones) cuts its rows
    into blocks (SPGEMM_BLOCKS_PER_THREAD per thread) so that a cancellation is repaired
    within its block: the result is bit for bit the one-block one."""
    from kernels.sparse import blas
    rng = np.random.default_rng(16)
    indices, values = random_coo((90, 40), 500, rng)
    values = values * (1 + 1j)
    values[rng.random(500) < 0.05] = 0.0
    x = sparse.sparse_coo_tensor(indices, values, [90, 40]).to_sparse_csr()
    yi, yv = random_coo((40, 30), 300, rng)
    yv = yv.astype(np.complex128)
    y = sparse.sparse_coo_tensor(yi, yv, [40, 30]).to_sparse_csr()
    one = sparse.matmul(x, y)
    monkeypatch.setattr(blas, "MIN_WORK_PER_THREAD", 8)
    assert len(blas.row_blocks(x._d.crows, blas.SPGEMM_BLOCKS_PER_THREAD)) > 8
    many = sparse.matmul(x, y)
    for a, b in ((one.crows(), many.crows()), (one.cols(), many.cols()),
                 (one.values(), many.values())):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    structure = (dense_of(indices, np.ones(500), (90, 40)) @ dense_of(yi, np.ones(300),
                                                                     (40, 30))) > 0
    assert many.nnz() == structure.sum() > (x.to_scipy() @ y.to_scipy()).nnz


def _spgemm_case(rng, dtype, m=400, k=300, n=350, per_row=12):
    """Two CSR matrices with empty rows and duplicate columns, values that never cancel
    (scipy's product then drops nothing), and scipy's ``a @ b`` of them."""
    import scipy.sparse as sps
    from kernels.sparse.data import CsrData
    mats = []
    for rows, cols in ((m, k), (k, n)):
        counts = rng.integers(0, per_row, rows)
        counts[rows // 4:rows // 3] = 0
        crows = np.concatenate([[0], np.cumsum(counts)])
        idx = rng.integers(0, cols, int(crows[-1]))
        vals = (rng.integers(1, 9, idx.shape[0]) if np.dtype(dtype).kind == "i"
                else rng.random(idx.shape[0]) + 0.5).astype(dtype)
        mats.append(CsrData(crows, idx, vals, (rows, cols)))
    want = sps.csr_array((mats[0].values, mats[0].cols, mats[0].crows), shape=(m, k)) @ \
        sps.csr_array((mats[1].values, mats[1].cols, mats[1].crows), shape=(k, n))
    return mats, want


def _same_csr(got, want):
    assert got.crows.tolist() == want.indptr.tolist()
    assert got.cols.tolist() == want.indices.tolist()             # csr_matmat's order
    assert got.values.dtype == want.data.dtype
    assert got.values.tobytes() == want.data.tobytes()


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
@pytest.mark.parametrize("threads", [1, 2, 3, 4])
def test_spgemm_loop_gives_scipys_bits(dtype, threads, monkeypatch):
    """The compiled SpGEMM: scipy's entries, in its order, with its sums' bits, on any
    number of threads: one block, one pair of blocks meeting in the middle (two
    threads), or several pairs copied together (three and four)."""
    from kernels.funcs import threads as pool_threads
    from kernels.sparse import blas
    monkeypatch.setattr(pool_threads, "MIN_BYTES_PER_THREAD", 1)
    monkeypatch.setattr(pool_threads, "MIN_BYTES_PER_PIECE", 1)
    monkeypatch.setattr(pool_threads, "_num_threads", threads)
    (a, b), want = _spgemm_case(np.random.default_rng(31), dtype)
    blocks = []
    real = blas._spgemm_block
    monkeypatch.setattr(blas, "_spgemm_block", lambda *args: blocks.append(args[10])
                        or real(*args))
    _same_csr(blas.spgemm(a, b), want)
    assert len(blocks) == (1 if threads == 1 else threads + threads % 2)
    assert sum(blocks) == len(blocks) // 2                     # the first of each pair


def test_spgemm_sizes_blocks_exactly_where_the_bound_is_too_large(monkeypatch):
    """Where the products' bound passes a quarter of the memory limit, scipy's count
    sizes the blocks, with the same result."""
    from kernels.funcs import threads as pool_threads
    from kernels.sparse import blas
    monkeypatch.setattr(pool_threads, "MIN_BYTES_PER_THREAD", 1)
    monkeypatch.setattr(pool_threads, "_num_threads", 2)
    (a, b), want = _spgemm_case(np.random.default_rng(32), np.float64, per_row=30)
    counted = []
    real = blas._counted
    monkeypatch.setattr(blas, "_counted", lambda *args: counted.append(1) or real(*args))
    monkeypatch.setattr(blas, "memory_limit", lambda: 1 << 16)
    _same_csr(blas.spgemm(a, b), want)
    assert counted
    assert blas.spgemm(a, b).cols.shape[0] == want.nnz             # no room left over


def test_spgemm_widens_its_indices_when_the_bound_needs_it(monkeypatch):
    from kernels.sparse import blas
    (a, b), want = _spgemm_case(np.random.default_rng(33), np.float32)
    a = a._replace(crows=a.crows.astype(np.int32), cols=a.cols.astype(np.int32))
    b = b._replace(crows=b.crows.astype(np.int32), cols=b.cols.astype(np.int32))
    assert blas.spgemm(a, b).cols.dtype == np.int32
    monkeypatch.setattr(blas, "INT32_MAX", 1000)             # the bound is about 6000
    got = blas.spgemm(a, b)
    assert got.cols.dtype == got.crows.dtype == np.int64
    _same_csr(got, want)


@pytest.mark.parametrize("lx", LAYOUTS)
@pytest.mark.parametrize("ly", LAYOUTS)
def test_scipy_parity_2d(lx, ly):
    rng = np.random.default_rng(5)
    x, _ = make(lx, (30, 20), 80, rng)
    y, _ = make(ly, (20, 25), 60, rng)
    sx, sy = sp.csr_array(x.to_scipy()), sp.csr_array(y.to_scipy())
    out = sparse.matmul(x, y)
    np.testing.assert_allclose(as_dense(out), (sx @ sy).toarray(), rtol=1e-12, atol=1e-12)
    assert out.nnz() >= (sx @ sy).nnz
    d = rand((20, 7), rng)
    np.testing.assert_allclose(sparse.matmul(x, dense_t(d)).numpy(), sx @ d, rtol=1e-12)


def test_coo_with_dense_dims_is_its_logical_matrix():
    x = sparse.sparse_coo_tensor([[0, 2, 0]], [[1.0, 2.0], [3.0, 4.0], [5.0, 0.0]], [3, 2])
    xr = np.array([[6.0, 2.0], [0.0, 0.0], [3.0, 4.0]])
    y = rand((2, 4), RNG)
    np.testing.assert_allclose(sparse.matmul(x, dense_t(y)).numpy(), xr @ y)
    left = rand((4, 3), RNG)
    np.testing.assert_allclose(sparse.matmul(dense_t(left), x).numpy(), left @ xr)
    out = sparse.matmul(x, sparse.sparse_coo_tensor([[0, 1], [1, 0]], [1.0, 1.0], [2, 2]))
    assert out.sparse_dim() == 2
    np.testing.assert_allclose(as_dense(out), xr @ np.array([[0.0, 1.0], [1.0, 0.0]]))


def test_matmul_operator():
    x, xr = make("csr", (4, 3), 6, RNG)
    y = rand((3, 2), RNG)
    np.testing.assert_allclose((x @ dense_t(y)).numpy(), xr @ y)
    left = rand((2, 4), RNG)
    np.testing.assert_allclose((dense_t(left) @ x).numpy(), left @ xr)
    np.testing.assert_allclose(as_dense(x @ sparse.to_sparse_coo(dense_t(y), 2)), xr @ y)


# ---------------------------------------------------------------- mv, addmm
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", [(5, 4), (3, 5, 4), (3, 0)])
def test_mv(layout, shape):
    rng = np.random.default_rng(6)
    x, xr = make(layout, shape, 9, rng)
    v = rand(shape[:-2] + shape[-1:], rng)
    out = sparse.mv(x, dense_t(v))
    assert out.shape == list(shape[:-1])
    np.testing.assert_allclose(out.numpy(), (xr @ v[..., None])[..., 0])


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("xs,ys", SHAPES[:3])
def test_addmm_dense_input(layout, xs, ys):
    rng = np.random.default_rng(8)
    x, xr = make(layout, xs, 9, rng)
    y, inp = rand(ys, rng), rand(xs[:-1] + ys[-1:], rng)
    out = sparse.addmm(dense_t(inp), x, dense_t(y), beta=0.5, alpha=-2.0)
    assert out.layout == "dense"
    np.testing.assert_allclose(out.numpy(), 0.5 * inp - 2.0 * (xr @ y))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("xs,ys", SHAPES[:3])
def test_addmm_all_sparse_is_the_union(layout, xs, ys):
    rng = np.random.default_rng(9)
    x, xr = make(layout, xs, 9, rng)
    y, yr = make(layout, ys, 7, rng)
    inp, ir = make(layout, xs[:-1] + ys[-1:], 6, rng)
    out = sparse.addmm(inp, x, y, beta=3.0, alpha=0.25)
    assert out.layout == inp.layout
    np.testing.assert_allclose(as_dense(out), 3.0 * ir + 0.25 * (xr @ yr))
    coords = out.to_sparse_coo().indices().numpy()
    keys = np.ravel_multi_index(tuple(coords), out.shape)
    assert np.all(np.diff(keys) > 0)   # each coordinate once, sorted


# ---------------------------------------------------------------- masked_matmul
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("xs,ys", SHAPES)
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_masked_matmul_has_mask_pattern_as_a_set(layout, xs, ys, index_dtype):
    rng = np.random.default_rng(10)
    out_shape = xs[:-1] + ys[-1:]
    mask, _ = make(layout, out_shape, 12, rng, index_dtype=index_dtype)
    x, y = rand(xs, rng), rand(ys, rng)
    out = sparse.masked_matmul(dense_t(x), dense_t(y), mask)
    coo = mask.to_sparse_coo() if layout == "csr" else mask
    where = np.zeros(out_shape, bool)
    where[tuple(coo.indices().numpy())] = True
    assert out.layout == mask.layout and out.nnz() == where.sum()
    np.testing.assert_allclose(as_dense(out), np.where(where, x @ y, 0.0), rtol=1e-12,
                               atol=1e-12)
    index = out.indices() if layout == "coo" else out.crows()
    assert index.dtype == np.dtype(index_dtype)
    if layout == "coo":
        assert out.is_coalesced()


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_a_2d_mask_stands_for_every_batch(layout, index_dtype):
    """torch's sampled_addmm broadcast: a 2-D mask with batched x and y gives a batched
    result whose every batch has the mask's pattern (duplicates and order as a set)."""
    rng = np.random.default_rng(21)
    mask, _ = make(layout, (4, 5), 11, rng, index_dtype=index_dtype)   # duplicates likely
    x, y = rand((3, 4, 2), rng), rand((3, 2, 5), rng)
    out = sparse.masked_matmul(dense_t(x), dense_t(y), mask)
    coo = mask.to_sparse_coo() if layout == "csr" else mask
    where = np.zeros((4, 5), bool)
    where[tuple(coo.indices().numpy())] = True
    assert out.layout == mask.layout and out.shape == [3, 4, 5]
    assert out.nnz() == 3 * where.sum()
    np.testing.assert_allclose(as_dense(out), np.where(where, x @ y, 0.0), rtol=1e-12,
                               atol=1e-12)
    index = out.indices() if layout == "coo" else out.crows()
    assert index.dtype == np.dtype(index_dtype)
    keys = np.ravel_multi_index(tuple(out.to_sparse_coo().indices().numpy()), out.shape)
    assert np.all(np.diff(keys) > 0)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_2d_mask_of_batched_operands_by_finite_differences(layout):
    rng = np.random.default_rng(22)
    mask, _ = make(layout, (4, 5), 9, rng)

    def masked(x, y):
        return sparse.masked_matmul(x, y, mask)
    check_grads(masked, [Operand("dense", (2, 4, 3), 0, rng, np.float64),
                         Operand("dense", (2, 3, 5), 0, rng, np.float64)], (2, 4, 5),
                np.float64, rng)


@pytest.mark.parametrize("xs, ys, ms", [((3, 4, 2), (3, 2, 5), (2, 4, 5)),
                                        ((3, 4, 2), (3, 2, 5), (5, 4)),
                                        ((4, 2), (2, 5), (3, 4, 5))])
def test_masked_matmul_refuses_a_mask_of_another_shape(xs, ys, ms):
    rng = np.random.default_rng(23)
    mask, _ = make("coo", ms, 4, rng)
    with pytest.raises(ValueError, match=r"masked_matmul: mask has shape"):
        sparse.masked_matmul(dense_t(rand(xs, rng)), dense_t(rand(ys, rng)), mask)


# ---------------------------------------------------------------- zero-size operands
def _index_dtypes(t):
    bufs = [t.indices()] if t.layout == "sparse_coo" else [t.crows(), t.cols()]
    return {b.numpy().dtype for b in bufs}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("batch, m, k, n", [((), 0, 3, 2), ((), 3, 0, 2), ((), 3, 2, 0),
                                             ((), 3, 2, 2), ((0,), 3, 2, 2), ((2,), 0, 3, 2),
                                             ((2,), 3, 2, 0), ((2,), 3, 2, 2)])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_matmul_family_on_zero_size_operands(layout, batch, m, k, n, index_dtype):
    """nnz=0 operands (a size-0 dim, or no entries) give numpy's zero-size or zero results;
    sparse results keep the layout and the index dtype, and gradients their pattern."""
    rng = np.random.default_rng(11)
    x, xr = make(layout, batch + (m, k), 0, rng, index_dtype=index_dtype, grad=True)
    ys, yr = make(layout, batch + (k, n), 0, rng, index_dtype=index_dtype)
    y, left = dense_t(rand(batch + (k, n), rng), grad=True), rand(batch + (2, m), rng)
    np.testing.assert_array_equal(sparse.matmul(x, y).numpy(), xr @ y.numpy())
    np.testing.assert_array_equal(sparse.matmul(dense_t(left), x).numpy(), left @ xr)
    vec = rand(batch + (k,), rng)
    np.testing.assert_array_equal(sparse.mv(x, dense_t(vec)).numpy(),
                                  (xr @ vec[..., None])[..., 0])
    inp = rand(batch + (m, n), rng)
    np.testing.assert_array_equal(sparse.addmm(dense_t(inp), x, y, beta=2.0).numpy(), 2 * inp)
    mask, _ = make(layout, batch + (m, n), 0, rng, index_dtype=index_dtype)
    for out in (sparse.matmul(x, ys), sparse.addmm(mask, x, ys),
                sparse.masked_matmul(dense_t(rand(batch + (m, k), rng)), y, mask)):
        assert out.layout == x.layout and out.nnz() == 0 and out.shape == list(batch + (m, n))
        assert _index_dtypes(out) == {np.dtype(index_dtype)}
        np.testing.assert_array_equal(as_dense(out), np.zeros(batch + (m, n)))
    sparse.matmul(x, y).backward()
    assert x.grad.layout == x.layout and x.grad.values().shape == [0]
    np.testing.assert_array_equal(y.grad.numpy(), np.zeros(y.shape))


def test_a_1d_operand_error_names_its_layout():
    x, _ = make("csr", (3, 4), 5, RNG)
    with pytest.raises(ValueError, match="matmul: y has shape \\[4\\]; a 1-D dense tensor is "
                                         "not a matrix; sparse.mv multiplies a sparse matrix "
                                         "by a vector"):
        sparse.matmul(x, dense_t(np.ones(4)))
    with pytest.raises(ValueError, match="matmul: x has shape \\[3\\]; a 1-D dense tensor"):
        sparse.matmul(dense_t(np.ones(3)), x)
    with pytest.raises(ValueError, match="matmul: y has shape \\[4\\]; a 1-D sparse tensor"):
        sparse.matmul(x, sparse.sparse_coo_tensor([[1]], [1.0], [4]))


# ---------------------------------------------------------------- errors
def test_errors_name_the_op_before_any_work():
    x, _ = make("csr", (4, 3), 5, RNG)
    c3, _ = make("csr", (2, 4, 3), 5, RNG)
    v1 = sparse.sparse_coo_tensor([[0, 2]], [1.0, 2.0], [3])
    d = dense_t(np.ones((3, 2)))
    with pytest.raises(TypeError, match="matmul: x and y are both dense"):
        sparse.matmul(d, dense_t(np.ones((2, 3))))
    with pytest.raises(ValueError, match="matmul: x has shape \\[3\\].*1-D"):
        sparse.matmul(v1, d)
    with pytest.raises(ValueError, match="matmul: inner dims differ"):
        sparse.matmul(x, dense_t(np.ones((4, 2))))
    with pytest.raises(ValueError, match="batch sizes differ"):
        sparse.matmul(c3, dense_t(np.ones((3, 3, 2))))
    with pytest.raises(ValueError, match="both be 2-D or both be batched"):
        sparse.matmul(c3, d)
    with pytest.raises(TypeError, match="matmul: y has dtype float16"):
        sparse.matmul(x, dense_t(np.ones((3, 2), np.float16)))
    with pytest.raises(TypeError, match="mv: x must be sparse"):
        sparse.mv(d, dense_t(np.ones(2)))
    with pytest.raises(ValueError, match="mv: vec has shape"):
        sparse.mv(x, dense_t(np.ones((3, 1))))
    for xs in (x, x.to_sparse_coo()):      # the caller's vec shape, not a column's
        with pytest.raises(ValueError, match=r"mv: inner dims differ: x \[4, 3\] has 3 "
                                             r"columns, vec \[2\] has 2"):
            sparse.mv(xs, dense_t(np.ones(2)))
    with pytest.raises(ValueError, match=r"mv: batch sizes differ: x \[2, 4, 3\] has 2, "
                                         r"vec \[3, 3\] has 3"):
        sparse.mv(c3, dense_t(np.ones((3, 3))))
    with pytest.raises(ValueError, match=r"mv: inner dims differ: x \[2, 4, 3\].*vec \[2, 4\]"):
        sparse.mv(c3, dense_t(np.ones((2, 4))))
    with pytest.raises(TypeError, match="addmm: layouts"):
        sparse.addmm(dense_t(np.ones((4, 2))), x, x.to_sparse_coo())
    with pytest.raises(ValueError, match="addmm: input has shape \\[1, 2\\].*not broadcast"):
        sparse.addmm(dense_t(np.ones((1, 2))), x, d)
    for dt, kw, text in [(np.int64, {"beta": 0.5}, "beta 0.5 is not a whole number"),
                         (np.int64, {"beta": float("inf")}, "beta inf is not a whole"),
                         (np.int64, {"alpha": float("nan")}, "alpha nan is not a whole"),
                         (np.int64, {"alpha": 2 ** 70}, "alpha .* does not fit .* int64"),
                         (np.int8, {"alpha": 300}, r"alpha 300.0 does not fit .* int8 \(?\[-128")]:
        with pytest.raises(TypeError, match=f"^addmm: {text}"):    # before the product
            sparse.addmm(dense_t(np.ones((4, 2), dt)),
                         sparse.sparse_coo_tensor([[0], [0]], np.array([1], dt), [4, 3]),
                         dense_t(np.ones((3, 2), dt)), **kw)
    with pytest.raises(TypeError, match="masked_matmul: x and y must be dense and mask sparse"):
        sparse.masked_matmul(d, d, dense_t(np.ones((3, 3))))
    with pytest.raises(ValueError, match="masked_matmul: mask has shape \\[4, 3\\]"):
        sparse.masked_matmul(dense_t(np.ones((3, 2))), dense_t(np.ones((2, 2))), x)


def test_infer_meta_needs_no_data():
    x = MetaTensor((3, 4, 5), np.float32, "sparse_csr")
    y = MetaTensor((3, 5, 2), np.float64)
    out = sparse.matmul.infer_meta(x, y)
    assert out.shape == (3, 4, 2) and out.dtype == np.float64 and out.layout == "dense"
    s = sparse.matmul.infer_meta(MetaTensor((4, 5), np.float32, "sparse_coo", sparse_dim=2),
                                 MetaTensor((5, 6), np.float32, "sparse_csr"))
    assert s.layout == "sparse_coo" and s.shape == (4, 6) and s.sparse_dim == 2
    assert sparse.mv.infer_meta(x, MetaTensor((3, 5), np.float32)).shape == (3, 4)
    m = sparse.masked_matmul.infer_meta(MetaTensor((4, 2), np.float32),
                                        MetaTensor((2, 6), np.float32),
                                        MetaTensor((4, 6), np.float32, "sparse_csr"))
    assert m.layout == "sparse_csr" and m.shape == (4, 6)
    a = sparse.addmm.infer_meta(MetaTensor((4, 6), np.float32),
                                MetaTensor((4, 5), np.float32, "sparse_coo", sparse_dim=2),
                                MetaTensor((5, 6), np.float32), 2.0, 1.0)
    assert a.layout == "dense" and a.shape == (4, 6)


# ---------------------------------------------------------------- gradients
def _fd(loss, arrays, k, eps=1e-6):
    """Central differences of ``loss`` w.r.t. every element of ``arrays[k]`` (complex:
    d/dRe + i d/dIm)."""
    base = arrays[k]
    grad = np.zeros_like(base)
    for i in np.ndindex(base.shape):
        steps = [1.0] + ([1j] if base.dtype.kind == "c" else [])
        for step in steps:
            plus = [a.copy() for a in arrays]
            minus = [a.copy() for a in arrays]
            plus[k][i] += eps * step
            minus[k][i] -= eps * step
            d = (loss(plus) - loss(minus)) / (2 * eps)
            grad[i] += d * (1 if step == 1.0 else 1j)
    return grad


class Operand:
    """A tensor argument rebuilt from a perturbable array (values of a sparse one)."""

    def __init__(self, kind, shape, nnz, rng, dtype):
        self.kind = kind
        if kind == "dense":
            self.array = rand(shape, rng, dtype)
        else:
            self.indices, self.array = random_coo(shape, nnz, rng, dtype)
            self.shape = shape

    def tensor(self, array, grad=False):
        if self.kind == "dense":
            return dense_t(array, grad)
        coo = sparse.sparse_coo_tensor(self.indices, array, list(self.shape))
        if self.kind == "coo":
            return sparse.sparse_coo_tensor(self.indices, array, list(self.shape),
                                            stop_gradient=not grad)
        c = coo.to_sparse_csr()
        return sparse.sparse_csr_tensor(c.crows(), c.cols(), c.values(), list(self.shape),
                                        stop_gradient=not grad)

    def grad_of(self, t):
        """The gradient in the order of ``self.array`` (CSR stores rows sorted)."""
        if self.kind != "csr":
            return t.grad.numpy() if self.kind == "dense" else t.grad.values().numpy()
        order = _csr_order(self.indices, self.shape)
        out = np.empty_like(self.array)
        out[order] = t.grad.values().numpy()
        return out


def _csr_order(indices, shape):
    """The storage order to_sparse_csr gives COO entries: stable by (batch, row)."""
    keys = indices[0] * shape[1] + indices[1] if len(shape) == 3 else indices[0]
    return np.argsort(keys, kind="stable")


def check_grads(fn, operands, out_shape, dtype, rng):
    w = rand(out_shape, rng, dtype)

    def loss(arrays):
        out = fn(*[o.tensor(a) for o, a in zip(operands, arrays)])
        return np.real(np.sum(np.conj(w) * as_dense(out)))
    arrays = [o.array for o in operands]
    tensors = [o.tensor(a, grad=True) for o, a in zip(operands, arrays)]
    fn(*tensors).backward(dense_t(w))
    for k, (o, t) in enumerate(zip(operands, tensors)):
        assert t.grad.layout == t.layout
        np.testing.assert_allclose(o.grad_of(t), _fd(loss, arrays, k), rtol=1e-6, atol=1e-6)


GRAD_CASES = [("coo", "dense"), ("csr", "dense"), ("dense", "coo"), ("dense", "csr"),
              ("coo", "coo"), ("csr", "csr"), ("coo", "csr"), ("csr", "coo")]


@pytest.mark.parametrize("kx,ky", GRAD_CASES)
@pytest.mark.parametrize("xs,ys", [((4, 3), (3, 5)), ((2, 3, 4), (2, 4, 2))])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128], ids=str)
def test_matmul_gradients_by_finite_differences(kx, ky, xs, ys, dtype):
    rng = np.random.default_rng(11)
    ops = [Operand(kx, xs, 7, rng, dtype), Operand(ky, ys, 6, rng, dtype)]
    check_grads(sparse.matmul, ops, xs[:-1] + ys[-1:], dtype, rng)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [np.float64, np.complex128], ids=str)
def test_mv_and_masked_matmul_gradients(layout, dtype):
    rng = np.random.default_rng(12)
    check_grads(sparse.mv, [Operand(layout, (4, 3), 7, rng, dtype),
                            Operand("dense", (3,), 0, rng, dtype)], (4,), dtype, rng)
    mask, _ = make(layout, (2, 4, 5), 9, rng)

    def masked(x, y):
        return sparse.masked_matmul(x, y, mask)
    check_grads(masked, [Operand("dense", (2, 4, 3), 0, rng, dtype),
                         Operand("dense", (2, 3, 5), 0, rng, dtype)], (2, 4, 5), dtype, rng)


@pytest.mark.parametrize("kinds", [("dense", "coo", "dense"), ("dense", "csr", "dense"),
                                   ("coo", "coo", "coo"), ("csr", "csr", "csr")])
def test_addmm_gradients(kinds):
    rng = np.random.default_rng(13)
    ops = [Operand(kinds[0], (4, 5), 6, rng, np.float64),
           Operand(kinds[1], (4, 3), 7, rng, np.float64),
           Operand(kinds[2], (3, 5), 6, rng, np.float64)]

    def addmm(i, x, y):
        return sparse.addmm(i, x, y, beta=0.5, alpha=-1.5)
    check_grads(addmm, ops, (4, 5), np.float64, rng)


def test_sparse_gradient_keeps_duplicates_and_storage_order():
    x = sparse.sparse_coo_tensor([[1, 0, 1], [2, 0, 2]], [1.0, 2.0, 3.0], [2, 3],
                                 stop_gradient=False)
    y = np.arange(6.0).reshape(3, 2)
    sparse.matmul(x, dense_t(y)).backward(dense_t(np.array([[1.0, 0.0], [0.0, 1.0]])))
    np.testing.assert_array_equal(x.grad.indices().numpy(), [[1, 0, 1], [2, 0, 2]])
    np.testing.assert_array_equal(x.grad.values().numpy(), [y[2, 1], y[0, 0], y[2, 1]])


# ---------------------------------------------------------------- determinism
@pytest.mark.parametrize("layout", LAYOUTS)
def test_bit_identical_on_one_and_two_threads(layout, monkeypatch):
    rng = np.random.default_rng(14)
    x, _ = make(layout, (3000, 2000), 120000, rng, np.float32)
    y, _ = make(layout, (2000, 1500), 60000, rng, np.float32)
    d = dense_t(rand((2000, 16), rng, np.float32))
    a, b = dense_t(rand((3000, 16), rng, np.float32)), dense_t(rand((16, 2000), rng, np.float32))

    def run():
        xg = sparse.sparse_coo_tensor(x.to_sparse_coo().indices(), x.to_sparse_coo().values(),
                                      x.shape, stop_gradient=False)
        out = sparse.matmul(xg, d)
        out.backward(dense_t(np.ones(out.shape, np.float32)))
        return [out.numpy(), xg.grad.values().numpy(), as_dense(sparse.matmul(x, y)),
                sparse.masked_matmul(a, b, x).values().numpy(),
                sparse.matmul(dense_t(rand((5, 3000), np.random.default_rng(0), np.float32)),
                              x).numpy()]
    monkeypatch.setenv("PHISPARSE_NUM_THREADS", "1")
    one = run()
    monkeypatch.setenv("PHISPARSE_NUM_THREADS", "2")
    two, again = run(), run()
    for p, q, r in zip(one, two, again):
        assert p.tobytes() == q.tobytes() == r.tobytes()


@pytest.mark.parametrize("dtype", [np.float32, np.complex64, np.int8, np.float16, np.bool_])
def test_sddmm_matches_numpy_on_the_compiled_loop_and_the_gathered_path(dtype):
    """The CPU SDDMM: the compiled loop (float32, complex64, int8, whose products wrap as
    numpy's do) and the gathered blocks (float16, bool), over 2.5 gather blocks, give
    numpy's row-wise products."""
    from kernels.sparse import blas
    rng = np.random.default_rng(21)
    k = 16
    n = 5 * blas.sddmm_block(k, dtype) // 2
    x = (rng.integers(-128, 128, (300, k)) if dtype == np.int8 else rand((300, k), rng, dtype))
    yt = (rng.integers(-128, 128, (200, k)) if dtype == np.int8 else rand((200, k), rng, dtype))
    x, yt = x.astype(dtype), yt.astype(dtype)
    rows, cols = np.sort(rng.integers(0, 300, n)), rng.integers(0, 200, n)
    got = blas.sddmm(rows, cols, x, yt)
    assert got.dtype == dtype and got.shape == (n,)
    wide = np.complex128 if dtype == np.complex64 else np.int64 if dtype == np.int8 else np.float64
    want = np.einsum("ij,ij->i", x[rows].astype(wide), yt[cols].astype(wide))
    if dtype == np.int8:
        np.testing.assert_array_equal(got, want.astype(np.int8))     # two's complement wrap
    elif dtype == np.bool_:
        np.testing.assert_array_equal(got, want > 0)
    else:
        tol = 2e-2 if dtype == np.float16 else 1e-5
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128, np.int32])
@pytest.mark.parametrize("threads", [1, 2])
def test_spmm_loop_gives_scipys_bits(dtype, threads, monkeypatch):
    """The compiled SpMM adds the rows of y in each row's entry order, as scipy's
    ``csr_matvecs`` does: bit for bit scipy's product, with duplicates and empty rows,
    on any number of threads."""
    import scipy.sparse as sps
    from kernels.funcs.threads import set_num_threads
    from kernels.sparse import blas
    from kernels.sparse.data import CsrData
    rng = np.random.default_rng(4)
    m, k, n = 3000, 500, 7
    counts = rng.integers(0, 40, m)
    counts[100:200] = 0
    crows = np.concatenate([[0], np.cumsum(counts)])
    cols = rng.integers(0, k, int(crows[-1]))                  # duplicates likely
    vals, y = rand(cols.shape[0], rng, dtype), rand((k, n), rng, dtype)
    old = set_num_threads(threads)
    try:
        got = blas.spmm(CsrData(crows, cols, vals, (m, k)), y)
    finally:
        set_num_threads(old)
    want = sps.csr_array((vals, cols, crows), shape=(m, k)) @ y
    assert got.dtype == want.dtype
    assert got.tobytes() == np.ascontiguousarray(want).tobytes()


def test_gpu_sddmm_hands_the_kernel_row_ids_for_row_pointers(monkeypatch):
    """The GPU backend's SDDMM takes a CSR pattern's row pointers as the CPU's does and
    gives ``sddmm.cu`` each entry's row (the kernel replaced by a recorder)."""
    from kernels.sparse import blas_gpu
    seen = []
    monkeypatch.setattr(blas_gpu.sddmm_cu, "sddmm", lambda dev, *args: seen.append(args))
    monkeypatch.setattr(blas_gpu, "device", lambda: None)
    x, yt = np.ones((3, 2), np.float32), np.ones((4, 2), np.float32)
    blas_gpu.sddmm(None, np.array([1, 3, 0]), x, yt, crows=np.array([0, 2, 2, 3]))
    np.testing.assert_array_equal(seen[0][0], [0, 0, 2])
    np.testing.assert_array_equal(seen[0][1], [1, 3, 0])


def test_readme_sparse_linear_layer_example():
    """The README's worked example runs and prints what the README says."""
    import pathlib
    text = (pathlib.Path(__file__).resolve().parents[1] / "README.md").read_text()
    section = text[text.index("## Sparse matmul"):]
    code = section[section.index("```python\n") + 10:section.index("```\n", 10)]
    printed = []
    exec(compile(code, "README.md", "exec"), {"print": lambda *args: printed.append(args)})
    assert printed == [(0, 31.345615), (20, 4.8e-05), (40, 0.0), (True,)]


@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_masked_matmul_keeps_an_int32_mask_when_only_the_flattened_batch_needs_int64(layout):
    """[65536, 2, 65536]: every index fits int32, though the block-diagonal matrix the
    kernel works in has 2**32 columns."""
    b, m, n = 65536, 2, 65536
    mask = sparse.sparse_coo_tensor(np.array([[0, b - 1], [0, 1], [5, n - 1]], np.int32),
                                    [1.0, 1.0], [b, m, n])
    if layout == "csr":
        mask = mask.to_sparse_csr()
    x = dense_t(np.zeros((b, m, 0)))
    y = dense_t(np.zeros((b, 0, n)))
    z = sparse.masked_matmul(x, y, mask)
    if layout == "coo":
        assert z.indices().dtype == np.int32
        np.testing.assert_array_equal(z.indices().numpy(), [[0, b - 1], [0, 1], [5, n - 1]])
    else:
        assert z.crows().dtype == np.int32 and z.cols().dtype == np.int32
        np.testing.assert_array_equal(z.cols().numpy(), [5, n - 1])


@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_batched_sparse_products_scratch_spans_one_batch_not_all(layout, monkeypatch):
    """[65536, 2, 1] @ [65536, 1, 65536]: the right operand is multiplied as the stacked
    [B*k, n] matrix, so SpGEMM's scratch row spans 65536 columns (the block-diagonal one's
    2**32 made scipy raise std::bad_alloc).  With a CSR operand its gradients walk y^H's
    2**32 rows: with too little memory for their row pointers, a named ValueError comes
    before any work.  Two COO operands are renumbered instead, backward as forward."""
    import kernels.core.size as size
    b, n = 65536, 65536
    x = sparse.sparse_coo_tensor(np.array([[0, b - 1], [0, 1], [0, 0]], np.int32),
                                 np.array([1.0, 2.0]), [b, 2, 1])
    y = sparse.sparse_coo_tensor(np.array([[0, b - 1], [0, 0], [5, n - 1]], np.int32),
                                 np.array([3.0, 4.0]), [b, 1, n])
    if layout == "csr":
        x, y = x.to_sparse_csr(), y.to_sparse_csr()
    out = sparse.matmul(x, y).to_sparse_coo(3) if layout == "csr" else sparse.matmul(x, y)
    np.testing.assert_array_equal(out.indices().numpy(), [[0, b - 1], [0, 1], [5, n - 1]])
    np.testing.assert_array_equal(out.values().numpy(), [3.0, 8.0])
    monkeypatch.setattr(size, "_LIMIT", [1 << 30])
    xv = dense_t(np.array([1.0, 2.0]), grad=True)
    xg = sparse.sparse_coo_tensor(np.array([[0, b - 1], [0, 1], [0, 0]]), xv, [b, 2, 1])
    yg = sparse.sparse_coo_tensor(np.array([[0, b - 1], [0, 0], [5, n - 1]]),
                                  np.array([3.0, 4.0]), [b, 1, n])
    if layout == "coo":                  # d sum(x @ y) / dx[b, i, k] = sum_j y[b, k, j]
        sparse.sum(sparse.matmul(xg, yg)).backward()
        np.testing.assert_array_equal(xv.grad.numpy(), [3.0, 4.0])
        return
    with pytest.raises(ValueError, match=r"^matmul_grad: the gradient walks the transpose "
                                         r"of y \[65536, 1, 65536\].* GB\) of row pointers"):
        sparse.sum(sparse.matmul(xg.to_sparse_csr(), yg.to_sparse_csr())).backward()


@pytest.mark.parametrize("case", ["canonical", "unsorted", "duplicates"])
@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_masked_matmul_of_ordered_and_unordered_masks(case, layout):
    """A mask known to store each coordinate once in C order (a coalesced COO, a canonical
    2-D CSR) skips the ordering pass and, for CSR, keeps its row pointers; an unsorted mask
    or one with duplicates takes the pass.  Every case gives x @ y at the mask's set of
    coordinates, sorted, each once (a hand-made 3 x 4 pattern, numpy's product)."""
    rows = np.array([0, 0, 1, 2, 2, 2])
    cols = np.array({"canonical": [1, 3, 0, 0, 2, 3], "unsorted": [3, 1, 0, 3, 0, 2],
                     "duplicates": [1, 1, 0, 2, 0, 2]}[case])
    if layout == "coo":
        mask = sparse.sparse_coo_tensor(np.stack([rows, cols]), np.ones(6), [3, 4])
        if case == "canonical":              # the constructor does not scan for order
            mask = sparse.coalesce(mask)
        assert mask.is_coalesced() == (case == "canonical")
    else:
        mask = sparse.sparse_csr_tensor([0, 2, 3, 6], cols, np.ones(6), [3, 4])
    rng = np.random.default_rng(4)
    x, y = rng.standard_normal((3, 5)), rng.standard_normal((5, 4))
    for _ in range(2):                     # the second call finds the remembered facts
        out = sparse.masked_matmul(dense_t(x), dense_t(y), mask)
        want = sorted(set(zip(rows.tolist(), cols.tolist())))
        coo = out.to_sparse_coo() if layout == "csr" else out
        got = list(zip(*coo.indices().numpy().tolist()))
        assert got == want
        np.testing.assert_allclose(coo.values().numpy(), [x[r] @ y[:, c] for r, c in want],
                                   rtol=1e-12)
        if layout == "csr":
            assert out.crows().numpy().tolist() == [0, len([w for w in want if w[0] == 0]),
                                                    len([w for w in want if w[0] <= 1]),
                                                    len(want)]


@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_sparse_products_take_memory_by_entries_not_by_shape(layout):
    """[2**31 + 5, 1] @ [1, 3] and [2, 1] @ [1, 2**33] with a few entries: the rows of a COO
    x, the inner dim and y's columns are renumbered to those holding entries before the
    product (row pointers and scipy's scratch row were shape-sized: 17 GB, std::bad_alloc)."""
    import resource
    big = 2 ** 31 + 5
    x = sparse.sparse_coo_tensor(np.array([[0, big - 1], [0, 0]]), np.array([1.0, 2.0]), [big, 1])
    y = sparse.sparse_coo_tensor(np.array([[0, 0], [0, 2]]), np.array([1.0, 3.0]), [1, 3])
    wide = sparse.sparse_coo_tensor(np.array([[0], [2 ** 33 - 1]]), np.array([5.0]), [1, 2 ** 33])
    small = sparse.sparse_coo_tensor(np.array([[1], [0]]), np.array([2.0]), [2, 1])
    if layout == "csr":
        y, small, wide = y.to_sparse_csr(), small.to_sparse_csr(), wide.to_sparse_csr()
    if layout == "coo":
        out = sparse.matmul(x, y)
        keys = sorted(zip(*out.indices().numpy().tolist(), out.values().numpy().tolist()))
        assert keys == [(0, 0, 1.0), (0, 2, 3.0), (big - 1, 0, 2.0), (big - 1, 2, 6.0)]
    out = sparse.matmul(small, wide)
    assert out.shape == [2, 2 ** 33] and out.layout == small.layout
    dense_coords = out if layout == "coo" else out.to_sparse_coo()
    assert dense_coords.indices().numpy().tolist() == [[1], [2 ** 33 - 1]]
    assert dense_coords.values().numpy().tolist() == [10.0]
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss < 4 << 20    # KiB: under 4 GiB


@pytest.mark.parametrize("batched", [False, True])
@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_renumbered_sparse_products_match_numpy(layout, batched, monkeypatch):
    """The renumbered path (forced on small operands) against numpy's matmul."""
    import kernels.sparse.matmul as mm
    monkeypatch.setattr(mm, "_sparse_extent", lambda x, y: True)
    rng = np.random.default_rng(7)
    for _ in range(20):
        m, k, n = rng.integers(1, 6, 3)
        lead = [3] if batched else []
        dx = rng.standard_normal(lead + [m, k]) * (rng.random(lead + [m, k]) < 0.4)
        dy = rng.standard_normal(lead + [k, n]) * (rng.random(lead + [k, n]) < 0.4)
        x, y = (sparse.sparse_coo_tensor(np.array(np.nonzero(d)), d[np.nonzero(d)],
                                         list(d.shape)) for d in (dx, dy))
        if layout == "csr":
            x, y = x.to_sparse_csr(), y.to_sparse_csr()
        out = sparse.matmul(x, y)
        assert out.layout == x.layout
        np.testing.assert_allclose(out.to_dense().numpy(), dx @ dy, atol=1e-12)


def test_sparse_product_gradients_take_memory_by_entries_not_by_shape():
    """The backward of [2**31 + 5, 1] @ [1, 3] (COO, two entries each) multiplies renumbered
    COO operands too: the gradients are the hand-worked ones, in little memory."""
    import resource
    big = 2 ** 31 + 5
    xv = dense_t(np.array([1.0, 2.0]), grad=True)
    yv = dense_t(np.array([1.0, 3.0]), grad=True)
    x = sparse.sparse_coo_tensor(np.array([[0, 7], [0, 0]]), xv, [big, 1])
    y = sparse.sparse_coo_tensor(np.array([[0, 0], [0, 2]]), yv, [1, 3])
    sparse.sum(sparse.matmul(x, y)).backward()
    np.testing.assert_array_equal(xv.grad.numpy(), [4.0, 4.0])     # y's row sums
    np.testing.assert_array_equal(yv.grad.numpy(), [3.0, 3.0])     # x's column sums
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss < 4 << 20    # KiB: under 4 GiB


@pytest.mark.parametrize("batched", [False, True])
def test_renumbered_sparse_product_gradients_match_finite_differences(batched, monkeypatch):
    """The renumbered backward (forced on small COO operands, dense dims included) against
    central finite differences of numpy's matmul."""
    import kernels.sparse.matmul as mm
    monkeypatch.setattr(mm, "_sparse_extent", lambda x, y: True)
    rng = np.random.default_rng(11)
    lead = [2] if batched else []
    dx = rng.standard_normal(lead + [3, 4]) * (rng.random(lead + [3, 4]) < 0.6)
    dy = rng.standard_normal(lead + [4, 2])
    w = rng.standard_normal(lead + [3, 2])
    nz = np.nonzero(dx)
    xv, yv = dense_t(dx[nz], grad=True), dense_t(dy.reshape(-1, 2), grad=True)
    x = sparse.sparse_coo_tensor(np.array(nz), xv, list(dx.shape))
    y_idx = np.array(np.nonzero(np.ones(dy.shape[:-1])))        # hybrid: one dense dim
    y = sparse.sparse_coo_tensor(y_idx, yv, list(dy.shape))
    (sparse.matmul(x, y).to_dense() * dense_t(w)).sum().backward()

    def f_x(v):
        d = np.zeros_like(dx)
        d[nz] = v
        return d @ dy

    def f_y(v):
        return dx @ v.reshape(dy.shape)
    np.testing.assert_allclose(xv.grad.numpy(), numeric_vjp(f_x, [dx[nz]], 0, w), rtol=1e-6)
    np.testing.assert_allclose(yv.grad.numpy().reshape(-1),
                               numeric_vjp(f_y, [dy.reshape(-1)], 0, w), rtol=1e-6)


@pytest.mark.parametrize("inner", [2**40, 2**62])
def test_all_sparse_addmm_over_a_huge_inner_dim_costs_what_its_entries_do(inner):
    """addmm ran SpGEMM on the whole inner dim (8 TiB of row pointers at 2**40, where
    matmul renumbers the dims holding entries); it now takes matmul's compact path."""
    a = sparse.sparse_coo_tensor(np.array([[0], [inner - 1]]), np.array([2.0]), [2, inner])
    b = sparse.sparse_coo_tensor(np.array([[inner - 1], [1]]), np.array([3.0]), [inner, 3])
    i = sparse.sparse_coo_tensor(np.array([[1, 0], [1, 1]]), np.array([1.0, 5.0]), [2, 3])
    out = sparse.addmm(i, a, b, beta=2.0, alpha=0.5)
    np.testing.assert_array_equal(out.to_dense().numpy(), [[0.0, 13.0, 0.0], [0.0, 2.0, 0.0]])
    assert out.is_sparse_coo() and out.is_coalesced()


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("sparse_input", [False, True])
def test_addmm_with_beta_zero_ignores_nan_and_inf_in_input(layout, sparse_input):
    """BLAS's gemm convention (torch.addmm's documented rule): beta 0 ignores input, so
    its NaN and inf do not propagate; hand-worked: x = I, y = [[1, 2], [3, 4]]."""
    eye = dense_t(np.eye(2))
    x = eye.to_sparse_coo() if layout == "sparse_coo" else eye.to_sparse_csr()
    inp = np.array([[np.nan, np.inf], [-np.inf, 1.0]])
    yv = np.array([[1.0, 2.0], [3.0, 4.0]])
    if sparse_input:
        t = dense_t(inp)
        inp_t = t.to_sparse_coo() if layout == "sparse_coo" else t.to_sparse_csr()
        out = sparse.addmm(inp_t, x, x * 2.0, beta=0.0, alpha=1.5)
        np.testing.assert_array_equal(as_dense(out), 3.0 * np.eye(2))
    else:
        out = sparse.addmm(dense_t(inp), x, dense_t(yv), beta=0.0, alpha=1.5)
        np.testing.assert_array_equal(out.numpy(), 1.5 * yv)


def test_row_ordered_operands_are_not_sorted_again(monkeypatch):
    """A coalesced COO and a batched CSR already list their entries by row: flattening
    them for SpMM asks nothing of their keys (on a GPU that question is a read-back).
    An uncoalesced COO is sorted, and the products agree with numpy either way."""
    from kernels.sparse import data
    asked = []
    real = data.row_order
    monkeypatch.setattr(data, "row_order", lambda keys: asked.append(1) or real(keys))
    rng = np.random.default_rng(0)
    indices, values = random_coo((2, 4, 5), 12, rng)
    y = rng.standard_normal((2, 5, 3))
    want = dense_of(indices, values, (2, 4, 5)) @ y
    x = sparse.sparse_coo_tensor(indices, values, [2, 4, 5])
    for operand in (x.coalesce(), x.coalesce().to_sparse_csr()):
        np.testing.assert_allclose(sparse.matmul(operand, dense.to_tensor(y)).numpy(), want)
    assert asked == []
    np.testing.assert_allclose(sparse.matmul(x, dense.to_tensor(y)).numpy(), want)
    assert asked == [1]


def test_masked_matmul_refuses_mask_keys_past_int64():
    """An unordered mask's entries are ordered by the int64 key row * ncols + col: past
    2**63 that key would wrap (wrong coordinates), so the op says so instead; below it,
    in a shape of 2**63 elements, the entries are ordered right."""
    n = 2 ** 62
    x = dense.to_tensor(np.zeros((4, 0), np.int8))
    y = dense.to_tensor(np.zeros((0, n), np.int8))
    mask = sparse.sparse_coo_tensor([[3, 0], [1, 2]], [1., 1.], [4, n])
    with pytest.raises(ValueError, match=r"^masked_matmul: an entry of the mask reaches"):
        sparse.masked_matmul(x, y, mask)
    y = dense.to_tensor(np.zeros((0, n // 2), np.int8))
    out = sparse.masked_matmul(x, y, sparse.sparse_coo_tensor([[3, 0], [1, 2]], [1., 1.],
                                                              [4, n // 2]))
    assert out.indices().numpy().tolist() == [[0, 3], [2, 1]]
    assert out.values().numpy().tolist() == [0, 0]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_duplicates_add_in_their_own_dtype_before_the_product_promotes(layout):
    """int8 duplicates 100 and 100 are the logical -56, and float32 3e38 + 3e38 is inf:
    a product computed in a wider dtype must not add them there (numpy on to_dense())."""
    for vals, other in (([100, 100], np.float32), ([100, 100], np.int64),
                        ([3e38, 3e38], np.float64)):
        v = np.array(vals, np.int8 if isinstance(vals[0], int) else np.float32)
        x = sparse.sparse_coo_tensor([[0, 0], [1, 1]], v, [1, 2])
        x = x if layout == "coo" else x.to_sparse_csr()
        d = x.to_dense().numpy()
        y = np.ones((2, 1), other)
        want = d.astype(np.result_type(v, other)) @ y
        np.testing.assert_array_equal(sparse.matmul(x, dense.to_tensor(y)).numpy(), want)
        np.testing.assert_array_equal(sparse.mv(x, dense.to_tensor(y[:, 0])).numpy(),
                                      want[:, 0])
        np.testing.assert_array_equal(
            sparse.matmul(dense.to_tensor(y.T), sparse.transpose(x, [1, 0])).numpy(), want.T)
        ys = sparse.sparse_coo_tensor([[1], [0]], np.ones(1, other), [2, 1])
        ys = ys if layout == "coo" else ys.to_sparse_csr()
        np.testing.assert_array_equal(sparse.matmul(x, ys).to_dense().numpy(), want)
        zero = sparse.sparse_coo_tensor([[0], [0]], np.zeros(1, want.dtype), [1, 1])
        zero = zero if layout == "coo" else zero.to_sparse_csr()
        np.testing.assert_array_equal(sparse.addmm(zero, x, ys).to_dense().numpy(), want)


def test_coo_products_over_huge_dims_have_gradients_that_follow_the_entries(monkeypatch):
    """[2**31, 2**31] @ [2**31, 2**31] with two entries each: the forward renumbers the
    dims, and so does the backward (its metadata check asked for 17 GB of row pointers).
    By hand: out = a[2**30, 5] * b[5, 3] = 10 at (2**30, 3); d out / d a[2**30, 5] =
    b[5, 3] = 10, d out / d b[5, 3] = a[2**30, 5] = 1, and the other entries meet nothing.
    With 1 GiB of memory allowed."""
    import kernels.core.size as size
    monkeypatch.setattr(size, "_LIMIT", [1 << 30])
    n = 2 ** 31
    a = sparse.sparse_coo_tensor([[2 ** 30, 0], [5, 7]], [1., 2.], [n, n], stop_gradient=False)
    b = sparse.sparse_coo_tensor([[5, 9], [3, 1]], [10., 20.], [n, n], stop_gradient=False)
    out = sparse.matmul(a, b)
    assert out.indices().numpy().tolist() == [[2 ** 30], [3]]
    out.backward()
    np.testing.assert_array_equal(a.grad.values().numpy(), [10.0, 0.0])
    np.testing.assert_array_equal(b.grad.values().numpy(), [1.0, 0.0])


def test_masked_matmul_of_a_coo_mask_allocates_by_entries_not_rows():
    """A two-entry COO mask [2**27, 2**27]: the COO result is built from the entries'
    coordinates, with no row pointers (2**27 + 1 of them were 1 GiB)."""
    import tracemalloc
    n = 2 ** 27
    mask = sparse.sparse_coo_tensor([[n - 1, 0], [0, 5]], [1., 1.], [n, n])
    x, y = dense.to_tensor(np.zeros((n, 0))), dense.to_tensor(np.zeros((0, n)))
    tracemalloc.start()
    try:
        out = sparse.masked_matmul(x, y, mask)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert out.indices().numpy().tolist() == [[0, n - 1], [5, 0]] and out.is_coalesced()
    assert out.values().numpy().tolist() == [0.0, 0.0]
    assert peak < 2 ** 24, peak                   # the row pointers alone were 2 ** 30


@pytest.mark.parametrize("layout", LAYOUTS)
def test_gradients_use_the_logical_values_the_forward_multiplied(layout):
    """float32 duplicates 3e38 and 3e38 are x's logical inf: with a float64 y, the forward
    gives inf, and so do the gradients that multiply by x (y's, through x^H @ g), as
    d(x.to_dense() @ y)/dy.  The same for a sparse y and for sparse @ sparse."""
    x = sparse.sparse_coo_tensor([[0, 0], [1, 1]], np.array([3e38, 3e38], np.float32), [1, 2])
    x = x if layout == "coo" else x.to_sparse_csr()
    want = x.to_dense().numpy().astype(np.float64).T          # [[0], [inf]]
    with np.errstate(over="ignore"):
        y = dense.to_tensor(np.ones((2, 1)), stop_gradient=False)
        dense.sum(sparse.matmul(x, y)).backward()
        np.testing.assert_array_equal(y.grad.numpy(), want)
        w = dense.to_tensor(np.ones((1, 2)), stop_gradient=False)   # w @ x^T
        dense.sum(sparse.matmul(w, sparse.transpose(x, [1, 0]))).backward()
        np.testing.assert_array_equal(w.grad.numpy(), want.T)
        leaf = sparse.sparse_coo_tensor([[1], [0]], np.ones(1), [2, 1], stop_gradient=False)
        ys = leaf if layout == "coo" else leaf.to_sparse_csr()
        sparse.sum(sparse.matmul(x, ys)).backward()
        np.testing.assert_array_equal(leaf.grad.values().numpy(), [np.inf])


def test_batched_coo_product_gradients_follow_the_entries(monkeypatch):
    """[2**14, 1, 1] @ [2**14, 1, 2**14] with 2048 entries each: the gradients walk y^H's
    2**28 stacked rows, far more than the entries, so they renumber the dims as the
    forward does (2 GiB of row pointers under a 1 GiB limit before).  Gradients by hand:
    d sum(x @ y) / dx[b, 0, 0] = sum_j y[b, 0, j]; d / dy[b, 0, j] = x[b, 0, 0]."""
    import tracemalloc

    import kernels.core.size as size
    monkeypatch.setattr(size, "_LIMIT", [1 << 30])
    b, n, e = 2 ** 14, 2 ** 14, 2048
    rng = np.random.default_rng(0)
    xi = np.stack([rng.choice(b, e, replace=False), np.zeros(e, int), np.zeros(e, int)])
    yi = np.stack([rng.integers(0, b, e), np.zeros(e, int), rng.integers(0, n, e)])
    xv, yv = rng.standard_normal(e), rng.standard_normal(e)
    x = sparse.sparse_coo_tensor(xi, xv, [b, 1, 1], stop_gradient=False)
    y = sparse.sparse_coo_tensor(yi, yv, [b, 1, n], stop_gradient=False)
    tracemalloc.start()
    try:
        sparse.sum(sparse.matmul(x, y)).backward()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2 ** 26, peak
    row_sums = np.zeros(b)
    np.add.at(row_sums, yi[0], yv)
    x_at = np.zeros(b)
    x_at[xi[0]] = xv
    np.testing.assert_allclose(x.grad.values().numpy(), row_sums[xi[0]])
    np.testing.assert_allclose(y.grad.values().numpy(), x_at[yi[0]])


def test_masked_matmul_orders_masks_whose_keys_fit_in_a_huge_shape():
    """[2, 2**62 + 5]: the shape holds more than 2**63 elements, but the entries' keys
    (1, 0) -> 2**62 + 5 and (0, 2**62 + 4) stay below, so the mask is ordered, not refused."""
    n = 2 ** 62 + 5
    x = dense.to_tensor(np.zeros((2, 0), np.int8))
    y = dense.to_tensor(np.zeros((0, n), np.int8))
    mask = sparse.sparse_coo_tensor([[1, 0], [0, n - 1]], [1., 1.], [2, n])
    out = sparse.masked_matmul(x, y, mask)
    assert out.indices().numpy().tolist() == [[0, 1], [n - 1, 0]]


def test_masked_matmul_orders_a_batched_mask_by_its_own_offsets():
    """[4, 2**30, 2**30] holds 2**62 elements, so every entry's own offset fits int64,
    though its key in the block-diagonal [2**32, 2**32] matrix would not: the mask is
    ordered by its own offsets, duplicates merged."""
    n = 2 ** 30
    x = dense.to_tensor(np.zeros((4, n, 0)))
    y = dense.to_tensor(np.zeros((4, 0, n)))
    mask = sparse.sparse_coo_tensor([[3, 0, 3], [n - 1, 0, n - 1], [n - 1, 5, n - 1]],
                                    [1., 1., 1.], [4, n, n])
    out = sparse.masked_matmul(x, y, mask)
    assert out.indices().numpy().tolist() == [[0, 3], [0, n - 1], [5, n - 1]]
    assert out.values().numpy().tolist() == [0.0, 0.0] and out.is_coalesced()


def test_masked_matmul_keeps_a_narrow_coo_masks_index_dtype():
    """An int8 COO mask (``sparse.cast``) of more entries than int8 counts keeps int8
    indices: only a CSR's row pointers must hold nnz."""
    rng = np.random.default_rng(13)
    keys = np.sort(rng.choice(100 * 120, 300, replace=False))
    mask = sparse.cast(sparse.sparse_coo_tensor(np.stack([keys // 120 % 100, keys % 120])
                                                .astype(np.int64), np.ones(300), [100, 120]),
                       index_dtype="int8")
    x, y = rng.standard_normal((100, 4)), rng.standard_normal((4, 120))
    z = sparse.masked_matmul(dense_t(x), dense_t(y), mask)
    assert z.indices().dtype == np.int8
    rows, cols = z.indices().numpy().astype(np.int64)
    np.testing.assert_allclose(z.values().numpy(), (x @ y)[rows, cols], rtol=1e-12, atol=1e-12)
