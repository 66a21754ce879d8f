"""dense.expand: the worked examples of OneFlow's expand/repeat article, errors, gradients
and properties."""
import weakref

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dense
from kernels.core.meta import MetaTensor
from kernels.funcs import threads
from kernels.core.dist.rules import Shards
from kernels.core.dist.sbp import shard_shape, split
from kernels.funcs.broadcast import coalesce_dims, copy_into, expand_output_stride
from kernels.funcs.sum_to_shape import broadcast_axes, sum_to_shape
from kernels.infermeta import resolve_expand, shard_out_shape


def _scatter_grad(x_shape, out_shape, w):
    """Reference gradient: add each output's weight into the x element it copies."""
    size = int(np.prod(x_shape, dtype=np.int64))
    src = np.broadcast_to(np.arange(size).reshape(x_shape), out_shape)
    g = np.zeros(size, w.dtype)
    np.add.at(g, src.ravel(), w.ravel())
    return g.reshape(x_shape)


# ------------------------------------------------ the expand/repeat article's examples
def test_article_output_stride_example():
    assert expand_output_stride((4, 1, 3, 5), (2, 1, 4, 4, 3, 5)) == (0, 0, 15, 0, 5, 1)


def test_output_stride_maps_every_output_element_to_its_input():
    x = np.arange(60).reshape(4, 1, 3, 5)
    out_shape = (2, 1, 4, 4, 3, 5)
    stride = expand_output_stride(x.shape, out_shape)
    flat = x.ravel()
    got = np.array([flat[np.dot(i, stride)] for i in np.ndindex(out_shape)]).reshape(out_shape)
    np.testing.assert_array_equal(got, np.broadcast_to(x, out_shape))


@pytest.mark.parametrize("in_shape, targets, out_shape", [
    ((4, 3, 1, 2), [[4, 3, 5, 2], [-1, 3, 5, 2], [-1, -1, 5, 2], [-1, -1, 5, -1],
                    [4, -1, 5, 2], [4, -1, 5, -1], [4, 3, 5, -1]], (4, 3, 5, 2)),
    ((1, 4, 3, 5), [[2, 1, 2, 4, 3, 5], [2, 1, 2, -1, 3, 5], [2, 1, 2, -1, -1, 5],
                    [2, 1, 2, -1, -1, -1], [2, 1, 2, 4, -1, 5], [2, 1, 2, 4, -1, -1],
                    [2, 1, 2, 4, 3, -1]], (2, 1, 2, 4, 3, 5)),
])
def test_article_valid_expand_sizes(in_shape, targets, out_shape):
    x = np.random.default_rng(0).standard_normal(in_shape)
    for t in targets:
        out = dense.expand(dense.to_tensor(x), t)
        assert out.shape == list(out_shape)
        np.testing.assert_array_equal(out.numpy(), np.broadcast_to(x, out_shape))


def _shard_expand(x_shape, target, axis, ranks, rank):
    """expand's shard attributes on ``rank`` when x is split on ``axis`` (kept by expand)."""
    out = dense.expand.infer_meta(MetaTensor(x_shape, np.float64), target)
    lead = out.ndim - len(x_shape)
    local = out.with_(shape=shard_shape(out.shape, split(axis + lead), ranks, rank))
    return shard_out_shape(Shards(x=MetaTensor(x_shape, np.float64), shape=tuple(target),
                                  out=out, out_local=local))["shape"]


def test_article_split_input_example():
    # logical in [4,3,1,2] split(3) over 2 ranks: each rank holds [4,3,1,1] and expands
    # it with [2,4,3,4,1]; the shard's strides are expand's output_stride of that piece
    for rank in (0, 1):
        size = _shard_expand((4, 3, 1, 2), (2, 4, 3, 4, 2), 3, 2, rank)
        assert size == (2, 4, 3, 4, 1)
        assert expand_output_stride((4, 3, 1, 1), size) == (0, 3, 1, 0, 1)


def test_shard_expands_rebuild_the_logical_output():
    x = np.arange(4 * 3 * 5).reshape(4, 3, 1, 5)
    logical = np.broadcast_to(x, (2, 4, 3, 4, 5))
    pieces = [dense.expand(dense.to_tensor(piece),
                           list(_shard_expand(x.shape, (2, -1, -1, 4, -1), 3, 3, r))).numpy()
              for r, piece in enumerate(np.array_split(x, 3, axis=-1))]
    np.testing.assert_array_equal(np.concatenate(pieces, axis=-1), logical)


