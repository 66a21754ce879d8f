"""dense.repeat: the reshape/expand/reshape decomposition of OneFlow's expand/repeat article,
the kernel and its gradient kernel, errors, gradients, properties."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dense
from kernels.core.dtypes import ALL
from kernels.core.meta import MetaTensor
from kernels.dense.repeat import repeat, repeat_grad
from kernels.funcs.broadcast import repeat_as_expand
from kernels.infermeta import resolve_expand, resolve_repeat


def _tile_grad(x_shape, repeats, w):
    """Reference gradient: add each output's weight into the x element np.tile copies."""
    size = int(np.prod(x_shape, dtype=np.int64))
    src = np.tile(np.arange(size).reshape(x_shape), repeats)
    g = np.zeros(size, w.dtype)
    np.add.at(g, src.ravel(), w.ravel())
    return g.reshape(x_shape)


# ------------------------------------------------ the expand/repeat article's examples
@pytest.mark.parametrize("in_shape, repeats, in_r, exp, out_r", [
    ((5,), (3,), (1, 5), (3, 5), (15,)),
    ((3, 1, 5), (5, 3, 1), (1, 3, 1, 5), (5, 3, 3, 5), (15, 3, 5)),
    ((3, 1, 5), (2, 5, 3, 1), (1, 3, 1, 5), (2, 5, 3, 3, 5), (2, 15, 3, 5)),
])
def test_article_worked_examples(in_shape, repeats, in_r, exp, out_r):
    assert repeat_as_expand(in_shape, repeats) == (in_r, exp, out_r)
    x = np.arange(np.prod(in_shape)).reshape(in_shape)
    via = np.broadcast_to(x.reshape(in_r), exp).reshape(out_r)
    np.testing.assert_array_equal(via, np.tile(x, repeats))


def test_article_output_shape_example():
    assert resolve_repeat((4, 1, 3, 5), (2, 1, 2, 4, 1, 1)) == (2, 1, 8, 4, 3, 5)


@pytest.mark.parametrize("in_shape, repeats, expect", [
    ((3,), (0,), ((1, 3), (0, 3), (0,))),            # the article treats 0 like 1: (3,)
    ((3, 1), (2, 0), ((1, 3, 1), (2, 3, 0), (6, 0))),
    ((0, 2), (2, 1), ((1, 0, 2), (2, 0, 2), (0, 2))),  # the article expands 0 to 2
    ((0,), (0,), ((1, 0), (0, 0), (0,))),
    ((0,), (1,), ((0,), (0,), (0,))),
    ((), (0, 2), ((), (0, 2), (0, 2))),
])
def test_decomposition_handles_zero_counts_and_sizes(in_shape, repeats, expect):
    assert repeat_as_expand(in_shape, repeats) == expect


# ------------------------------------------------------------ kernels vs np.tile
@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_kernel_matches_tile_for_every_dtype(dtype):
    rng = np.random.default_rng(0)
    for shape, reps in [((2, 3), (2, 2)), ((3, 1, 5), (2, 5, 3, 1)), ((), (3,)),
                        ((2, 0), (1, 3)), ((2, 3), (0, 1)), ((4,), (1,))]:
        x = (rng.standard_normal(shape) * 3).astype(dtype)
        out = repeat(x, reps)
        ref = np.tile(x, reps)
        assert out.shape == ref.shape and out.dtype == ref.dtype
        np.testing.assert_array_equal(out, ref)
        assert out.size == 0 or not np.shares_memory(out, x)


def test_kernel_takes_strided_inputs():
    base = np.arange(60.0).reshape(3, 4, 5)
    for view in (base[::2, ::-1], base.T, base[:, 1]):
        np.testing.assert_array_equal(repeat(view, (2,) * (view.ndim + 1)),
                                      np.tile(view, (2,) * (view.ndim + 1)))


def test_method_takes_counts_or_a_list(backend):
    x = dense.to_tensor(np.arange(6).reshape(2, 3), place=backend)
    ref = np.tile(x.numpy(), (2, 1, 3))
    for out in (x.repeat(2, 1, 3), x.repeat([2, 1, 3]), x.repeat((2, 1, 3))):
        np.testing.assert_array_equal(out.numpy(), ref)


