"""The registered 'gpu' kernels, run on the CPU emulator of their ``.cu`` sources.

The GPU backend singleton (``kernels.gpu.backend._device``) is replaced by an
:class:`EmuBackend` that records what it launches, and each kernel is fetched
with ``registry.lookup(name, "gpu", layout, dtype)`` and called with numpy
arrays (and CooData/CsrData bundles) exactly as dispatch calls it: attributes
an infer-meta canonicalises (expand's and reshape's shape) come resolved.  The
results must equal the 'cpu' kernels' for the same inputs, and the named
``.cu`` kernel must have run.  This is the wiring a real GPU runs, minus cupy.
"""
import doctest
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import dense  # noqa: F401  (loads the op table)
import kernels.dense.expand  # noqa: F401  (registers the kernels)
import kernels.dense.gather  # noqa: F401
import kernels.dense.repeat  # noqa: F401
import kernels.gpu
import sparse  # noqa: F401
from cuda_emu.backend import EmuBackend
from kernels.core import dispatch, registry
from kernels.core.dtypes import ALL, COMPLEX, FLOATS
from kernels.core.meta import MetaTensor
from kernels.gpu import backend as gpu_backend
from kernels.infermeta import resolve_expand, resolve_reshape
from kernels.sparse.data import CooData, CsrData

ROOT = Path(__file__).resolve().parents[1]


class RecordingEmu(EmuBackend):
    """The emulator, remembering the name of every kernel it launches."""

    def __init__(self):
        super().__init__(sanitize=os.environ.get("PHISPARSE_EMU_SANITIZE") == "1")
        self.launched = []

    def function(self, file, name):
        kernel = super().function(file, name)

        def launch(grid, block, args):
            self.launched.append(name)
            kernel(grid, block, args)
        return launch


@pytest.fixture
def emu(monkeypatch):
    """The emulator, installed as the backend every 'gpu' kernel launches on."""
    engine = RecordingEmu()
    monkeypatch.setattr(gpu_backend, "_device", engine)
    return engine


def both(name, args, layout="dense", dtype=None):
    """The 'cpu' and 'gpu' kernels ``name`` called on the same ``args``."""
    if dtype is None:
        dtype = getattr(args[0], "values", args[0]).dtype
    return tuple(registry.lookup(name, b, layout, dtype)(*args) for b in ("cpu", "gpu"))


def sample(shape, dtype, seed=0):
    """Random values of ``dtype`` (complex with both parts, bool mixed)."""
    rng = np.random.default_rng(seed)
    values = rng.standard_normal(shape) * 5
    if np.dtype(dtype).kind == "c":
        values = values + 1j * rng.standard_normal(shape)
    return values.astype(dtype)


MISSING_GPU_KERNELS = """
import sys
import dense, sparse
from kernels.core import dispatch, registry
__import__(sys.argv[1])
for spec in dispatch._OPS.values():
    for sig in spec.kernels if spec.module == sys.argv[1] else ():
        have = registry.registered(sig.func)
        cpu = {(lay, d) for b, lay, d in have if b == "cpu"}
        gpu = {(lay, d) for b, lay, d in have if b == "gpu"}
        print(*[(sig.func, lay, d) for lay, d in sorted(cpu - gpu)])
"""


@pytest.mark.parametrize("module", sorted({s.module for s in dispatch._OPS.values() if s.module}))
def test_importing_an_op_module_registers_gpu_kernels_for_every_cpu_kernel(module):
    """In a fresh interpreter, so that no other import has registered them already."""
    out = subprocess.run([sys.executable, "-c", MISSING_GPU_KERNELS, module], check=True,
                         capture_output=True, text=True, cwd=ROOT).stdout
    assert not out.split()


@pytest.mark.parametrize("module", [kernels.gpu, gpu_backend])
def test_docstring_examples_run(module):
    res = doctest.testmod(module)
    assert res.failed == 0 and res.attempted > 0


# ---------------------------------------------------------------- expand, repeat
def widest_words(kernel, row_bytes):
    """The kernel moving rows of ``row_bytes`` in the widest words: 16 bytes needs a
    16-byte address too, which numpy's allocator gives here (malloc's alignment)."""
    word = next(w for w in (16, 8, 4, 2, 1) if row_bytes % w == 0)
    return f"{kernel}_u{8 * word}"


@pytest.mark.parametrize("x_shape,shape", [
    ((3, 1, 4), (2, 3, 5, 4)), ((), (2, 3)), ((2, 1), (-1, 3)), ((0, 1), (2, 0, 4)),
    ((4,), (4,)), ((1,), (0,))])
def test_expand(emu, x_shape, shape):
    cpu, gpu = both("expand", (sample(x_shape, np.float32), resolve_expand(x_shape, shape)))
    np.testing.assert_array_equal(gpu, cpu)
    assert cpu.shape == gpu.shape
    row_bytes = 4 * (x_shape[-1] if x_shape and x_shape[-1] == shape[-1] else 1)
    assert emu.launched == ([widest_words("expand", row_bytes)] if cpu.size else [])


