"""The portable paths run under array-api-strict and match numpy.

:func:`kernels.funcs.gather_view.checked_index` (the bounds check every
gather kernel runs, CPU and GPU alike) and
:func:`kernels.funcs.restride.restride` must use only array API operations;
array-api-strict rejects anything else.  Scatter-add, sorting, bincount and
coalesce are not array-API operations (no ``ufunc.at``/``index_add``, no
bincount, no segmented reduction), so they have a numpy implementation and a
cupy one (the same xp code through cupy, or the ``.cu`` atomics of
``gather.cu``) and are not checked here.  array-api-strict is a test
dependency: with ``REQUIRE_NVRTC=1`` (as in CI) its absence fails instead of
skipping.
"""
import os

import numpy as np
import pytest

from kernels.funcs.broadcast import expand_copy
from kernels.funcs.gather_view import checked_index
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


@pytest.mark.parametrize("bad", [5, -6])
def test_gather_bounds_check_raises_the_same_message(xps, bad):
    index = np.array([[0, 1], [bad, 0]])
    with pytest.raises(IndexError) as on_numpy:
        checked_index(index, 5, axis=1)
    with pytest.raises(IndexError) as portable:
        checked_index(strict(xps, index), 5, axis=1)
    assert str(portable.value) == str(on_numpy.value)
    assert str(portable.value).startswith(f"gather: index {bad} at position")


@pytest.mark.parametrize("index_dtype", ["int32", "int64"])
def test_gather_bounds_check_wraps_negatives(xps, index_dtype):
    index = np.array([[-5, 1], [4, -1]], index_dtype)
    got = back(xps, checked_index(strict(xps, index), 5, axis=1))
    np.testing.assert_array_equal(got, index % 5)


@pytest.mark.parametrize("order", ["C", "F"])
def test_restride(xps, order):
    old, new = (6, 4, 10), (24, 2, 5)
    coords = np.array(np.unravel_index([0, 7, 99, 150, 239], old, order=order), np.int32)
    rows = strict(xps, coords)
    got = back(xps, restride([rows[d, ...] for d in range(3)], old, new, order))
    flat = np.ravel_multi_index(tuple(coords), old, order=order)
    np.testing.assert_array_equal(got, np.unravel_index(flat, new, order=order))
