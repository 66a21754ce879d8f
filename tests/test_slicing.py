"""kernels.funcs.slicing: Paddle's slice bounds and index_select index checks."""
import doctest

import numpy as np
import pytest
from hypothesis import given, strategies as st

from kernels.core.meta import MetaTensor
from kernels.funcs import slicing
from kernels.funcs.slicing import (check_select_index, check_select_values, clamp_bound,
                                   cut_axes, resolve_index_select, resolve_slice, window_shape)


def paddle_bound(b, dim):
    """Paddle's rule written out independently: add dim to a negative bound, clamp."""
    if b < 0:
        b = b + dim
    if b < 0:
        return 0
    if b > dim:
        return dim
    return b


@given(st.lists(st.integers(0, 5), min_size=1, max_size=4), st.data())
def test_window_matches_numpy_slicing(shape, data):
    """The window's data is numpy's x[start:stop] with Paddle's clamping, on random bounds."""
    ndim = len(shape)
    axes = data.draw(st.lists(st.integers(-ndim, ndim - 1), unique_by=lambda a: a % ndim,
                              max_size=ndim))
    bounds = st.integers(-8, 8)
    starts = data.draw(st.lists(bounds, min_size=len(axes), max_size=len(axes)))
    ends = data.draw(st.lists(bounds, min_size=len(axes), max_size=len(axes)))
    x = np.arange(int(np.prod(shape))).reshape(shape)
    window = resolve_slice(shape, axes, starts, ends)
    ref = [slice(None)] * ndim
    for a, s, e in zip(axes, starts, ends):
        ref[a % ndim] = slice(paddle_bound(s, shape[a % ndim]), paddle_bound(e, shape[a % ndim]))
    expected = x[tuple(ref)]
    np.testing.assert_array_equal(x[window], expected)
    assert window_shape(window) == expected.shape
    assert all(0 <= w.start <= w.stop <= n for w, n in zip(window, shape))


def test_hand_worked_windows():
    assert resolve_slice((4, 5, 6), [2, 0], [-4, 1], [100, -1]) == (
        slice(1, 3), slice(0, 5), slice(2, 6))
    assert window_shape(resolve_slice((4, 5), [-1], [3], [1])) == (4, 0)
    assert window_shape(resolve_slice((0, 3), [0], [-5], [5])) == (0, 3)
    assert resolve_slice((3,), [], [], []) == (slice(0, 3),)
    assert [clamp_bound(b, 5) for b in (-2, -9, 3, 7, -5, 5)] == [3, 0, 3, 5, 0, 5]


def test_cut_axes():
    assert cut_axes((4, 5, 6), [0, 1, 2], [0, 0, 1], [4, 99, 6]) == (2,)
    assert cut_axes((4, 5), [-1], [-100], [-1]) == (1,)
    assert cut_axes((4, 5), [], [], []) == ()


@pytest.mark.parametrize("axes, starts, ends, match", [
    ([0, 1], [0], [1, 2], "lengths 2, 1 and 2"),
    ([2], [0], [1], "axes 2 is out of range"),
    ([-3], [0], [1], "axes -3 is out of range"),
    ([0, -2], [0, 0], [1, 1], "more than once"),
])
def test_slice_value_errors(axes, starts, ends, match):
    with pytest.raises(ValueError, match=f"^myop: .*{match}"):
        resolve_slice((3, 4), axes, starts, ends, op="myop")


def test_slice_type_errors():
    with pytest.raises(TypeError, match="^slice: starts must be a list of ints"):
        resolve_slice((3,), [0], [0.5], [1])
    with pytest.raises(TypeError, match="^slice: axes must be a list of ints"):
        resolve_slice((3,), ["a"], [0], [1])


def test_numpy_integer_bounds_accepted():
    w = resolve_slice((5,), [np.int64(0)], [np.int32(-2)], [np.int64(5)])
    assert w == (slice(3, 5),)


@pytest.mark.parametrize("dtype", ["int8", "int16", "uint8", "float64", "bool"])
def test_index_dtype_type_error(dtype):
    with pytest.raises(TypeError, match=f"^index_select: index dtype {dtype} .*int32 or int64"):
        check_select_index(np.zeros(2, dtype))


@pytest.mark.parametrize("shape", [(), (2, 1), (1, 2, 3)])
def test_index_rank_value_error(shape):
    with pytest.raises(ValueError, match="^index_select: index has shape .*1-D"):
        check_select_index(MetaTensor(shape, np.int64))


def test_index_meta_checks_dtype_before_rank():
    with pytest.raises(TypeError):
        check_select_index(np.zeros((2, 2), np.float32))


def test_resolve_index_select_axis():
    idx = MetaTensor((3,), np.int32)
    assert resolve_index_select((4, 5, 6), idx, -1) == 2
    assert resolve_index_select((4, 5, 6), idx, 1) == 1
    with pytest.raises(ValueError, match="^index_select: axis 3 is out of range"):
        resolve_index_select((4, 5, 6), idx, 3)
    with pytest.raises(ValueError, match="^index_select: axis 0 is out of range"):
        resolve_index_select((), idx, 0)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_select_values(dtype):
    check_select_values(np.array([0, 2, 2, 1], dtype), 3, 0)
    check_select_values(np.array([], dtype), 0, 0)
    with pytest.raises(IndexError, match=r"^index_select: index -1 at position 2 .*axis 1 "
                                          r"of size 3; expected values in \[0, 3\)"):
        check_select_values(np.array([0, 1, -1, 5], dtype), 3, 1)
    with pytest.raises(IndexError, match="index 5 at position 0"):
        check_select_values(np.array([5, 1], dtype), 3, 1)
    with pytest.raises(IndexError, match="index 0 at position 0 .*size 0"):
        check_select_values(np.array([0], dtype), 0, 0)


def test_doctests():
    res = doctest.testmod(slicing)
    assert res.failed == 0 and res.attempted > 0
