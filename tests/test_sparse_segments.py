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


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("threads_", [1, 2, 3])
@pytest.mark.parametrize("n_rows, n_keys, nnz", [(5000, 300, 200_000), (40, 2000, 90_000),
                                                  (3, 5, 70_000), (70_000, 70_000, 60_000)])
def test_group_by_key_in_row_blocks_is_one_tocsc_call_bit_for_bit(dtype, threads_, n_rows,
                                                                   n_keys, nnz, monkeypatch):
    """Blocks of rows regrouped on threads and joined key by key must give the single
    counting sort's order (a stable argsort of the keys), empty rows and keys included."""
    from kernels.funcs import threads
    monkeypatch.setattr(threads, "_num_threads", threads_)
    rng = np.random.default_rng(n_rows + threads_)
    counts = rng.multinomial(nnz, rng.dirichlet(np.ones(n_rows) * 0.3))
    row_starts = np.concatenate([[0], np.cumsum(counts)])
    keys = rng.integers(0, n_keys, nnz)
    payload = (rng.standard_normal(nnz) * 10).astype(dtype)
    bounds, rows, got = group_by_key(row_starts, keys, n_keys, payload)
    order = np.argsort(keys, kind="stable")
    np.testing.assert_array_equal(bounds, np.searchsorted(keys[order], np.arange(n_keys + 1)))
    np.testing.assert_array_equal(rows, np.repeat(np.arange(n_rows), counts)[order])
    assert got.dtype == payload.dtype
    np.testing.assert_array_equal(got.view(np.uint8), payload[order].view(np.uint8))


def test_scatter_back_sums_repeats():
    g = np.array([[1.0], [2.0], [4.0]])
    assert scatter_back(3, np.array([2, 0, 2]), g).tolist() == [[2.0], [0.0], [5.0]]
    assert scatter_back(4, slice(1, 4), g).tolist() == [[0.0], [1.0], [2.0], [4.0]]


def test_doctests():
    res = doctest.testmod(segments)
    assert res.failed == 0 and res.attempted > 0


@pytest.mark.parametrize("per_row", [0.5, 3, 40, 200])
@pytest.mark.parametrize("shape", [(7, 5), (3, 4, 5)])
@pytest.mark.parametrize("key_dtype", [np.int32, np.int64])
def test_crows_from_keys_by_search_and_by_count_match_cumulative_bincount(per_row, shape,
                                                                           key_dtype):
    """Both paths (binary search of row starts above SEARCH_PER_ROW entries per row,
    bincount below) give each batch's cumulative row counts."""
    from kernels.sparse.data import SEARCH_PER_ROW, crows_from_keys
    batch, rows = (shape[0] if len(shape) == 3 else 1), shape[-2]
    nnz = int(per_row * batch * rows)
    keys = np.sort(np.random.default_rng(2).integers(0, batch * rows, nnz)).astype(key_dtype)
    counts = np.bincount(keys, minlength=batch * rows).reshape(batch, rows)
    want = np.concatenate([np.zeros((batch, 1), int), np.cumsum(counts, axis=1)], axis=1)
    got = crows_from_keys(keys, shape, np.int64)
    assert (nnz > SEARCH_PER_ROW * batch * rows) == (per_row > SEARCH_PER_ROW)
    np.testing.assert_array_equal(got, want.reshape(-1))
