"""The shared flat-index restriding function: grouping, dtypes, portability."""
import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kernels.funcs.restride import group_dims, index_dtype, restride


def _reference(coords, old, new, order):
    flat = np.ravel_multi_index(tuple(np.asarray(coords, np.int64)), old, order=order)
    return np.array(np.unravel_index(flat, new, order=order)).reshape(len(new), -1)


@pytest.mark.parametrize("old, new, groups", [
    ((1000, 1000, 1000), (1000000, 1000), [((0, 1), (0,)), ((2,), (1,))]),
    ((4096, 4096), (256, 256, 256), [((0, 1), (0, 1, 2))]),
    ((6, 4, 10), (24, 2, 5), [((0, 1), (0,)), ((2,), (1, 2))]),
    ((2, 3, 4, 5), (2, 12, 5), [((0,), (0,)), ((1, 2), (1,)), ((3,), (2,))]),
    ((1, 5, 1), (5, 1, 1), [((1,), (0,))]),
    ((3, 5), (5, 3), [((0, 1), (0, 1))]),
])
def test_group_dims_splits_at_common_prefix_products(old, new, groups):
    assert group_dims(old, new) == groups


@st.composite
def shapes(draw):
    old = draw(st.lists(st.integers(1, 6), min_size=1, max_size=5))
    factors = draw(st.permutations([p for s in old for p in _primes(s)]))
    cuts = sorted(draw(st.lists(st.integers(0, len(factors)), max_size=4)))
    bounds = [0] + cuts + [len(factors)]
    new = [int(np.prod(factors[a:b])) for a, b in itertools.pairwise(bounds)]
    return tuple(old), tuple(new)


def _primes(n):
    out, p = [], 2
    while n > 1:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    return out


@given(case=shapes(), order=st.sampled_from("CF"), dtype=st.sampled_from([np.int32, np.int64]),
       seed=st.integers(0, 2**16))
def test_restride_matches_numpy_ravel_unravel(case, order, dtype, seed):
    old, new = case
    rng = np.random.default_rng(seed)
    coords = np.array([rng.integers(0, s, 25) for s in old], dtype=dtype)
    out = restride(list(coords), old, new, order)
    assert out.dtype == dtype and out.shape == (len(new), 25)
    np.testing.assert_array_equal(out, _reference(coords, old, new, order))
    for g_old, g_new in group_dims(old, new):   # each group has equal element counts
        assert np.prod([old[i] for i in g_old]) == np.prod([new[j] for j in g_new])


def test_int32_coordinates_with_a_group_beyond_int32_use_int64_arithmetic():
    old, new = (2**20, 2**20), (2**10, 2**30)
    coords = np.array([[2**20 - 1, 5, 0], [2**20 - 1, 7, 2**20 - 1]], np.int32)
    out = restride(list(coords), old, new)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, _reference(coords, old, new, "C"))


def test_output_dtype_and_explicit_destinations():
    coords = [np.array([3, 1], np.int32), np.array([2, 0], np.int32)]
    assert restride(coords, (4, 5), (20,)).dtype == np.int32
    assert restride(coords, (4, 5), (20,), dtype=np.int64).dtype == np.int64
    dst = [np.empty(2, np.int64), np.empty(2, np.int64)]
    assert restride(coords, (4, 5), (2, 10), out=dst) is dst
    np.testing.assert_array_equal(np.array(dst), [[1, 0], [7, 5]])
    assert index_dtype((2**31 - 1,), np.int32) == np.int32
    assert index_dtype((2**31,), np.int32) == np.int64
    assert index_dtype((5,), np.int32, extent=2**31) == np.int64


def test_inputs_are_not_written():
    coords = np.array([[1, 2], [3, 0]])
    coords.flags.writeable = False
    restride(list(coords), (3, 4), (2, 6))
    restride(list(coords), (3, 4), (12,), order="F")


def test_empty_and_zero_size():
    rows = [np.zeros(0, np.int64)] * 2
    assert restride(rows, (0, 3), (3, 0)).shape == (2, 0)
    assert restride(rows, (2, 3), (6,)).shape == (1, 0)


@pytest.mark.parametrize("order", ["C", "F"])
def test_restride_uses_only_array_api_operations(order):
    xps = pytest.importorskip("array_api_strict")
    rng = np.random.default_rng(3)
    for old, new in [((6, 4, 10), (24, 2, 5)), ((4, 6), (2, 2, 6)), ((1, 8), (8, 1)),
                     ((2**20, 2**20), (2**10, 2**30))]:
        coords = np.array([rng.integers(0, s, 16) for s in old], np.int32)
        a = xps.asarray(coords)
        out = restride([a[d, ...] for d in range(len(old))], old, new, order)
        assert out.dtype == xps.int32
        np.testing.assert_array_equal(np.asarray(out), _reference(coords, old, new, order))


@pytest.mark.parametrize("old, new", [((6, 4, 10), (24, 2, 5)), ((50, 60), (3000,)),
                                      ((30, 40, 5), (1, 1200, 5)),
                                      ((2**20, 2**20), (2**10, 2**30))])
def test_threads_and_blocks_cover_every_entry(monkeypatch, old, new):
    import kernels.funcs.restride as mod
    from kernels.funcs import threads
    monkeypatch.setattr(mod, "BLOCK", 997)
    monkeypatch.setattr(threads, "MIN_BYTES_PER_THREAD", 1)
    monkeypatch.setattr(threads, "_num_threads", 3)
    rng = np.random.default_rng(4)
    coords = np.array([rng.integers(0, s, 10_001) for s in old], np.int32)
    for order in "CF":
        out = restride(list(coords), old, new, order)
        np.testing.assert_array_equal(out, _reference(coords, old, new, order))