# ------------------------------------------------------------ forward corners
def test_zero_d_input(backend):
    out = dense.expand(dense.to_tensor(np.float32(2.5), place=backend), [2, 2])
    assert out.shape == [2, 2] and out.dtype == np.float32
    np.testing.assert_array_equal(out.numpy(), np.full((2, 2), 2.5, np.float32))


def test_size_one_dim_grows_to_zero(backend):
    out = dense.expand(dense.to_tensor(np.ones((3, 1)), place=backend), [2, -1, 0])
    assert out.shape == [2, 3, 0]


def test_output_is_a_fresh_contiguous_array():
    x = dense.to_tensor(np.arange(6.0).reshape(2, 3))
    for shape in ([2, 3], [-1, -1], [4, 2, 3]):
        out = dense.expand(x, shape)
        assert out._data().flags.c_contiguous
        assert not np.shares_memory(out._data(), x._data())


def test_strided_and_reversed_inputs():
    base = np.arange(120.0).reshape(4, 5, 6)
    for view in (base[::2, :1, ::-3], base.transpose(2, 1, 0)[:, 2:3], base[:, 1:2, 0]):
        shape = (2,) + tuple(4 if n == 1 else n for n in view.shape)
        np.testing.assert_array_equal(dense.expand(view, shape).numpy(),
                                      np.broadcast_to(view, shape))


def test_method_takes_sizes_or_a_list():
    x = dense.to_tensor(np.arange(3.0).reshape(3, 1))
    ref = np.broadcast_to(x.numpy(), (2, 3, 4))
    for out in (x.expand(2, 3, 4), x.expand([2, -1, 4]), x.expand((2, 3, 4))):
        np.testing.assert_array_equal(out.numpy(), ref)


# ------------------------------------------------------------ errors
@pytest.mark.parametrize("in_shape, shape, match", [
    ((2, 3), [3], r"expand: shape \[3\] has 1 dims, fewer than the 2 dims of x"),
    ((2, 3), [-1, 2, 3], r"expand: .*dim 0 is a new leading dim, so its target size -1"),
    ((2, 3), [-2, 2, 3], r"expand: .*dim 0 is a new leading dim, so its target size -2"),
    ((2, 3), [2, -2], r"expand: .*dim 1 has the negative target size -2 \(existing size 3\)"),
    ((1, 3), [-3, 3], r"expand: .*dim 0 has the negative target size -3 \(existing size 1\)"),
    ((2, 3), [2, 4], r"expand: .*dim 1 has target size 4 but existing size 3"),
    ((2, 3), [5, 2, 1], r"expand: .*dim 2 has target size 1 but existing size 3"),
    ((0, 3), [1, 3], r"expand: .*dim 0 has target size 1 but existing size 0"),
    ((), [-1], r"expand: .*dim 0 is a new leading dim"),
])
def test_errors_name_dim_target_and_existing_size(in_shape, shape, match):
    x = dense.to_tensor(np.zeros(in_shape))
    with pytest.raises(ValueError, match=match):
        dense.expand(x, shape)
    with pytest.raises(ValueError, match=match):  # raised from metadata alone
        dense.expand.infer_meta(MetaTensor(in_shape, np.float64), shape)


def test_too_many_elements_raises():
    with pytest.raises(ValueError, match="expand: shape .* more than 2\\*\\*63 - 1"):
        dense.expand(dense.to_tensor(np.ones(1)), [2 ** 40, 2 ** 40])


def test_non_integer_sizes_raise_type_error():
    with pytest.raises(TypeError, match="expand"):
        dense.expand(dense.to_tensor(np.ones(1)), [2.0])


# ------------------------------------------------------------ gradients
def test_oneflow_gradient_example():
    x = dense.to_tensor(np.random.default_rng(0).standard_normal((1, 4, 1, 2)),
                        stop_gradient=False)
    y = x.expand(2, 1, 2, 4, 2, 2)
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((1, 4, 1, 2), 8.0))