# ------------------------------------------------------------ errors
@pytest.mark.parametrize("in_shape, repeats, match", [
    ((2, 3), [2], r"repeat: repeats \[2\] has 1 entries, fewer than the 2 dims of x"),
    ((2,), [], r"repeat: repeats \[\] has 0 entries"),
    ((2, 3), [1, -1], r"repeat: repeats \[1, -1\]: dim 1 has the negative count -1"),
    ((2,), [-2, 1], r"repeat: .*dim 0 has the negative count -2"),
])
def test_errors(in_shape, repeats, match):
    with pytest.raises(ValueError, match=match):
        dense.repeat(dense.to_tensor(np.zeros(in_shape)), repeats)
    with pytest.raises(ValueError, match=match):
        dense.repeat.infer_meta(MetaTensor(in_shape, np.float64), repeats)


def test_too_many_elements_raises():
    with pytest.raises(ValueError, match="repeat: shape .* more than 2\\*\\*63 - 1"):
        dense.repeat(dense.to_tensor(np.ones(2)), [2 ** 40, 2 ** 40])


# ------------------------------------------------------------ gradients
def test_gradient_closed_form(backend):
    rng = np.random.default_rng(1)
    x = dense.to_tensor(rng.standard_normal((2, 3)), place=backend, stop_gradient=False)
    w = rng.standard_normal((4, 4, 3))
    dense.repeat(x, [4, 2, 1]).backward(dense.to_tensor(w, place=backend))
    expect = w.reshape(4, 2, 2, 1, 3).sum(axis=(0, 1, 3))
    np.testing.assert_allclose(x.grad.numpy(), expect, rtol=1e-12)


def test_gradient_of_ones_counts_the_copies():
    x = dense.to_tensor(np.ones((3, 1, 5)), stop_gradient=False)
    x.repeat(2, 5, 3, 1).backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((3, 1, 5), 30.0))


@pytest.mark.parametrize("in_shape, repeats", [
    ((2, 3), [0, 1]), ((2, 3), [2, 2, 0]), ((), [0]), ((0, 3), [2, 1]), ((0, 0), [3, 0, 2]),
    ((2, 0), [3, 0, 1]), ((1, 0, 2), [0, 2, 1])])
def test_zero_size_output_gives_zero_gradient(in_shape, repeats):
    x = dense.to_tensor(np.ones(in_shape), stop_gradient=False)
    out = dense.repeat(x, repeats)
    assert out.size == 0
    out.backward()
    assert x.grad.shape == list(in_shape)
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros(in_shape))


@pytest.mark.parametrize("in_shape, repeats", [((3, 1, 5), (2, 5, 3, 1)), ((2, 3), (4, 0, 1)),
                                             ((0, 3), (4, 2, 1)), ((), (3, 2))])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64])
def test_grad_kernel_sums_every_copy(in_shape, repeats, dtype):
    """repeat_grad is expand's gradient on the reshape -> expand view: a scatter of the copies."""
    w = (np.random.default_rng(2).standard_normal(resolve_repeat(in_shape, repeats)) * 4)
    w = w.astype(dtype)
    got = repeat_grad(MetaTensor(in_shape, dtype), w, repeats)
    assert got.shape == in_shape and got.dtype == dtype
    np.testing.assert_allclose(got, _tile_grad(in_shape, repeats, w), rtol=1e-5)


# ------------------------------------------------------------ properties
_shapes = st.lists(st.sampled_from([0, 1, 1, 2, 3]), min_size=0, max_size=3)


@st.composite
def _repeat_case(draw):
    shape = tuple(draw(_shapes))
    extra = draw(st.integers(0, 2))
    reps = tuple(draw(st.lists(st.integers(0, 3), min_size=len(shape) + extra,
                               max_size=len(shape) + extra)))
    return shape, reps


@given(_repeat_case())
def test_decomposition_is_a_valid_expand_that_tiles(case):
    shape, reps = case
    in_r, exp, out_r = repeat_as_expand(shape, reps)
    assert resolve_expand(in_r, exp) == exp      # the article's expand rules hold
    assert out_r == resolve_repeat(shape, reps)
    x = np.arange(int(np.prod(shape))).reshape(shape)
    np.testing.assert_array_equal(np.broadcast_to(x.reshape(in_r), exp).reshape(out_r),
                                  np.tile(x, reps))


@given(_repeat_case())
def test_repeat_matches_tile_and_its_gradient_matches_scatter(case):
    shape, reps = case
    rng = np.random.default_rng(0)
    x = dense.to_tensor(rng.standard_normal(shape), stop_gradient=False)
    out = dense.repeat(x, reps)
    np.testing.assert_array_equal(out.numpy(), np.tile(x.numpy(), reps))
    w = rng.standard_normal(out.shape)
    out.backward(dense.to_tensor(w))
    np.testing.assert_allclose(x.grad.numpy(), _tile_grad(shape, reps, w), rtol=1e-10,
                               atol=1e-12)
