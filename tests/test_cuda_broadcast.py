"""expand (expand.cu) against np.broadcast_to, and repeat through it against np.tile.

The launchers trust their caller's checked shapes (infer-meta owns the
errors; see tests/test_expand.py and tests/test_repeat.py).
"""
import numpy as np
import pytest

from cuda_emu.fixtures import engine, geometry, to_host  # noqa: F401 (fixtures)
from kernels.funcs.broadcast import expand_output_stride, repeat_as_expand
from kernels.gpu import expand as cuda_expand
from kernels.gpu.launch import address

# itemsizes 1, 2, 4, 8 and 16: every word kernel, and two words per item
DTYPES = ["bool", "float16", "float32", "int64", "complex64", "complex128"]


def expand(engine, x, out_shape, **geometry):
    """The launcher with expand's stride-0 output strides (the registered kernel's call)."""
    strides = expand_output_stride(x.shape, out_shape)
    return cuda_expand.expand(engine, x, out_shape, strides, **geometry)


def repeat(engine, x, repeats, **geometry):
    """The registered 'gpu' repeat's call: reshape, expand.cu, reshape."""
    in_r, exp, out_r = repeat_as_expand(x.shape, repeats)
    return expand(engine, x.reshape(in_r), exp, **geometry).reshape(out_r)


def sample(shape, dtype, seed=0):
    """Distinct-looking values of ``dtype``."""
    values = np.random.default_rng(seed).integers(-50, 50, size=shape)
    if np.dtype(dtype).kind == "c":
        return (values + 1j * (values[::-1] if values.ndim else values)).astype(dtype)
    return values.astype(dtype)


EXPANDS = [
    ((2, 1, 3), (4, 2, 5, 3)),
    ((), (3,)),
    ((), ()),
    ((1,), (0,)),
    ((3,), (2, 3)),
    ((0, 2), (3, 0, 2)),
    ((1, 1), (2, 1, 1, 7)),
    ((4, 1, 2, 1), (4, 3, 2, 2)),
]


@pytest.mark.parametrize("in_shape,out_shape", EXPANDS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_expand(engine, geometry, in_shape, out_shape, dtype):
    x = sample(in_shape, dtype)
    got = expand(engine, engine.xp.asarray(x), out_shape, **geometry)
    assert got.dtype == x.dtype and got.shape == out_shape
    np.testing.assert_array_equal(to_host(got), np.broadcast_to(x, out_shape))


def test_expand_non_contiguous_input(engine, geometry):
    x = sample((3, 1, 8), "float64")[:, :, ::3]
    got = expand(engine, engine.xp.asarray(x), (2, 3, 4, 3), **geometry)
    np.testing.assert_array_equal(to_host(got), np.broadcast_to(x, (2, 3, 4, 3)))


REPEATS = [
    ((2, 3), (2, 2)),
    ((2, 3), (3, 1, 2)),
    ((), (4,)),
    ((), ()),
    ((2,), (0,)),
    ((0, 3), (2, 2)),
    ((1,), (3,)),
    ((2, 1, 3), (1, 4, 1)),
    ((3, 2), (2, 1, 1, 3)),
]


@pytest.mark.parametrize("in_shape,repeats", REPEATS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_repeat(engine, geometry, in_shape, repeats, dtype):
    x = sample(in_shape, dtype)
    got = repeat(engine, engine.xp.asarray(x), repeats, **geometry)
    want = np.tile(x, repeats)
    assert got.dtype == x.dtype and got.shape == want.shape
    np.testing.assert_array_equal(to_host(got), want)


def test_repeat_non_contiguous_input(engine, geometry):
    x = sample((4, 6), "int32").T[::2]
    got = repeat(engine, engine.xp.asarray(x), (2, 3), **geometry)
    np.testing.assert_array_equal(to_host(got), np.tile(x, (2, 3)))


@pytest.mark.parametrize("skip, word", [(0, 16), (2, 8), (1, 4)])
def test_rows_move_in_the_widest_words_x_is_aligned_for(engine, geometry, skip, word):
    """Rows of 4 float32 (16 bytes) move as 16-byte words when x starts on a 16-byte
    boundary; 4 or 8 bytes past one, as 4- or 8-byte words (a wider load there
    would be misaligned)."""
    base = engine.xp.asarray(np.arange(32, dtype=np.float32))
    first = (-address(base) % 32) // 4 + skip          # elements to a 32-byte boundary
    x = base[first:first + 12].reshape(3, 1, 4)
    launched = []
    fetch = engine.function
    engine.function = lambda file, name: launched.append(name) or fetch(file, name)
    try:
        got = expand(engine, x, (3, 5, 4), **geometry)
    finally:
        del engine.function
    np.testing.assert_array_equal(to_host(got), np.broadcast_to(to_host(x), (3, 5, 4)))
    assert launched == [f"expand_u{8 * word}"]
