"""gather: the worked examples of OneFlow's gather-primitive article, the offset/zero-fill
mode, errors, gradients, properties."""
import doctest
import re

import numpy as np
import pytest
from hypothesis import given, strategies as st

import dense
import sparse
from kernels.core.dtypes import ALL
from kernels.core.meta import MetaTensor
from kernels.dense import gather as gather_kernels
from kernels.funcs import threads
from kernels.funcs import gather_view as gather_view_module
from kernels.funcs import row_blocks, scatter_add
from kernels.funcs.gather_view import OffsetHelper, checked_index, gather_view

from opdb.gather import gather_ref

gather_local = gather_kernels.gather      # the registered CPU kernels, offset/bound included


def gather_grad_local(x_shape, index, out_grad, axis=None, batch_dims=0, offset=0, bound=None):
    """The registered CPU gather_grad kernel; x is metadata only."""
    x = MetaTensor(tuple(x_shape), out_grad.dtype)
    return gather_kernels.gather_grad(x, index, out_grad, axis, batch_dims, offset, bound)


P = np.array([[0, 1.0, 2.0], [10.0, 11.0, 12.0], [20.0, 21.0, 22.0], [30.0, 31.0, 32.0]])


def _gather(x, index, backend, **kw):
    return dense.gather(dense.to_tensor(x, place=backend), index, **kw).numpy()


def scatter_add_ref(x_shape, index, out_grad, axis=None, batch_dims=0):
    """np.add.at of out_grad at the x element each output element reads."""
    positions = gather_ref(np.arange(np.prod(x_shape)).reshape(x_shape), index, axis,
                           batch_dims)
    x_grad = np.zeros(int(np.prod(x_shape)), out_grad.dtype)
    np.add.at(x_grad, positions.reshape(-1), out_grad.reshape(-1))
    return x_grad.reshape(x_shape)


@pytest.fixture
def tiny_blocks(monkeypatch):
    """Blocks of a few rows, each piece of work on its own thread (no ``take`` shortcut)."""
    monkeypatch.setattr(gather_kernels, "SMALL_BYTES", -1)
    monkeypatch.setattr(row_blocks, "BLOCK_ELEMENTS", 7)
    monkeypatch.setattr(row_blocks, "MAX_BLOCK_ROWS", 3)
    monkeypatch.setattr(row_blocks, "ROW_BYTES_PER_THREAD", 1)


# ------------------------------------------------ the gather-primitive article's examples
def test_article_gather_examples(backend):
    p1 = np.array([10.38, 16.19, 19.54, 15.39, 17.21, 8.13])
    assert np.array_equal(_gather(p1, np.array([2, 3]), backend), [19.54, 15.39])
    assert np.array_equal(_gather(P, np.array([2, 1]), backend, axis=0),
                          [[20.0, 21.0, 22.0], [10.0, 11.0, 12.0]])
    assert np.array_equal(_gather(P, np.array([2, 1]), backend, axis=1),
                          [[2.0, 1.0], [12.0, 11.0], [22.0, 21.0], [32.0, 31.0]])
    assert np.array_equal(_gather(p1, np.array([[2, 0], [2, 5]]), backend),
                          [[19.54, 10.38], [19.54, 8.13]])
    two = np.array([[2, 0], [0, 1]])
    assert np.array_equal(_gather(P, two, backend, axis=0),
                          [[[20.0, 21.0, 22.0], [0, 1.0, 2.0]],
                           [[0, 1.0, 2.0], [10.0, 11.0, 12.0]]])
    assert np.array_equal(_gather(P, two, backend, axis=1),
                          [[[2.0, 0], [0, 1.0]], [[12.0, 10.0], [10.0, 11.0]],
                           [[22.0, 20.0], [20.0, 21.0]], [[32.0, 30.0], [30.0, 31.0]]])


def test_article_batch_gather_examples(backend):
    index = np.array([[2, 1], [0, 2], [1, 1], [1, 0]])
    assert np.array_equal(_gather(P, index, backend, axis=1, batch_dims=1),
                          [[2.0, 1.0], [10.0, 12.0], [21.0, 21.0], [31.0, 30.0]])
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 2, 3, 2))
    index = rng.integers(0, 2, (4, 2, 5))
    out = _gather(x, index, backend, axis=3, batch_dims=2)
    assert out.shape == (4, 2, 3, 5)
    for b0, b1, i, j in np.ndindex(out.shape):
        assert out[b0, b1, i, j] == x[b0, b1, i, index[b0, b1, j]]


