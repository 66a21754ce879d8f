"""Launch geometry, GPU detection, the emulator's strictness, kernel coverage."""
import types

import numpy as np
import pytest

from cuda_emu.backend import EmuBackend
from cuda_emu.build import parse_kernels, preprocess
from cuda_emu.fixtures import usable_gpu_or_skip
from kernels.gpu import SOURCE_DIR, cu_files
from kernels.funcs.gather_view import gather_view
from kernels.gpu import coo_restride, csr_coo, expand, gather, sddmm, spmm, sum_axis
from kernels.gpu.backend import CupyBackend, gpu_available, launch_config, require_gpu


def test_launch_config():
    assert launch_config(1) == ((1,), (256,))
    assert launch_config(257) == ((2,), (256,))
    assert launch_config(10**12) == ((65535,), (256,))
    assert launch_config(10**6, grid=1, block=1) == ((1,), (1,))
    with pytest.raises(ValueError, match="block 2048"):
        launch_config(5, block=2048)
    with pytest.raises(ValueError, match="grid 0"):
        launch_config(5, grid=0)


def test_launch_takes_a_tuned_geometry_unless_one_is_forced():
    from kernels.gpu.launch import launch
    seen = []
    fake = types.SimpleNamespace(
        function=lambda file, name: lambda grid, block, args: seen.append((grid, block)))
    n = 10**9
    for name in ("coo_restride_i64_i32", "gather_grad_f32_i64", "expand_u32"):
        launch(fake, "any.cu", name, n, ())
    launch(fake, "any.cu", "coo_restride_i64_i32", n, (), grid=3)
    launch(fake, "any.cu", "gather_grad_f32_i64", n, (), block=64)
    assert seen == [((65535,), (128,)), ((2**20,), (128,)), ((65535,), (256,)),
                    ((3,), (256,)), ((65535,), (64,))]


def test_without_a_gpu_the_cupy_backend_says_what_is_missing():
    if gpu_available():
        pytest.skip("a GPU is available here")
    with pytest.raises(RuntimeError, match=r"^expand: cupy is (not installed|installed but)"):
        require_gpu("expand")
    with pytest.raises(RuntimeError, match="^CupyBackend: "):
        CupyBackend()


@pytest.mark.gpu
def test_with_a_gpu_require_gpu_passes():
    usable_gpu_or_skip()
    require_gpu("test")
    assert gpu_available()


def expand_args(**changes):
    """Valid arguments of expand_u32 for a 2-element copy, with ``changes``."""
    args = {"in": np.zeros(2, np.uint32), "out": np.zeros(2, np.uint32),
            "n_rows": np.int64(2), "row_words": np.int64(1), "team_shift": np.int32(0),
            "ndim": np.int32(1), "outer_shape": np.array([2]), "outer_strides": np.array([1])}
    return tuple({**args, **changes}.values())


def test_emulator_is_strict_where_cupy_would_misbehave():
    kernel = EmuBackend().function("expand.cu", "expand_u32")
    kernel((1,), (1,), expand_args())
    with pytest.raises(TypeError,
                       match=r"argument n_rows \(i64 n_rows\) needs a numpy int64 scalar, got in"):
        kernel((1,), (1,), expand_args(n_rows=2))
    with pytest.raises(TypeError, match=r"argument ndim \(i32 ndim\) needs a numpy int32 scalar"):
        kernel((1,), (1,), expand_args(ndim=np.int64(1)))
    with pytest.raises(TypeError, match=r"argument in .* needs a uint32 array, got ndarray of f"):
        kernel((1,), (1,), expand_args(**{"in": np.zeros(2, np.float32)}))
    with pytest.raises(ValueError, match="not C-contiguous and writeable"):
        kernel((1,), (1,), expand_args(out=np.zeros(4, np.uint32)[::2]))
    with pytest.raises(ValueError, match="grid 0 is not in"):
        kernel((0,), (1,), expand_args())
    with pytest.raises(TypeError, match="takes 8 arguments, 7 given"):
        kernel((1,), (1,), expand_args()[:7])
    with pytest.raises(AttributeError, match="has no kernel expand_f32"):
        EmuBackend().function("expand.cu", "expand_f32")


class Recording:
    """Wraps a backend and records which kernels the launchers fetch."""

    def __init__(self, inner):
        self.inner, self.xp, self.names = inner, inner.xp, set()

    def function(self, file, name):
        self.names.add((file, name))
        return self.inner.function(file, name)


def test_every_kernel_is_reachable_from_a_launcher():
    rec = Recording(EmuBackend())
    view = gather_view((2, 3), (2,), 1)
    for dtype in ["bool", "float16", "float32", "float64", "complex128"]:
        x = np.ones((2, 3), dtype)
        expand.expand(rec, x, (2, 2, 3), (3, 0, 1))   # rows of 3: every word width
        for index_dtype in ["int32", "int64"]:
            gather.gather(rec, x, np.array([0, 2], index_dtype), view)
    for index_dtype in ["int32", "int64"]:
        index = np.array([0, 2], index_dtype)
        for dtype in ["float32", "float64"]:
            gather.gather_grad(rec, np.ones((2, 2), dtype), index, view, (2, 3))
        coords = np.array([[0], [1]], index_dtype)
        coo_restride.coo_restride(rec, coords, (2, 3), (3, 2))
        csr_coo.csr_to_coo_indices(rec, np.array([0, 1, 1], index_dtype), index[:1], (2, 3))
        csr_coo.coo_to_crows(rec, coords, (2, 3))
    coo_restride.coo_restride(rec, np.array([[0], [1]], np.int32), (2, 3), (3, 2),
                              index_dtype=np.int64)
    for index_dtype in ["int32", "int64"]:
        for dtype in ["float32", "float64", "complex64", "complex128"]:
            i = np.zeros(1, index_dtype)
            sddmm.sddmm(rec, i, i, np.ones((1, 2), dtype), np.ones((1, 2), dtype))
            spmm.spmm(rec, np.array([0, 1], index_dtype), i, np.ones(1, dtype),
                      np.ones((1, 2), dtype))
    for dtype in ["float32", "float64"]:
        sum_axis.sum_axis(rec, np.ones((2, 3, 4), dtype))
    every = {(f, k.name) for f in cu_files() for k in parse_kernels(preprocess(SOURCE_DIR / f))}
    assert rec.names == every