def test_gradient_closed_form(backend):
    rng = np.random.default_rng(1)
    x = dense.to_tensor(rng.standard_normal((3, 1, 2)), place=backend, stop_gradient=False)
    w = rng.standard_normal((4, 3, 5, 2))
    dense.expand(x, [4, -1, 5, -1]).backward(dense.to_tensor(w, place=backend))
    np.testing.assert_allclose(x.grad.numpy(), w.sum(axis=(0, 2))[:, None, :], rtol=1e-12)


@pytest.mark.parametrize("in_shape, shape", [((1, 3), [0, 3]), ((1,), [2, 0]), ((), [0])])
def test_gradient_of_empty_output_is_zeros(in_shape, shape):
    x = dense.to_tensor(np.ones(in_shape), stop_gradient=False)
    dense.expand(x, shape).backward()
    assert x.grad.shape == list(in_shape)
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros(in_shape))


# ------------------------------------------------------------ helpers
def test_sum_to_shape_cases():
    g = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(sum_to_shape(g, (3, 1)), g.sum(axis=(0, 2))[:, None])
    np.testing.assert_array_equal(sum_to_shape(g, ()), g.sum())
    np.testing.assert_array_equal(sum_to_shape(g, (1, 1, 1)), g.sum(keepdims=True))
    np.testing.assert_array_equal(sum_to_shape(g, (2, 3, 4)), g)
    np.testing.assert_array_equal(sum_to_shape(np.ones((0, 3)), (1, 3)), np.zeros((1, 3)))
    assert broadcast_axes((2, 1, 4, 4, 3, 5), (4, 1, 3, 5)) == (0, 1, 3)


@pytest.mark.parametrize("g_shape, shape", [((2, 3), (3, 3)), ((3,), (1, 3)), ((2, 3), (2,))])
def test_sum_to_shape_rejects_shapes_that_do_not_broadcast(g_shape, shape):
    with pytest.raises(ValueError, match="sum_to_shape: shape .* does not broadcast"):
        sum_to_shape(np.ones(g_shape), shape)


def test_coalesce_dims():
    assert coalesce_dims((2, 3, 4), (12, 4, 1)) == ((24,), [(1,)])
    assert coalesce_dims((1, 1), (0, 0)) == ((1,), [(0,)])
    assert coalesce_dims((2, 5, 3), (0, 0, 1), (15, 3, 1)) == ((10, 3), [(0, 1), (3, 1)])


def test_threaded_paths_match_numpy(monkeypatch):
    monkeypatch.setattr(threads, "_num_threads", 3)
    monkeypatch.setattr(threads, "MIN_BYTES_PER_THREAD", 64)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((7, 1, 5))
    for shape in [(7, 9, 5), (2, 7, 9, 5), (1, 7, 2, 5)]:
        out = np.empty(shape)
        copy_into(out, np.broadcast_to(x, shape))
        np.testing.assert_array_equal(out, np.broadcast_to(x, shape))
        g = rng.standard_normal(shape)
        np.testing.assert_allclose(sum_to_shape(g, x.shape), _scatter_grad(x.shape, shape, g),
                                   rtol=1e-12)
    assert len(threads.split_index((7, 9, 5), 10 ** 6)) == 3
    threads.set_num_threads(1)
    assert threads.split_index((7, 9, 5), 10 ** 6) == [()]


@pytest.mark.parametrize("mechanism", ["reduce", "blas", "blas+threads"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128,
                                   np.float16, np.int32])
@pytest.mark.parametrize("g_shape, shape", [
    ((6, 40, 5), (6, 1, 5)),        # summed run between kept runs
    ((40, 7), (1, 7)),              # summed run first
    ((7, 40), (7, 1)),              # summed run last
    ((3, 6, 4, 5), (6, 1, 1)),      # new dim, and a summed run at the end
    ((2, 3, 4, 5, 6), (3, 1, 5, 1)),  # several summed runs
    ((5, 6), ()),                   # everything summed
])
def test_sum_to_shape_mechanisms_match_the_scatter_reference(monkeypatch, mechanism, dtype,
                                                             g_shape, shape):
    from kernels.funcs import sum_to_shape as mod
    if mechanism != "reduce":
        monkeypatch.setattr(mod, "MIN_BLAS_BYTES", 0)
        monkeypatch.setattr(mod, "_use_blas", lambda v, p: v.dtype in mod._BLAS
                            and v.ndim >= 2 and p >= v.ndim - 2)
    if mechanism == "blas+threads":
        monkeypatch.setattr(threads, "_num_threads", 2)
        monkeypatch.setattr(threads, "MIN_BYTES_PER_THREAD", 16)
    g = (np.random.default_rng(4).standard_normal(g_shape) * 4).astype(dtype)
    got = sum_to_shape(g, shape)
    expect = _scatter_grad(shape, g_shape, g.astype(np.complex128))
    assert got.shape == shape and got.dtype == dtype
    atol = 0.25 if dtype == np.float16 else 1e-4   # float16 sums of ~40 terms of size ~4
    np.testing.assert_allclose(got.astype(np.complex128), expect, rtol=1e-5, atol=atol)