def test_offset_helper_reproduces_the_articles_walkthroughs():
    # gather: x [2, 5, 2], index [2, 3] on axis 1; output offset 18 reads x offset 10
    index = SEED_INDEX.reshape(-1)
    v = gather_view((2, 5, 2), (2, 3), axis=1)
    b, o, p, i = OffsetHelper(*v.out_dims).to_nd(18)
    assert (o, p, i) == (1, 3, 0) and index[p] == 0
    assert OffsetHelper(*v.x_dims).to_offset(b, o, index[p], i) == 10
    # batch gather: x and index [2, 5, 2, 3] on axis 2 with 2 batch dims
    v = gather_view((2, 5, 2, 3), (2, 5, 2, 3), axis=2, batch_dims=2)
    assert (v.batch, v.outer, v.size, v.inner, v.per_batch) == (10, 1, 2, 3, 6)
    b, o, p, i = OffsetHelper(*v.out_dims).to_nd(58)
    assert (b, o, p, i) == (3, 0, 1, 1)
    assert OffsetHelper(*v.index_dims).to_offset(b, p) == 19
    assert OffsetHelper(*v.x_dims).to_offset(b, o, 1, i) == 22
    # both directions agree on arrays
    h = OffsetHelper(3, 4, 5)
    offsets = np.arange(60)
    assert np.array_equal(h.to_offset(*h.to_nd(offsets)), offsets)
    assert OffsetHelper().to_nd(0) == () and OffsetHelper().to_offset() == 0
    with pytest.raises(ValueError, match="2 coordinates for 3 dims"):
        h.to_offset(1, 2)


# ------------------------------------------------------------ offset / zero-fill
# the article's index [2, 3] on axis 1 of x [2, 5, 2]: flat offset 2 holds 2, offset 3 holds 0
SEED_INDEX = np.array([[1, 4, 2], [0, 3, 2]])


def _article_split():
    x = np.arange(20.0).reshape(2, 5, 2) + 1  # no zeros, so a zero-filled row shows
    return x, SEED_INDEX, [(0, x[:, :2]), (2, x[:, 2:])]


def test_split_gather_axis_partials_sum_to_the_full_gather():
    x, index, ranks = _article_split()
    parts = [gather_local(xs, index, axis=1, offset=off, bound=5) for off, xs in ranks]
    assert np.array_equal(parts[0] + parts[1], gather_ref(x, index, axis=1))
    # the article's two walkthroughs: rank 0's output offset 18 reads its local row 0
    # at [1, 0, 0]; rank 1's output offset 17 reads index 2 - offset 2 = local row 0
    assert parts[0].reshape(-1)[18] == x[1, 0, 0]
    assert parts[1].reshape(-1)[17] == x[1, 2, 1]
    for (off, xs), part in zip(ranks, parts):
        mine = (index >= off) & (index < off + xs.shape[1])
        assert np.array_equal(part[:, mine], gather_ref(x, index, axis=1)[:, mine])
        assert not part[:, ~mine].any()


def test_split_gather_keeps_the_first_local_row():
    # the article's text says "index - offset > 0"; an index equal to offset is local row 0
    x, _, ranks = _article_split()
    out = gather_local(ranks[1][1], np.array([2]), axis=1, offset=2, bound=5)
    assert np.array_equal(out[:, 0], x[:, 2])


def test_split_gather_checks_the_logical_size_and_wraps_negatives():
    x, _, ranks = _article_split()
    out = gather_local(ranks[1][1], np.array([-1, -3]), axis=1, offset=2, bound=5)
    assert np.array_equal(out, x[:, [4, 2]])
    with pytest.raises(IndexError, match="index 5 at position"):
        gather_local(ranks[1][1], np.array([5]), axis=1, offset=2, bound=5)


