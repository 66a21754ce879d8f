"""kernels.sparse.segments: the entry bookkeeping of the structure ops, against plain numpy."""
import doctest

import numpy as np
import pytest
from hypothesis import given, strategies as st

from kernels.core.dtypes import ALL
from kernels.sparse import segments
from kernels.sparse.segments import (expand_ranges, group_by_argsort, group_by_key,
                                     scatter_back, segment_counts, select_expansion)


@given(st.lists(st.tuples(st.integers(0, 50), st.integers(0, 4)), max_size=8))
def test_expand_ranges(pairs):
    starts = np.array([s for s, _ in pairs], np.int64)
    lengths = np.array([n for _, n in pairs], np.int64)
    ref = [v for s, n in pairs for v in range(s, s + n)]
    assert expand_ranges(starts, lengths).tolist() == ref


def test_segment_counts():
    mask = np.array([1, 0, 1, 1, 0, 1], bool)
    assert segment_counts(mask, np.array([2, 0, 3, 1])).tolist() == [1, 0, 2, 1]


@given(st.lists(st.integers(0, 4), max_size=12), st.lists(st.integers(0, 4), max_size=6),
       st.sampled_from([5, 2 ** 62]))
def test_select_expansion_is_a_loop_over_index(coord, index, size):
    """Both the table path (a short axis) and the sorted-index path (an axis far
    longer than the entries, which must not allocate its length) match a loop."""
    coord, index = np.array(coord, np.int64), np.array(index, np.int64)
    src, new = select_expansion(coord, index, size)
    ref = [(e, j) for e, c in enumerate(coord) for j, i in enumerate(index) if i == c]
    assert list(zip(src.tolist(), new.tolist())) == ref


@pytest.mark.parametrize("dtype", ALL)
def test_group_by_key_scipy_and_argsort_paths_agree(dtype):
    rng = np.random.default_rng(0)
    row_starts = np.array([0, 3, 3, 7, 10])
    keys = rng.integers(0, 6, 10)
    payload = (rng.standard_normal(10) * 10).astype(dtype)
    a = group_by_key(row_starts, keys, 6, payload)
    b = group_by_argsort(row_starts, keys, 6, payload)
    order = np.argsort(keys, kind="stable")
    rows = np.repeat(np.arange(4), np.diff(row_starts))
    np.testing.assert_array_equal(a[0], np.searchsorted(keys[order], np.arange(7)))
    for got in (a, b):
        np.testing.assert_array_equal(got[0], a[0])
        np.testing.assert_array_equal(got[1], rows[order])
        assert got[2].dtype == payload.dtype
        np.testing.assert_array_equal(got[2], payload[order])


def test_scatter_back_sums_repeats():
    g = np.array([[1.0], [2.0], [4.0]])
    assert scatter_back(3, np.array([2, 0, 2]), g).tolist() == [[2.0], [0.0], [5.0]]
    assert scatter_back(4, slice(1, 4), g).tolist() == [[0.0], [1.0], [2.0], [4.0]]


def test_doctests():
    res = doctest.testmod(segments)
    assert res.failed == 0 and res.attempted > 0
