"""gather / gather_grad kernels (gather.cu) behind the bounds pre-pass.

The wrappers below make the registered 'gpu' kernels' calls: the one shape
validator (``gather_view``), the one bounds check (``checked_index``), then
the launcher with forced geometries.
"""
import numpy as np
import pytest

from cuda_emu.fixtures import engine, geometry, to_host  # noqa: F401 (fixtures)
from kernels.funcs.gather_view import checked_index, gather_view
from kernels.gpu import gather as cuda

def gather(engine, x, index, axis=None, batch_dims=0, offset=0, gather_size=None, **geometry):
    view = gather_view(x.shape, index.shape, axis, batch_dims)
    index = checked_index(index, view.size if gather_size is None else gather_size, view.axis)
    return cuda.gather(engine, x, index, view, offset, **geometry)


def gather_grad(engine, out_grad, index, x_shape, axis=None, batch_dims=0, offset=0,
                gather_size=None, **geometry):
    view = gather_view(x_shape, index.shape, axis, batch_dims, "gather_grad")
    size = view.size if gather_size is None else gather_size
    index = checked_index(index, size, view.axis, "gather_grad")
    return cuda.gather_grad(engine, out_grad, index, view, x_shape, offset, **geometry)


DTYPES = ["bool", "float16", "float32", "int64", "complex128"]


def sample(shape, dtype, seed=0):
    """Integer-valued data of ``dtype`` (so float sums are exact)."""
    rng = np.random.default_rng(seed)
    values = rng.integers(-9, 10, size=shape)
    if np.dtype(dtype).kind == "c":
        return (values + 1j * rng.integers(-9, 10, size=shape)).astype(dtype)
    return values.astype(dtype)


def indices(shape, size, dtype, seed=1):
    """Values in [-size, size): negatives and duplicates included."""
    return np.random.default_rng(seed).integers(-size, size, size=shape).astype(dtype)


def reference(x, index, axis, batch_dims):
    """tf.gather with batch_dims: np.take per batch element."""
    out = np.empty(x.shape[:axis] + index.shape[batch_dims:] + x.shape[axis + 1:], x.dtype)
    for b in np.ndindex(x.shape[:batch_dims]):
        out[b] = np.take(x[b], index[b], axis=axis - batch_dims)
    return out


def reference_grad(out_grad, index, x_shape, axis, batch_dims):
    """np.add.at per batch element, accumulated in the grad's dtype."""
    x_grad = np.zeros(x_shape, out_grad.dtype)
    for b in np.ndindex(x_shape[:batch_dims]):
        where = (slice(None),) * (axis - batch_dims) + (index[b],)
        np.add.at(x_grad[b], where, out_grad[b])
    return x_grad


def normalized(x_shape, index_shape, axis, batch_dims):
    """Non-negative (axis, batch_dims) as tf.gather reads them."""
    bd = batch_dims + len(index_shape) if batch_dims < 0 else batch_dims
    return (bd if axis is None else axis % len(x_shape)), bd


# (x shape, index shape, axis, batch_dims)
CASES = [
    ((6,), (4,), 0, 0),
    ((4, 5, 3), (2, 3), 1, 0),
    ((4, 5, 3), (7,), -1, 0),
    ((4, 5, 3), (), 0, 0),
    ((2, 3, 5, 4), (2, 3, 6), 2, 2),
    ((2, 3, 5, 4), (2, 3, 6), 3, 2),
    ((2, 3, 5, 4), (2, 7), 2, 1),
    ((2, 3, 5), (2, 3), 2, 2),
    ((2, 3, 5), (2, 3, 4), None, -1),
    ((3, 0, 4), (5,), 2, 0),
    ((3, 4), (0, 2), 1, 0),
]


