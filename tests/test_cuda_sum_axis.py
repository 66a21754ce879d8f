"""sum_axis (sum_axis.cu) against numpy, and sum_to_shape's GPU path (its coalesced runs,
one launch or cupy sum each) with the kernel on the emulator or a real GPU."""
import numpy as np
import pytest

from cuda_emu.fixtures import engine, geometry, to_host  # noqa: F401 (fixtures)
from kernels.funcs import sum_to_shape as sts
from kernels.gpu import backend as gpu_backend
from kernels.gpu.sum_axis import sum_axis

DTYPES = ["float32", "float64", "complex64", "complex128"]


def sample(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


@pytest.mark.parametrize("shape", [(1, 1, 1), (3, 5, 7), (2, 1, 40), (4, 33, 1), (1, 0, 3),
                                   (0, 2, 3)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_sum_axis_matches_numpy(engine, geometry, shape, dtype):
    v = sample(shape, dtype)
    got = to_host(sum_axis(engine, engine.xp.asarray(v), **geometry))
    assert got.dtype == v.dtype and got.shape == (shape[0], shape[2])
    wide = v.astype(np.complex128 if v.dtype.kind == "c" else np.float64)
    rtol = 1e-6 if dtype in ("float32", "complex64") else 1e-13
    np.testing.assert_allclose(got, wide.sum(axis=1), rtol=rtol)


def test_float32_terms_add_in_float64():
    """2**24 + 1 + 1 is 2**24 + 2 in float64 and 2**24 in float32 added in order."""
    from cuda_emu.backend import EmuBackend
    v = np.array([2.0**24, 1.0, 1.0], np.float32).reshape(1, 3, 1)
    assert sum_axis(EmuBackend(), v)[0, 0] == 2.0**24 + 2


@pytest.fixture
def on_device(engine, monkeypatch):
    monkeypatch.setattr(gpu_backend, "_device", engine)
    return engine


@pytest.mark.parametrize("shape, axes", [
    ((16, 64, 40), (1,)),                       # expand_grad: a middle run
    ((2, 5, 3, 6, 4, 40), (0, 2, 4)),            # repeat_grad: three runs, innermost first
    ((3, 4, 5), (2,)),                          # a trailing run: cupy's sum
    ((7, 50), (0,)), ((6, 2, 48), (0, 1))])
@pytest.mark.parametrize("dtype", ["float32", "complex128", "int32"])
def test_sum_to_shape_gpu_path_matches_numpy(on_device, shape, axes, dtype):
    g = sample(shape, dtype) if dtype != "int32" else np.arange(np.prod(shape),
                                                                 dtype=dtype).reshape(shape)
    got = to_host(sts._sum_gpu(on_device.xp.asarray(g), axes))   # in coalesced dims
    want = g.sum(axis=axes, dtype=np.float64 if dtype == "float32" else None)
    assert got.dtype == g.dtype
    scale = float(np.abs(g).sum(axis=axes).max()) if g.size else 0.0  # a pass rounds once
    np.testing.assert_allclose(got.reshape(want.shape), want.astype(g.dtype), rtol=1e-6,
                               atol=1e-6 * scale)