def test_split_gather_grad_is_the_slices_of_the_full_grad(tiny_blocks):
    x, index, ranks = _article_split()
    index = np.concatenate([index, index], axis=1)  # every index twice
    g = np.random.default_rng(2).standard_normal((2, 2, 6, 2))
    parts = [gather_grad_local(xs.shape, index, g, axis=1, offset=off, bound=5)
             for off, xs in ranks]
    full = scatter_add_ref(x.shape, index, g, axis=1)
    np.testing.assert_allclose(np.concatenate(parts, axis=1), full, rtol=1e-12)


def test_grad_rejects_an_out_grad_of_the_wrong_shape():
    with pytest.raises(ValueError, match=r"gather_grad: out_grad shape \[2, 3\] is not"):
        gather_grad_local((4, 3), np.array([1]), np.zeros((2, 3)), axis=0)


def test_split_gather_with_an_empty_local_slice():
    out = gather_local(np.zeros((2, 0, 3)), np.array([1, 4]), axis=1, offset=5, bound=5)
    assert out.shape == (2, 2, 3) and not out.any()


# ------------------------------------------------------------ errors
@pytest.mark.parametrize("dtype", [np.bool_, np.uint8, np.int16, np.int8, np.float32,
                                   np.float64, np.uint64])
def test_index_dtype_other_than_int32_int64_is_a_type_error(dtype):
    x = dense.to_tensor(P)
    with pytest.raises(TypeError, match=rf"gather: index dtype {np.dtype(dtype).name}"):
        dense.gather(x, np.zeros(2, dtype))
    if np.dtype(dtype) in ALL:  # a Tensor of that dtype exists
        with pytest.raises(TypeError, match="gather: index dtype"):
            dense.gather(x, dense.to_tensor(np.zeros(2, dtype)))


@pytest.mark.parametrize("op", ["gather", "batch_gather", "index_select", "sparse"])
@pytest.mark.parametrize("value", [1, True, 0.0, 1j])
@pytest.mark.parametrize("dtype", [np.float64, np.int64])   # the weak scalar took x's dtype
def test_a_python_scalar_index_is_a_type_error_naming_the_op_and_index(op, value, dtype):
    x = dense.to_tensor(P.astype(dtype))
    call = {"gather": dense.gather, "batch_gather": dense.batch_gather,
            "index_select": dense.index_select,
            "sparse": lambda x, index: sparse.index_select(x.to_sparse_coo(2), index)}[op]
    name = "index_select" if op == "sparse" else op
    message = (f"{name}: argument 'index' must be a Tensor or array of int32 or int64 "
               f"indices, got the Python {type(value).__name__} {value!r}")
    for run in (lambda: call(x, value), lambda: call(x=x, index=value)):
        with pytest.raises(TypeError, match=re.escape(message)):
            run()
    if op == "gather":
        with pytest.raises(TypeError, match=re.escape(message)):
            dense.gather.infer_meta(x, value)
        np.testing.assert_array_equal(dense.gather(x, np.int64(1)).numpy(), P[1])  # numpy's: 0-d


@pytest.mark.parametrize("index, value, where", [
    (np.array([0, 4]), 4, (1,)), (np.array([[0, 1], [-5, 0]]), -5, (1, 0)),
    (np.array(7), 7, ()), (np.array([[3, 9], [9, 3]], np.int32), 9, (0, 1))])
def test_out_of_range_index_names_value_and_position(index, value, where, backend):
    x = dense.to_tensor(P, place=backend)
    message = (f"gather: index {value} at position {where} is out of range for axis 0 "
               f"of size 4; expected values in [-4, 4)")
    with pytest.raises(IndexError, match=re.escape(message)):
        dense.gather(x, index)


@pytest.mark.parametrize("shape, axis", [((0, 1, 3), 1), ((2, 3, 0), 0), ((0,), 0)])
def test_an_empty_x_still_checks_the_index_bounds(shape, axis):
    """numpy's take checks no bound when x has no elements; gather does (the contract's
    values in [-n, n)), as a global gather does, and in-range indices give numpy's empty
    result."""
    x = dense.to_tensor(np.zeros(shape))
    n = shape[axis]
    if n:
        with pytest.raises(IndexError, match=re.escape(f"index {-n - 2} at position (1,)")):
            dense.gather(x, np.array([0, -n - 2]), axis=axis)
        want = np.take(np.zeros(shape), [0, -1], axis=axis)
        assert dense.gather(x, np.array([0, -1]), axis=axis).shape == list(want.shape)
    else:
        with pytest.raises(IndexError, match="out of range"):
            dense.gather(x, np.array([0]), axis=axis)