@pytest.mark.parametrize("x_shape,index_shape,axis,batch_dims", CASES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("index_dtype", ["int32", "int64"])
def test_gather(engine, geometry, x_shape, index_shape, axis, batch_dims, dtype, index_dtype):
    axis_n, bd = normalized(x_shape, index_shape, axis, batch_dims)
    x = sample(x_shape, dtype)
    index = indices(index_shape, x_shape[axis_n], index_dtype)
    xp = engine.xp
    got = gather(engine, xp.asarray(x), xp.asarray(index), axis, batch_dims, **geometry)
    want = reference(x, index, axis_n, bd)
    assert got.dtype == x.dtype and got.shape == want.shape
    np.testing.assert_array_equal(to_host(got), want)


@pytest.mark.parametrize("index_dtype", ["int32", "int64"])
@pytest.mark.parametrize("dtype", ["float64", "float32", "complex128", "int16"])
def test_split_axis_zero_fills_and_sums_to_the_full_gather(engine, geometry, index_dtype,
                                                            dtype):
    """Rows outside a rank's slice are the dtype's additive identity (-0.0 for floats, in
    every component), so the ranks' sum is the gather bit for bit, x's -0.0 included."""
    x = sample((4, 6, 3), dtype)
    if x.dtype.kind in "fc":
        x[:, ::2, 1] = -0.0
    index = indices((2, 5), 6, index_dtype)
    xp = engine.xp
    parts = []
    for start, stop in [(0, 2), (2, 3), (3, 6)]:
        part = to_host(gather(engine, xp.asarray(x[:, start:stop]), xp.asarray(index), 1,
                              offset=start, gather_size=6, **geometry))
        mine = ((index % 6 >= start) & (index % 6 < stop))[None, :, :, None]
        outside = part[np.broadcast_to(~mine, part.shape)]
        assert not np.any(outside)
        if x.dtype.kind in "fc":
            assert np.all(np.signbit(outside.view(outside.real.dtype)))
        parts.append(part)
    total, want = parts[0] + parts[1] + parts[2], np.take(x, index, axis=1)   # no 0 + ...
    np.testing.assert_array_equal(total, want)
    assert np.array_equal(np.signbit(total.view(want.real.dtype)),
                          np.signbit(want.view(want.real.dtype)))


class NoLaunch:
    """A backend that fails the test if anything is launched."""

    xp = np

    def function(self, file, name):
        raise AssertionError(f"{name} launched before the bounds check")


@pytest.mark.parametrize("bad,where", [(5, (1, 0)), (-6, (0, 1))])
def test_out_of_range_raises_before_any_launch(bad, where):
    index = np.array([[0, -5], [4, 4]])
    index[where] = bad
    with pytest.raises(IndexError, match=rf"^gather: index {bad} at position \({where[0]}, "
                                         rf"{where[1]}\) is out of range for axis 1 of size 5; "
                                         rf"expected values in \[-5, 5\)$"):
        gather(NoLaunch(), np.zeros((2, 5)), index, 1)
    with pytest.raises(IndexError, match=f"gather_grad: index {bad}"):
        gather_grad(NoLaunch(), np.zeros((2, 2, 2)), index, (2, 5), 1)


def test_out_of_range_on_backend(engine):
    xp = engine.xp
    with pytest.raises(IndexError, match=r"index 3 at position \(2,\)"):
        gather(engine, xp.zeros((3, 3)), xp.asarray([0, -3, 3, 9]), 0)
    with pytest.raises(IndexError, match=r"out of range for axis 0 of size 0; expected "
                                         r"values in \[0, 0\)"):
        gather(engine, xp.zeros((0, 3)), xp.asarray([0]), 0)


def test_checked_index_wraps_like_numpy():
    index = np.array([-3, -1, 0, 2], np.int32)
    got = checked_index(index, 3, 0)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, [0, 2, 0, 2])
    huge = checked_index(index, 2**31 + 5, 0)
    assert huge.dtype == np.int64
    np.testing.assert_array_equal(huge, [2**31 + 2, 2**31 + 4, 0, 2])


@pytest.mark.parametrize("x_shape,index_shape,axis,batch_dims", CASES)
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "complex64", "complex128"])
@pytest.mark.parametrize("index_dtype", ["int32", "int64"])
def test_gather_grad(engine, geometry, x_shape, index_shape, axis, batch_dims, dtype, index_dtype):
    axis_n, bd = normalized(x_shape, index_shape, axis, batch_dims)
    index = indices(index_shape, x_shape[axis_n], index_dtype)
    out_grad = sample(reference(np.zeros(x_shape), index, axis_n, bd).shape, dtype)
    xp = engine.xp
    got = gather_grad(engine, xp.asarray(out_grad), xp.asarray(index), x_shape, axis,
                      batch_dims, **geometry)
    assert got.dtype == out_grad.dtype and got.shape == x_shape
    want = reference_grad(out_grad, index, x_shape, axis_n, bd)
    np.testing.assert_array_equal(to_host(got), want)


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64"])
def test_gather_grad_atomics_under_heavy_collisions(engine, geometry, dtype):
    """Every output adds into one of three cells, from racing blocks."""
    index = np.tile([0, 1, 2], 700)
    out_grad = sample((2, index.size), dtype)
    got = gather_grad(engine, engine.xp.asarray(out_grad), engine.xp.asarray(index), (2, 3), 1,
                      **geometry)
    np.testing.assert_array_equal(to_host(got), reference_grad(out_grad, index, (2, 3), 1, 0))


def test_gather_grad_float16_accumulates_in_float32(engine):
    """float16 atomics would stop at 2048 (2048 + 1 rounds back to 2048)."""
    index = np.zeros(4096, np.int64)
    out_grad = np.ones(4096, np.float16)
    got = gather_grad(engine, engine.xp.asarray(out_grad), engine.xp.asarray(index), (2,), 0)
    assert got.dtype == np.float16
    np.testing.assert_array_equal(to_host(got), [4096, 0])


def test_gather_grad_split_axis(engine, geometry):
    index = indices((2, 5), 6, "int64")
    out_grad = sample((4, 2, 5, 3), "float64")
    xp = engine.xp
    parts = [to_host(gather_grad(engine, xp.asarray(out_grad), xp.asarray(index),
                                 (4, stop - start, 3), 1, offset=start, gather_size=6, **geometry))
             for start, stop in [(0, 2), (2, 3), (3, 6)]]
    np.testing.assert_array_equal(np.concatenate(parts, axis=1),
                                  reference_grad(out_grad, index, (4, 6, 3), 1, 0))