def test_blas_limit_is_restored():
    from kernels.funcs import sum_to_shape as mod
    pytest.importorskip("threadpoolctl")
    from threadpoolctl import threadpool_info
    before = [i["num_threads"] for i in threadpool_info()]
    g = np.ones((64, 64, 256), np.float64)        # 8 MiB: the BLAS path
    assert mod._use_blas(g, 1)
    np.testing.assert_array_equal(sum_to_shape(g, (64, 1, 256)), np.full((64, 1, 256), 64.0))
    assert [i["num_threads"] for i in threadpool_info()] == before


# ------------------------------------------------------------ properties
_dims = st.lists(st.sampled_from([0, 1, 1, 2, 3]), min_size=0, max_size=4)


@st.composite
def _expand_case(draw):
    in_shape = tuple(draw(_dims))
    lead = draw(st.lists(st.integers(0, 3), max_size=2))
    kept = [draw(st.sampled_from([-1, s] if s != 1 else [-1, 0, 1, 2, 3])) for s in in_shape]
    return in_shape, lead + kept


@given(_expand_case())
def test_expand_matches_broadcast_to_and_its_gradient_matches_scatter(case):
    in_shape, shape = case
    rng = np.random.default_rng(0)
    x = dense.to_tensor(rng.standard_normal(in_shape), stop_gradient=False)
    out = dense.expand(x, shape)
    target = resolve_expand(in_shape, shape)
    np.testing.assert_array_equal(out.numpy(), np.broadcast_to(x.numpy(), target))
    w = rng.standard_normal(target)
    out.backward(dense.to_tensor(w))
    np.testing.assert_allclose(x.grad.numpy(), _scatter_grad(in_shape, target, w), rtol=1e-10,
                               atol=1e-12)


@given(st.lists(st.integers(2, 4), min_size=1, max_size=3), st.data())
def test_changing_a_dim_larger_than_one_raises(in_shape, data):
    i = data.draw(st.integers(0, len(in_shape) - 1))
    shape = list(in_shape)
    shape[i] = data.draw(st.integers(0, 6).filter(lambda n: n != in_shape[i]))
    with pytest.raises(ValueError, match=f"dim {i} has target size {shape[i]} but existing "
                                         f"size {in_shape[i]}"):
        dense.expand(dense.to_tensor(np.zeros(in_shape)), shape)


# ------------------------------------------------------------ copy mechanics
@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.float32, np.complex64,
                                   np.complex128])
@pytest.mark.parametrize("run", [1, 2, 3, 4, 5, 8])
def test_wide_word_copies_keep_every_bit(dtype, run):
    # NaN payloads, signed zeros and subnormals all survive the raw-word copy
    nbytes = 3 * run * np.dtype(dtype).itemsize
    raw = np.random.default_rng(run).integers(0, 256, nbytes, dtype=np.uint8)
    x = raw.view(dtype).reshape(3, 1, run)
    out = dense.expand(x, [2, 3, 4, run]).numpy()
    expect = np.broadcast_to(x, (2, 3, 4, run))
    np.testing.assert_array_equal(out.view(np.uint8), expect.view(np.uint8))


