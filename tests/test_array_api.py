"""The portable paths run under array-api-strict and match numpy.

:mod:`kernels.funcs.portable` (expand, repeat, the gather forward and its
bounds check) and :func:`kernels.funcs.restride.restride` must use only
array API operations; array-api-strict rejects anything else.  Scatter-add,
sorting, bincount and coalesce are declared non-portable (see the portable
module's docstring) and are not checked here.  array-api-strict is a test
dependency: with ``REQUIRE_NVRTC=1`` (as in CI) its absence fails instead of
skipping.
"""
import os

import numpy as np
import pytest

from kernels.dense.gather import checked_index
from kernels.funcs.broadcast import expand_copy
from kernels.funcs.portable import broadcast_copy, check_index, gather, tile
from kernels.funcs.restride import restride


@pytest.fixture(scope="module")
def xps():
    """The array_api_strict namespace; a failure instead of a skip under REQUIRE_NVRTC=1."""
    try:
        import array_api_strict
    except ImportError as exc:
        if os.environ.get("REQUIRE_NVRTC") == "1":
            pytest.fail(f"REQUIRE_NVRTC=1 but array-api-strict is missing: {exc}")
        pytest.skip(f"array-api-strict is not installed: {exc}")
    return array_api_strict


def strict(xps, a):
    return xps.asarray(np.asarray(a))


def back(xps, out):
    """A strict result as numpy, after checking it stayed in the strict namespace."""
    assert out.__array_namespace__() is xps
    return np.asarray(out)


def sample(shape, dtype="float64"):
    return (np.arange(int(np.prod(shape))).reshape(shape) % 7 - 3).astype(dtype)


def test_strict_arrays_reject_the_numpy_fast_path(xps):
    """The check has teeth: the CPU expand kernel's numpy-only copy fails on them."""
    with pytest.raises((AttributeError, TypeError)):
        expand_copy(strict(xps, sample((2, 1))), (2, 3))


@pytest.mark.parametrize("x_shape,shape", [((3, 1, 4), (2, 3, 5, 4)), ((), (2, 3)),
                                           ((0, 1), (2, 0, 4)), ((4,), (4,))])
@pytest.mark.parametrize("dtype", ["bool", "int8", "int64", "float32", "complex128"])
def test_expand(xps, x_shape, shape, dtype):
    x = sample(x_shape, dtype)
    got = back(xps, broadcast_copy(strict(xps, x), shape))
    assert got.dtype == x.dtype
    np.testing.assert_array_equal(got, np.broadcast_to(x, shape))


@pytest.mark.parametrize("x_shape,repeats", [((2, 3), (2, 2)), ((3,), (2, 1, 3)),
                                             ((2, 1, 4), (1, 5, 2)), ((0, 2), (3, 2)),
                                             ((2, 3), (0, 1)), ((), (3,)), ((), ())])
def test_repeat(xps, x_shape, repeats):
    x = sample(x_shape)
    np.testing.assert_array_equal(back(xps, tile(strict(xps, x), repeats)), np.tile(x, repeats))


def reference_gather(x, index, axis, batch_dims):
    """tf.gather with batch_dims: np.take in every batch."""
    axis = axis % x.ndim
    out = np.empty(x.shape[:axis] + index.shape[batch_dims:] + x.shape[axis + 1:], x.dtype)
    for b in np.ndindex(*x.shape[:batch_dims]):
        out[b] = np.take(x[b], index[b], axis=axis - batch_dims)
    return out


@pytest.mark.parametrize("x_shape,i_shape,axis,bd", [
    ((5, 3), (4,), 0, 0), ((2, 6, 3), (2, 5), 1, 0), ((4, 6), (3, 2), -1, 0),
    ((3, 4, 5), (3, 7), 2, 1), ((2, 3, 4, 2), (2, 3, 5), 3, 2), ((3, 4), (3, 0), 1, 1),
    ((3, 4), (), 1, 0), ((0, 3), (2,), 1, 0)])
@pytest.mark.parametrize("index_dtype", ["int32", "int64"])
def test_gather(xps, x_shape, i_shape, axis, bd, index_dtype):
    x = sample(x_shape)
    size = x_shape[axis]
    index = np.random.default_rng(0).integers(-size, size, i_shape).astype(index_dtype)
    got = back(xps, gather(strict(xps, x), strict(xps, index), axis, bd))
    np.testing.assert_array_equal(got, reference_gather(x, index, axis, bd))


@pytest.mark.parametrize("bad", [5, -6])
def test_gather_bounds_check_raises_the_cpu_message(xps, bad):
    index = np.array([[0, 1], [bad, 0]])
    with pytest.raises(IndexError) as cpu:
        checked_index(index, 5, axis=1)
    with pytest.raises(IndexError) as portable:
        check_index(strict(xps, index), 5, axis=1)
    assert str(portable.value) == str(cpu.value)
    with pytest.raises(IndexError, match=f"^gather: index {bad} at position"):
        gather(strict(xps, np.zeros((2, 5))), strict(xps, index), 1)


@pytest.mark.parametrize("order", ["C", "F"])
def test_restride(xps, order):
    old, new = (6, 4, 10), (24, 2, 5)
    coords = np.array(np.unravel_index([0, 7, 99, 150, 239], old, order=order), np.int32)
    rows = strict(xps, coords)
    got = back(xps, restride([rows[d, ...] for d in range(3)], old, new, order))
    flat = np.ravel_multi_index(tuple(coords), old, order=order)
    np.testing.assert_array_equal(got, np.unravel_index(flat, new, order=order))


def test_docstring_examples_run():
    import doctest

    from kernels.funcs import portable
    res = doctest.testmod(portable, optionflags=doctest.ELLIPSIS)
    assert res.failed == 0 and res.attempted > 0