@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_expand_and_repeat_move_every_dtype(emu, dtype):
    x = sample((2, 1, 3), dtype)
    for name, attr in (("expand", (4, 2, 5, 3)), ("repeat", (2, 1, 3, 2))):
        cpu, gpu = both(name, (x, attr))
        assert gpu.dtype == cpu.dtype
        np.testing.assert_array_equal(gpu, cpu)
    assert [n.split("_")[0] for n in emu.launched] == ["expand", "expand"]  # repeat: expand.cu


@pytest.mark.parametrize("x_shape,repeats", [
    ((2, 3), (2, 2)), ((3,), (2, 1, 3)), ((2, 1, 4), (1, 5, 2)), ((0, 2), (3, 2)),
    ((2, 3), (0, 1)), ((), (3,)), ((), ())])
def test_repeat(emu, x_shape, repeats):
    cpu, gpu = both("repeat", (sample(x_shape, np.float64), repeats))
    assert cpu.shape == gpu.shape
    np.testing.assert_array_equal(gpu, cpu)
    assert len(emu.launched) == (1 if cpu.size else 0)
    assert set(emu.launched) <= {"expand_u64", "expand_u128"}


# ---------------------------------------------------------------- gather
GATHERS = [  # x shape, index shape, axis, batch_dims
    ((5, 3), (4,), 0, 0), ((2, 6, 3), (2, 5), 1, 0), ((4, 6), (3, 2), -1, 0),
    ((3, 4, 5), (3, 7), 2, 1), ((2, 3, 4, 2), (2, 3, 5), 3, 2), ((3, 4), (3, 0), 1, 1),
    ((3, 4), (), 1, 0)]


def index_for(shape, size, dtype, seed=1):
    """Random indices in ``[-size, size)``, duplicates and negatives included."""
    return np.random.default_rng(seed).integers(-size, size, shape).astype(dtype)


@pytest.mark.parametrize("x_shape,i_shape,axis,bd", GATHERS)
@pytest.mark.parametrize("index_dtype", ["int32", "int64"])
def test_gather_and_its_gradient(emu, x_shape, i_shape, axis, bd, index_dtype):
    x = sample(x_shape, np.float64)
    index = index_for(i_shape, x_shape[axis], index_dtype)
    cpu, gpu = both("gather", (x, index, axis, bd))
    np.testing.assert_array_equal(gpu, cpu)
    g = sample(cpu.shape, np.float64, seed=2)
    cpu_grad, gpu_grad = both("gather_grad", (MetaTensor(x_shape, x.dtype), index, g, axis, bd),
                              dtype=g.dtype)
    np.testing.assert_allclose(gpu_grad, cpu_grad, rtol=1e-12, atol=1e-12)
    suffix = "i32" if index_dtype == "int32" else "i64"
    launched = [f"gather_u64_{suffix}"] if cpu.size else []
    assert emu.launched == launched + ([f"gather_grad_f64_{suffix}"] if g.size else [])