def test_index_error_before_anything_is_written(monkeypatch):
    def no_output(*args, **kwargs):
        raise AssertionError("an output was allocated before the index check")
    monkeypatch.setattr(row_blocks.pool, "empty", no_output)
    with pytest.raises(IndexError):
        gather_local(P, np.array([0, 1, 2, 3, 4]), axis=0)
    with pytest.raises(IndexError):
        gather_grad_local(P.shape, np.array([4]), np.zeros((1, 3)), axis=0)


@pytest.mark.parametrize("x_shape, index_shape, kw, match", [
    ((4, 3), (2,), {"axis": 2}, r"gather: axis 2 is out of range for x of rank 2"),
    ((4, 3), (2,), {"axis": -3}, r"gather: axis -3 is out of range"),
    ((), (2,), {}, r"gather: the default axis is out of range for x of rank 0"),
    ((4, 3), (4, 2), {"axis": 0, "batch_dims": 1}, r"expected an axis in \[1, 2\)"),
    ((4, 3), (4,), {"batch_dims": 2}, r"gather: batch_dims 2 is out of range for an index "
                                      r"of rank 1; expected a value in \[-1, 1\]"),
    ((4, 3), (4,), {"batch_dims": -2}, r"gather: batch_dims -2 is out of range"),
    ((4,), (4,), {"batch_dims": 1}, r"the default axis is out of range for x of rank 1"),
    ((4, 3), (3, 2), {"axis": 1, "batch_dims": 1},
     r"gather: the batch dims of x \[4\] and of index \[3\] differ"),
])
def test_bad_axis_batch_dims_and_batch_prefix_are_value_errors(x_shape, index_shape, kw,
                                                               match):
    x = dense.to_tensor(np.zeros(x_shape))
    with pytest.raises(ValueError, match=match):
        dense.gather(x, np.zeros(index_shape, np.int64), **kw)
    with pytest.raises(ValueError, match=match):
        dense.gather.infer_meta(x.meta, MetaTensor(index_shape, np.int64), kw.get("axis"),
                                kw.get("batch_dims", 0))


def test_checks_run_axes_then_dtype_then_prefix_then_values():
    x = dense.to_tensor(np.zeros((4, 3)))
    with pytest.raises(ValueError, match="axis 5"):
        dense.gather(x, np.array([9.0]), axis=5)
    with pytest.raises(TypeError):
        dense.gather(x, np.zeros((3, 2), np.int16), axis=1, batch_dims=1)
    with pytest.raises(ValueError, match="batch dims"):
        dense.gather(x, np.full((3, 2), 99), axis=1, batch_dims=1)


def test_checked_index_wraps_and_keeps_dtype_limits():
    assert np.array_equal(checked_index(np.array([-3, -1, 0, 2], np.int32), 3, 0),
                          [0, 2, 0, 2])
    assert checked_index(np.array([1, 2], np.int32), 3, 0).dtype == np.int32
    assert checked_index(np.array([-1], np.int32), 2**31 + 5, 0).dtype == np.int64
    with pytest.raises(IndexError, match="at position"):
        checked_index(np.array([[0, 3]]), 3, 0)


# ------------------------------------------------------------ corners
def test_zero_d_index_drops_the_axis(backend):
    out = dense.gather(dense.to_tensor(P, place=backend), np.array(-1), axis=1)
    assert out.shape == [4] and np.array_equal(out.numpy(), P[:, -1])
    out = dense.gather(dense.to_tensor(np.array([5.0, 6.0]), place=backend), np.array(1))
    assert out.shape == [] and out.item() == 6.0


def test_batch_dims_equal_to_index_rank(backend):
    x = np.arange(24.0).reshape(2, 3, 4)
    index = np.array([2, 0])
    out = _gather(x, index, backend, axis=1, batch_dims=1)
    assert np.array_equal(out, np.stack([x[0, 2], x[1, 0]]))