def test_pool_reuses_a_block_only_once_nothing_refers_to_it(monkeypatch):
    from kernels.funcs import pool
    monkeypatch.setattr(pool, "_blocks", [])
    monkeypatch.setattr(pool, "MIN_BYTES", 1024)
    monkeypatch.setattr(pool, "_limit", 64 << 20)
    x = dense.to_tensor(np.arange(4.0).reshape(4, 1))
    first = dense.expand(x, [4, 1000])
    kept = first.numpy()
    view = dense.reshape(first, [-1])               # shares first's memory
    del first
    second = dense.expand(dense.to_tensor(-np.ones((4, 1))), [4, 1000])
    np.testing.assert_array_equal(view.numpy(), kept.ravel())   # not overwritten
    assert not np.shares_memory(view._data(), second._data())
    assert pool.pooled_bytes() == (2 * pool.GRAIN, 0)
    del view
    assert pool.pooled_bytes() == (pool.GRAIN, pool.GRAIN)
    third = dense.expand(x, [4, 1000])               # takes the idle block
    assert pool.pooled_bytes() == (2 * pool.GRAIN, 0)
    np.testing.assert_array_equal(third.numpy(), np.broadcast_to(x.numpy(), (4, 1000)))
    del second, third
    assert pool.release_idle() == 2 * pool.GRAIN and pool.pooled_bytes() == (0, 0)


def test_pool_with_varying_sizes_stays_small_and_reuses(monkeypatch):
    """Eight output sizes 13% apart, in a cycle: the pool never holds more than the
    blocks of its last miss (not the cap), and once the largest block is idle it
    serves every size of the cycle (issue: RSS climbed to the cap)."""
    from kernels.funcs import pool
    monkeypatch.setattr(pool, "_blocks", [])
    monkeypatch.setattr(pool, "MIN_BYTES", 1024)
    monkeypatch.setattr(pool, "_limit", 1000 * pool.GRAIN)
    sizes = [int(8 * 1.13 ** k) * pool.GRAIN for k in range(8)]    # 8 .. 18 grains
    for cycle in range(3):
        for n in sizes:
            out = pool.empty((n,), np.uint8)
            held = sum(b.size for b in pool._blocks)
            assert held <= max(sizes), (cycle, n, held)
            if cycle:
                assert out.base.size == max(sizes)     # the largest block serves them all
            del out
    assert pool.pooled_bytes() == (0, max(sizes))
    assert dense.release_memory() == max(sizes) and dense.memory_stats()["pool_idle_bytes"] == 0


def test_pool_miss_keeps_recent_larger_blocks_and_frees_stale_ones(monkeypatch):
    """A call asking for a small and a large buffer, where the small request misses
    (its fitting block is busy), keeps the idle large block for the large request (a
    miss used to free every idle block: a CSR add lost its result blocks every call);
    an idle block no request used for STALE_REQUESTS requests goes at the next miss."""
    from kernels.funcs import pool
    monkeypatch.setattr(pool, "_blocks", [])
    monkeypatch.setattr(pool, "_served", {})
    monkeypatch.setattr(pool, "MIN_BYTES", 1024)
    monkeypatch.setattr(pool, "_limit", 1000 * pool.GRAIN)
    big = pool.empty((10 * pool.GRAIN,), np.uint8)
    big_block = weakref.ref(big.base)                    # not a reference: it would be busy
    del big
    busy = pool.empty((pool.GRAIN,), np.uint8)          # a new block: none fits
    small = pool.empty((pool.GRAIN,), np.uint8)          # misses: its like is busy
    again = pool.empty((10 * pool.GRAIN,), np.uint8)
    assert again.base is big_block()                     # kept through the miss
    del again, small, busy
    for _ in range(pool.STALE_REQUESTS + 1):             # only the one-grain blocks serve
        pool.empty((pool.GRAIN,), np.uint8)
    pool.empty((3 * pool.GRAIN,), np.uint8)              # a miss: the big block is stale
    assert big_block() is None
    assert sorted(b.size for b in pool._blocks) == [3 * pool.GRAIN]   # smaller ones freed


def test_pool_cap_and_switch_off(monkeypatch):
    from kernels.funcs import pool
    monkeypatch.setattr(pool, "_blocks", [])
    monkeypatch.setattr(pool, "MIN_BYTES", 1024)
    monkeypatch.setattr(pool, "_limit", 3 * pool.GRAIN)
    a = pool.empty((2 * pool.GRAIN + 8,), np.uint8)  # a block of three grains
    b = pool.empty((1000,), np.float64)             # over the cap: plain np.empty
    assert a.base is pool._blocks[0] and b.base is None
    del a
    c = pool.empty((1000,), np.float64)             # the idle block is too big to fit,
    assert [blk.size for blk in pool._blocks] == [pool.GRAIN]   # so it made room
    assert c.base is pool._blocks[0]
    pool.set_pool_bytes(0)
    assert pool.empty((1000,), np.float64).base is None
