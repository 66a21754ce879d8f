"""COO restride kernel (coo_restride.cu) against numpy's reshape."""
import numpy as np
import pytest

from cuda_emu.fixtures import engine, geometry, to_host  # noqa: F401 (fixtures)
from kernels.gpu.coo_restride import coo_restride

SHAPES = [
    ((3, 4), (2, 6)),
    ((2, 3, 4), (4, 6)),
    ((2, 3, 4), (2, 12)),
    ((2, 3, 4), (24,)),
    ((24,), (2, 3, 4)),
    ((5, 1, 6), (5, 6, 1)),
    ((2, 2), (2, 1, 2)),
    ((4, 6), (4, 6)),
    ((3, 4, 5), (3, 2, 2, 5)),
    ((), (1, 1)),
    ((0, 3), (3, 0)),
]


def random_coords(shape, nnz, seed=0):
    """``nnz`` distinct coordinates of ``shape`` as a [ndim, nnz] int64 array."""
    size = int(np.prod(shape))
    flat = np.random.default_rng(seed).choice(size, size=min(nnz, size), replace=False)
    coords = np.unravel_index(flat, shape) if shape else ()
    return np.array(coords, dtype=np.int64).reshape(len(shape), len(flat))


def reference(coords, old, new, order):
    """Reshape a dense marker array and read its coordinates back."""
    dense = np.zeros(old, dtype=np.int64)
    flat = np.ravel_multi_index(tuple(coords), old) if old else np.zeros(coords.shape[1], int)
    dense.reshape(-1)[flat] = np.arange(1, coords.shape[1] + 1)
    moved = dense.reshape(new, order=order)
    where = np.argwhere(moved).T
    # put them back in input order: the marker says which nonzero is which
    return where[:, np.argsort(moved[tuple(where)])]


@pytest.mark.parametrize("old,new", SHAPES)
@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("dtypes", [("int32", None), ("int64", None), ("int32", "int64")])
def test_matches_numpy_reshape(engine, geometry, old, new, order, dtypes):
    coords = random_coords(old, 9).astype(dtypes[0])
    got = coo_restride(engine, engine.xp.asarray(coords), old, new, order=order,
                       index_dtype=dtypes[1], **geometry)
    assert got.dtype == np.dtype(dtypes[1] or dtypes[0])
    np.testing.assert_array_equal(to_host(got), reference(coords, old, new, order))


@pytest.mark.parametrize("order", ["C", "F"])
def test_nnz_zero(engine, order):
    got = coo_restride(engine, engine.xp.zeros((2, 0), np.int32), (3, 4), (4, 3), order=order)
    assert got.shape == (2, 0) and got.dtype == np.int32


HUGE = (2**20, 2**20)


def huge_coords(dtype):
    """Corners and a few inner points of HUGE; flat offsets reach 2**40 - 1."""
    return np.array([[0, 2**20 - 1, 2**20 - 1, 12345, 2**19],
                     [0, 2**20 - 1, 0, 999999, 3]], dtype=dtype)


def python_restride(coords, old, new, order):
    """Exact reference with Python integers."""
    if order == "F":
        return python_restride(coords[::-1], old[::-1], new[::-1], "C")[::-1]
    out = []
    for column in coords.T.tolist():
        flat = 0
        for c, size in zip(column, old, strict=True):
            flat = flat * size + c
        new_column = []
        for size in reversed(new):
            flat, c = divmod(flat, size)
            new_column.append(c)
        out.append(new_column[::-1])
    return np.array(out, dtype=np.int64).T


@pytest.mark.parametrize("new", [(2**10, 2**30), (2**30, 2**10), (2**5, 2**30, 2**5)])
@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_flat_offsets_above_2_pow_32(engine, geometry, new, order, dtype):
    coords = huge_coords(dtype)
    got = coo_restride(engine, engine.xp.asarray(coords), HUGE, new, order=order, **geometry)
    assert got.dtype == np.dtype(dtype)  # every new dim < 2**31: the dtype is kept
    np.testing.assert_array_equal(to_host(got), python_restride(coords, HUGE, new, order))


ODD = (3**19, 5**13)   # 1.4e18 elements: flat offsets near 2**60, no dim a power of two


@pytest.mark.parametrize("new", [(5**13, 3**19), (3**7 * 5**4, 3**12, 5**9),
                                 (3**19 * 5**13,), (3, 3**18 * 5**13)])
@pytest.mark.parametrize("order", ["C", "F"])
def test_divisions_by_odd_dims_with_flat_offsets_near_2_pow_60(engine, geometry, new, order):
    """The divisions by the new dims (multiply-and-shift, not a divide) are exact for
    every 64-bit offset: random coordinates and the corners, against Python ints."""
    rng = np.random.default_rng(7)
    coords = np.stack([rng.integers(0, d, 200, dtype=np.int64) for d in ODD])
    coords = np.concatenate([coords, [[0, 3**19 - 1, 3**19 - 1], [0, 5**13 - 1, 0]]], axis=1)
    got = coo_restride(engine, engine.xp.asarray(coords), ODD, new, order=order, **geometry)
    np.testing.assert_array_equal(to_host(got), python_restride(coords, ODD, new, order))


def test_int32_coordinates_into_a_dim_of_2_pow_40_become_int64(engine, geometry):
    coords = huge_coords(np.int32)
    got = coo_restride(engine, engine.xp.asarray(coords), HUGE, (2**40,), **geometry)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(to_host(got), python_restride(coords, HUGE, (2**40,), "C"))


def test_errors(engine):
    xp = engine.xp
    coords = xp.zeros((2, 1), np.int64)
    with pytest.raises(ValueError, match="order 'K'"):
        coo_restride(engine, coords, (3, 4), (4, 3), order="K")
    with pytest.raises(ValueError, match="does not hold"):
        coo_restride(engine, coords, (3, 4), (5, 3))
    with pytest.raises(ValueError, match=r"indices shape \[2, 1\] is not \[3, nnz\]"):
        coo_restride(engine, coords, (3, 4, 1), (12,))
    with pytest.raises(ValueError, match="cannot hold int64"):
        coo_restride(engine, coords, (3, 4), (4, 3), index_dtype=np.int32)
    with pytest.raises(TypeError, match="float64 is not int32 or int64"):
        coo_restride(engine, xp.zeros((2, 1)), (3, 4), (4, 3))