def test_index_may_be_tensor_or_numpy_and_gets_no_gradient():
    x = dense.to_tensor(P, stop_gradient=False)
    with pytest.raises(TypeError, match="stop_gradient"):
        dense.to_tensor(np.array([3, 3, 0]), stop_gradient=False)
    index = dense.to_tensor(np.array([3, 3, 0]))
    out = dense.gather(x, index)
    assert np.array_equal(out.numpy(), dense.gather(P, np.array([3, 3, 0])).numpy())
    out.backward()
    assert index.grad is None
    assert np.array_equal(x.grad.numpy(), [[1, 1, 1], [0, 0, 0], [0, 0, 0], [2, 2, 2]])


def test_backward_keeps_only_the_metadata_of_x():
    x = dense.to_tensor(P, stop_gradient=False)
    out = dense.gather(x, np.array([1]))
    assert isinstance(out._grad_fn.saved["x"], MetaTensor)
    assert out._grad_fn.saved["x"].shape == (4, 3)


def test_outputs_and_inputs_do_not_alias():
    x = np.arange(12.0).reshape(3, 4)
    before = x.copy()
    out = gather_local(x, np.array([0, 1, 2]), axis=0)
    assert not np.shares_memory(out, x) and np.array_equal(x, before)


# ------------------------------------------------------------ gradients
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.complex64,
                                   np.complex128])
def test_grad_with_many_repeats_matches_add_at(dtype, backend):
    rng = np.random.default_rng(3)
    x = dense.to_tensor(rng.standard_normal((3, 6, 4)).astype(dtype), place=backend,
                        stop_gradient=False)
    index = rng.integers(-6, 6, (3, 40))  # ~7 hits per row, negatives included
    out = dense.gather(x, index, axis=1, batch_dims=1)
    g = rng.standard_normal(out.shape) + 1j * rng.standard_normal(out.shape)
    g = g.astype(dtype) if np.dtype(dtype).kind == "c" else g.real.astype(dtype)
    out.backward(dense.to_tensor(g, place=backend))
    wide = np.complex128 if np.dtype(dtype).kind == "c" else np.float64
    ref = scatter_add_ref(x.shape, index, g.astype(wide), 1, 1)
    tol = {np.float16: 1e-2, np.float32: 1e-5, np.complex64: 1e-5}.get(dtype, 1e-12)
    np.testing.assert_allclose(x.grad.numpy(), ref.astype(dtype), rtol=tol, atol=tol)
    assert x.grad.dtype == dtype


def test_grad_all_indices_equal_and_none_repeated(tiny_blocks):
    rng = np.random.default_rng(4)
    g = rng.standard_normal((5, 300, 2))
    same = np.full(300, 7)
    np.testing.assert_allclose(gather_grad_local((5, 9, 2), same, g, axis=1),
                               scatter_add_ref((5, 9, 2), same, g, axis=1), rtol=1e-12)
    perm = rng.permutation(300)
    np.testing.assert_allclose(gather_grad_local((5, 300, 2), perm, g, axis=1),
                               scatter_add_ref((5, 300, 2), perm, g, axis=1), rtol=0)


def test_grad_when_x_has_far_more_rows_than_the_index_has_entries():
    # repeated rows are found by sorting the keys, never by a table of every x row
    index = np.array([5, 200000, 5, 199999, 200000, 5])
    g = np.arange(6.0)[:, None] * np.ones((1, 2))
    out = gather_grad_local((200001, 2), index, g, axis=0)
    assert np.array_equal(out[[5, 199999, 200000]], [[7, 7], [3, 3], [5, 5]])
    assert np.count_nonzero(out) == 6