@pytest.mark.parametrize("dtype", FLOATS + COMPLEX, ids=str)
def test_gather_gradient_dtypes(emu, dtype):
    """float16 accumulates in float32, complex as pairs of reals (see launch.gather_grad)."""
    index = np.array([[0, 2, 2, 2, -1], [1, 1, 0, 0, 3]])
    g = sample((2, 5, 3), dtype)
    for name, args in (("gather_grad", (MetaTensor((2, 4, 3), g.dtype), index, g, 1, 1)),
                       ("batch_gather_grad", (MetaTensor((2, 4, 3), g.dtype), index, g))):
        cpu, gpu = both(name, args, dtype=g.dtype)
        assert gpu.dtype == cpu.dtype
        tol = 2e-3 if dtype == np.float16 else 1e-5
        np.testing.assert_allclose(gpu, cpu, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_batch_gather_every_dtype(emu, dtype):
    x = sample((2, 3, 4), dtype)
    index = index_for((2, 3, 6), 4, np.int64)
    cpu, gpu = both("batch_gather", (x, index))
    np.testing.assert_array_equal(gpu, cpu)
    assert len(emu.launched) == 1 and emu.launched[0].startswith("gather_u")


@pytest.mark.parametrize("name,args", [
    ("gather", lambda i: (np.zeros((2, 5)), i, 1, 0)),
    ("gather_grad", lambda i: (MetaTensor((2, 5), np.dtype("float64")), i,
                               np.zeros((2, 2, 2)), 1, 0)),
    ("batch_gather", lambda i: (np.zeros((2, 5)), i)),
    ("batch_gather_grad", lambda i: (MetaTensor((2, 5), np.dtype("float64")), i,
                                     np.zeros((2, 2)))),
])
@pytest.mark.parametrize("bad", [5, -6])
def test_out_of_range_index_raises_the_cpu_error_before_any_launch(emu, name, args, bad):
    index = np.array([[0, -5], [4, 4]])
    index[1, 0] = bad
    messages = []
    for b in ("cpu", "gpu"):
        with pytest.raises(IndexError) as err:
            registry.lookup(name, b, "dense", np.float64)(*args(index))
        messages.append(str(err.value))
    assert messages[0] == messages[1]
    assert f"index {bad} at position (1, 0) is out of range" in messages[1]
    assert emu.launched == []


# ---------------------------------------------------------------- sparse
def coo(shape, sparse_dim, nnz, index_dtype="int64", seed=0):
    """A random COO bundle with distinct coordinates, in random order."""
    rng = np.random.default_rng(seed)
    sparse_shape = shape[:sparse_dim]
    flat = rng.choice(int(np.prod(sparse_shape)), size=nnz, replace=False)
    indices = np.array(np.unravel_index(flat, sparse_shape), dtype=index_dtype)
    values = sample((nnz,) + tuple(shape[sparse_dim:]), np.float32, seed)
    return CooData(indices.reshape(sparse_dim, nnz), values, tuple(shape), False)


def assert_same_bundle(got, want):
    assert type(got) is type(want)
    for g, w, field in zip(got, want, want._fields):
        if isinstance(w, np.ndarray):
            assert g.dtype == w.dtype, field
            np.testing.assert_array_equal(g, w, err_msg=field)
        else:
            assert g == w, field


@pytest.mark.parametrize("shape,sparse_dim,new", [
    ((4, 6), 2, (3, 8)), ((4, 6, 5), 2, (24, 5)), ((4, 6, 5), 2, (2, -1)),
    ((2, 3, 4), 3, (4, 6)), ((6, 4), 1, (3, 2, 4)), ((5, 7), 2, (35,)), ((5, 7), 2, (5, 7))])
@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("index_dtype", ["int32", "int64"])
def test_reshape_coo(emu, shape, sparse_dim, new, order, index_dtype):
    x = coo(shape, sparse_dim, 5, index_dtype)
    cpu, gpu = both("reshape_coo", (x, resolve_reshape(shape, new), order), layout="sparse_coo")
    assert_same_bundle(gpu, cpu)
    suffix = "i32" if index_dtype == "int32" else "i64"
    moved = tuple(cpu.shape) != shape
    assert emu.launched == ([f"coo_restride_{suffix}_{suffix}"] if moved else [])


def test_reshape_coo_nnz_zero(emu):
    x = CooData(np.zeros((2, 0), np.int64), np.zeros(0, np.float64), (3, 4), True)
    cpu, gpu = both("reshape_coo", (x, (4, 3), "C"), layout="sparse_coo")
    assert_same_bundle(gpu, cpu)


def csr(shape, seed=0):
    """A random 2-D or batched 3-D CSR bundle (empty rows included) and its dense form."""
    rng = np.random.default_rng(seed)
    d = sample(shape, np.float64, seed) * (rng.random(shape) < 0.4)
    data = registry.lookup("dense_to_csr", "cpu", "dense", d.dtype)(d)
    return data, d


@pytest.mark.parametrize("shape", [(4, 5), (1, 1), (0, 3), (3, 4, 5), (2, 0, 3), (3, 1, 1)])
def test_csr_to_coo_and_back(emu, shape):
    x, d = csr(shape)
    cpu, gpu = both("csr_to_coo", (x, len(shape)), layout="sparse_csr")
    assert_same_bundle(gpu, cpu)
    back_cpu, back_gpu = both("coo_to_csr", (gpu,), layout="sparse_coo")
    assert_same_bundle(back_gpu, back_cpu)
    assert_same_bundle(back_gpu, x)
    np.testing.assert_array_equal(
        registry.lookup("csr_to_dense", "gpu", "sparse_csr", d.dtype)(back_gpu), d)
    assert emu.launched == (["csr_coo_indices_i64"] if x.nnz else []) + ["coo_crows_i64"]


@pytest.mark.parametrize("shape,sparse_dim", [((5, 4), 2), ((3, 4, 2), 3), ((3, 4, 2), 2),
                                              ((4, 3, 2), 1)])
@pytest.mark.parametrize("index_dtype", ["int32", "int64"])
def test_coo_to_csr_unsorted_and_its_gradient(emu, shape, sparse_dim, index_dtype):
    x = coo(shape, sparse_dim, 4, index_dtype, seed=3)  # dense dims are folded first
    cpu, gpu = both("coo_to_csr", (x,), layout="sparse_coo")
    assert_same_bundle(gpu, cpu)
    g = CsrData(cpu.crows, cpu.cols, sample(cpu.values.shape, np.float32, 4), cpu.shape)
    cpu_grad, gpu_grad = both("coo_to_csr_grad", (x, g), layout="sparse_coo", dtype=np.float32)
    assert_same_bundle(gpu_grad, cpu_grad)
    assert "coo_crows_" + ("i32" if index_dtype == "int32" else "i64") in emu.launched