def test_both_ways_of_finding_repeated_rows_agree():
    # keys too large to pack with their positions into int64 are argsorted instead
    rng = np.random.default_rng(11)
    local = rng.integers(-2, 9, (3, 40))      # some outside [0, 7): a split slice
    view = gather_view((3, 7, 2), local.shape, 1, 1, "gather_grad")
    packed = scatter_add._Duplicates._repeated_entries(view, local)
    sorted_ = scatter_add._Duplicates._repeated_by_argsort(view, local)
    for a, b in zip(packed, sorted_):
        assert np.array_equal(a, b)
    key, pos = packed
    flat = (np.arange(3)[:, None] * 7 + local)
    for k, p in zip(key, pos):
        assert flat[k // 7, p] == k and np.count_nonzero(flat == k) >= 2


def test_grad_of_a_read_only_out_grad_with_repeats(tiny_blocks):
    rng = np.random.default_rng(12)
    g = rng.standard_normal((4, 30, 3))
    g.flags.writeable = False
    index = rng.integers(0, 5, (4, 30))
    np.testing.assert_allclose(gather_grad_local((4, 5, 3), index, g, 1, 1),
                               scatter_add_ref((4, 5, 3), index, g, 1, 1), rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float16, np.float64, np.complex64])
def test_grad_of_rows_hit_far_more_often_than_numpy_ranks(dtype, tiny_blocks):
    # ranks past NUMPY_RANKS go through the sparse product, per batch and outer row
    rng = np.random.default_rng(13)
    index = np.where(rng.random((3, 60)) < 0.7, 2, rng.integers(0, 6, (3, 60)))
    g = (rng.standard_normal((3, 4, 60, 2)) + (1j if dtype == np.complex64 else 0)
         * rng.standard_normal((3, 4, 60, 2))).astype(dtype)
    got = gather_grad_local((3, 4, 6, 2), index, g, axis=2, batch_dims=1)
    wide = np.complex128 if dtype == np.complex64 else np.float64
    want = scatter_add_ref((3, 4, 6, 2), index, g.astype(wide), axis=2, batch_dims=1)
    tol = 2e-2 if dtype == np.float16 else 1e-5
    np.testing.assert_allclose(got, want.astype(got.dtype), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
def test_grad_of_one_element_rows_on_split_slices(dtype):
    # rows of one element take the bincount path; slices [0, 2) and [2, 5) add up
    rng = np.random.default_rng(14)
    index = rng.integers(-5, 5, (3, 40))
    g = (rng.standard_normal((3, 40)) + (1j if dtype == np.complex128 else 0)
         * rng.standard_normal((3, 40))).astype(dtype)
    want = scatter_add_ref((3, 5), index, g, axis=1, batch_dims=1)
    parts = [gather_grad_local((3, hi - lo), index, g, 1, 1, offset=lo, bound=5)
             for lo, hi in ((0, 2), (2, 5))]
    np.testing.assert_allclose(np.concatenate(parts, axis=1), want, rtol=1e-5)
    assert parts[0].dtype == dtype


def test_grad_of_non_contiguous_out_grad():
    g = np.arange(24.0).reshape(4, 6)[:, ::2]
    np.testing.assert_allclose(gather_grad_local((4, 5), np.array([1, 1, 4]), g, axis=1),
                               scatter_add_ref((4, 5), np.array([1, 1, 4]), g, axis=1))


def test_float16_duplicates_are_summed_in_float32():
    # float16 steps by 2 above 2048, so adding the ones one by one in float16
    # (np.add.at) stays at 2048; a float32 sum rounds once, to 2052
    g = np.array([[2048], [1], [1], [1], [1]], np.float16)
    assert gather_grad_local((1, 1), np.zeros(5, np.int64), g, axis=0)[0, 0] == 2052


# ------------------------------------------------------------ properties
@st.composite
def gather_cases(draw):
    """(x shape, index, axis, batch_dims, seed): any ranks, negative axes, 0-size dims."""
    ndim = draw(st.integers(1, 4))
    x_shape = tuple(draw(st.lists(st.integers(0, 4), min_size=ndim, max_size=ndim)))
    batch_dims = draw(st.integers(0, ndim - 1))
    axis = draw(st.integers(batch_dims, ndim - 1))
    rest = tuple(draw(st.lists(st.integers(0, 6), max_size=2)))
    n = x_shape[axis]
    if n == 0:
        rest = (0,) + rest[1:]  # only an empty index fits an empty axis
    index_shape = x_shape[:batch_dims] + rest
    seed = draw(st.integers(0, 2**16))
    index = np.random.default_rng(seed).integers(-n, max(n, 1), index_shape)
    index = index.astype(draw(st.sampled_from([np.int32, np.int64])))
    if draw(st.booleans()):
        axis -= ndim
    if draw(st.booleans()):
        batch_dims -= len(index_shape)
    return x_shape, index, axis, batch_dims, seed


@given(gather_cases())
def test_property_forward_and_grad_match_references(case):
    x_shape, index, axis, batch_dims, seed = case
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(x_shape)
    out = gather_local(x, index, axis, batch_dims)
    assert np.array_equal(out, gather_ref(x, index, axis, batch_dims))
    g = rng.standard_normal(out.shape)
    np.testing.assert_allclose(gather_grad_local(x_shape, index, g, axis, batch_dims),
                               scatter_add_ref(x_shape, index, g, axis, batch_dims),
                               rtol=1e-12, atol=1e-12)


@given(gather_cases())
def test_property_tiny_threaded_blocks_give_the_same_results(case):
    x_shape, index, axis, batch_dims, seed = case
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(x_shape)
    g = rng.standard_normal(gather_ref(x, index, axis, batch_dims).shape)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(gather_kernels, "SMALL_BYTES", -1)      # the row blocks, not ``take``
        mp.setattr(row_blocks, "BLOCK_ELEMENTS", 5)
        mp.setattr(row_blocks, "MAX_BLOCK_ROWS", 2)
        mp.setattr(row_blocks, "ROW_BYTES_PER_THREAD", 1)
        out = gather_local(x, index, axis, batch_dims)
        x_grad = gather_grad_local(x_shape, index, g, axis, batch_dims)
    assert np.array_equal(out, gather_ref(x, index, axis, batch_dims))
    np.testing.assert_allclose(x_grad, scatter_add_ref(x_shape, index, g, axis, batch_dims),
                               rtol=1e-12, atol=1e-12)


@given(gather_cases())
def test_property_matches_take_along_axis(case):
    x_shape, index, axis, batch_dims, seed = case
    x = np.random.default_rng(seed).standard_normal(x_shape)
    v = gather_view(x_shape, index.shape, axis, batch_dims)
    idx = index.reshape(v.batch, 1, v.per_batch, 1) % max(v.size, 1)
    ref = np.take_along_axis(x.reshape(v.x_dims), np.broadcast_to(idx, v.out_dims), axis=2)
    assert np.array_equal(gather_local(x, index, axis, batch_dims), ref.reshape(v.out_shape))


@pytest.mark.parametrize("module", [row_blocks, scatter_add, gather_view_module])
def test_docstring_examples_run(module):
    res = doctest.testmod(module)
    assert res.failed == 0 and res.attempted > 0


@pytest.mark.parametrize("blocks", ["default", "one thread", "tiny"])
@given(gather_cases(), st.integers(0, 2**16))
def test_property_split_axis_partials_add_up(blocks, case, cut_seed):
    x_shape, index, axis, batch_dims, seed = case
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(x_shape)
    ax = axis % len(x_shape)
    n = x_shape[ax]
    cuts = np.sort(np.random.default_rng(cut_seed).integers(0, n + 1, 2))
    bounds = [0, *cuts, n]  # three ranks, some may hold no rows
    shards = [(lo, np.take(x, np.arange(lo, hi), axis=ax)) for lo, hi in zip(bounds, bounds[1:])]
    full = gather_ref(x, index, axis, batch_dims)
    g = rng.standard_normal(full.shape)
    with pytest.MonkeyPatch.context() as mp:
        if blocks == "one thread":
            mp.setattr(threads, "_num_threads", 1)
        if blocks == "tiny":
            mp.setattr(row_blocks, "BLOCK_ELEMENTS", 5)
            mp.setattr(row_blocks, "ROW_BYTES_PER_THREAD", 1)
        parts = [gather_local(xs, index, axis, batch_dims, offset=lo, bound=n)
                 for lo, xs in shards]
        grads = [gather_grad_local(xs.shape, index, g, axis, batch_dims, offset=lo, bound=n)
                 for lo, xs in shards]
    assert np.array_equal(sum(parts), full)
    np.testing.assert_allclose(np.concatenate(grads, axis=ax),
                               scatter_add_ref(x_shape, index, g, axis, batch_dims),
                               rtol=1e-12, atol=1e-12)
