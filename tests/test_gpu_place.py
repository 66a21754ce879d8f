"""place='gpu': clear errors without a GPU, and every op end to end on each backend.

The op bodies take the conftest's ``backend`` fixture: they run on 'cpu'
here and, marked ``gpu``, on a real GPU wherever one is usable (skipped with
the exact reason otherwise; ``REQUIRE_GPU=1`` turns the skip into a failure).
Each compares with numpy or scipy computed on the host.
"""
import sys
import types

import numpy as np
import pytest
import scipy.sparse

import dense
import sparse
from kernels.core.xp import gpu_ready
from kernels.gpu.launch import address

RNG = np.random.default_rng(0)


# ---------------------------------------------------------------- no GPU
CONSTRUCTORS = {
    "to_tensor": lambda: dense.to_tensor([1.0, 2.0], place="gpu"),
    "sparse_coo_tensor": lambda: sparse.sparse_coo_tensor([[0, 2]], [1.0, 2.0], [3], place="gpu"),
    "sparse_csr_tensor": lambda: sparse.sparse_csr_tensor([0, 1, 2], [0, 1], [1.0, 2.0], [2, 2],
                                                          place="gpu"),
    "from_scipy": lambda: sparse.from_scipy(scipy.sparse.eye(3, format="csr"), place="gpu"),
}


def fake_cupy(monkeypatch, is_available):
    """Replace cupy by a module whose ``is_available`` is the given function."""
    monkeypatch.setitem(sys.modules, "cupy", types.SimpleNamespace(is_available=is_available))


def no_device():
    raise RuntimeError("cudaErrorInsufficientDriver")


@pytest.mark.parametrize("op", list(CONSTRUCTORS))
@pytest.mark.parametrize("situation,why", [
    ("here", None),
    ("cupy missing", "cupy is not installed (pip install 'phisparse[gpu]')"),
    ("cupy without a GPU", "cupy is installed but no CUDA GPU is available"),
    ("broken driver", "cupy cannot reach CUDA: cudaErrorInsufficientDriver"),
])
def test_gpu_place_without_a_gpu_says_what_is_missing(monkeypatch, op, situation, why):
    if situation == "here":
        ok, why = gpu_ready()
        if ok:
            pytest.skip("a GPU is usable here")
    elif situation == "cupy missing":
        monkeypatch.setitem(sys.modules, "cupy", None)  # import cupy raises ImportError
    else:
        fake_cupy(monkeypatch, (lambda: False) if situation == "cupy without a GPU" else no_device)
    with pytest.raises(RuntimeError) as err:
        CONSTRUCTORS[op]()
    assert str(err.value) == f"{op}: place 'gpu' is unavailable: {why}"


# ---------------------------------------------------------------- every backend
def leaf(array, backend):
    return dense.to_tensor(array, place=backend, stop_gradient=False)


def host(t):
    """``t.numpy()``: checked to be a fresh, writeable host copy."""
    out = t.numpy()
    assert type(out) is np.ndarray and out.flags.writeable
    return out


def test_numpy_copies_to_the_host(backend):
    a = RNG.standard_normal((3, 4))
    t = dense.to_tensor(a, place=backend)
    assert t.place == backend
    got = host(t)
    np.testing.assert_array_equal(got, a)
    got[...] = 0
    np.testing.assert_array_equal(host(t), a)


def test_to_tensor_of_a_tensor_keeps_its_place_and_copies(backend):
    """place=None keeps the data's own place for a tensor as for a cupy array (a GPU
    tensor went through the host to the CPU before); the result owns new memory."""
    a = RNG.standard_normal((3, 4))
    t = dense.to_tensor(a, place=backend)
    coo = sparse.sparse_coo_tensor(np.array([[0, 2], [1, 3]]), np.array([1.0, 2.0]), [3, 4],
                                   place=backend)
    for src, want in ((t, a), (coo, coo.to_dense().numpy())):
        got = dense.to_tensor(src, dtype="float32")
        assert got.place == backend and got.dtype == np.float32
        np.testing.assert_array_equal(host(got), want.astype(np.float32))
    same = dense.to_tensor(t)
    assert address(same._array) != address(t._array)
    ints = dense.to_tensor(np.array([300, -1, 7]), place=backend)
    for dtype in ("uint8", "int8"):                 # the cast is checked on either place
        with pytest.raises(ValueError, match="^to_tensor: data holds .* out of the range"):
            dense.to_tensor(ints, dtype=dtype)


def test_expand_and_repeat_with_gradients(backend):
    a = RNG.standard_normal((3, 1, 2))
    x = leaf(a, backend)
    out = dense.expand(x, [4, 3, 5, 2])
    assert out.place == backend
    np.testing.assert_array_equal(host(out), np.broadcast_to(a, (4, 3, 5, 2)))
    g = RNG.standard_normal((4, 3, 5, 2))
    out.backward(dense.to_tensor(g, place=backend))
    np.testing.assert_allclose(host(x.grad), g.sum(axis=(0, 2), keepdims=True)[0], rtol=1e-12)
    x = leaf(a, backend)
    out = dense.repeat(x, [2, 2, 3, 1])
    np.testing.assert_array_equal(host(out), np.tile(a, (2, 2, 3, 1)))
    g = RNG.standard_normal(out.shape)
    out.backward(dense.to_tensor(g, place=backend))
    want = g.reshape(2, 1, 2, 3, 3, 1, 1, 2).sum(axis=(0, 2, 4, 6)).reshape(3, 1, 2)
    np.testing.assert_allclose(host(x.grad), want, rtol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64"])
def test_gather_and_batch_gather_with_gradients(backend, dtype):
    a = RNG.standard_normal((2, 5, 3)).astype(dtype)
    index = np.array([[4, 0, 4, -1], [1, 1, 2, 0]])
    for call, want_fn in [
        (lambda x, i: dense.gather(x, i, axis=1),
         lambda g: add_at((2, 5, 3), (slice(None), index % 5), g)),
        (lambda x, i: dense.batch_gather(x, i),
         lambda g: add_at((2, 5, 3), (np.arange(2)[:, None], index % 5), g)),
    ]:
        x = leaf(a, backend)
        out = call(x, dense.to_tensor(index, place=backend))
        g = RNG.standard_normal(out.shape).astype(dtype)
        reference = a[:, index] if out.ndim == 4 else a[np.arange(2)[:, None], index]
        np.testing.assert_array_equal(host(out), reference)
        out.backward(dense.to_tensor(g, place=backend))
        np.testing.assert_allclose(host(x.grad), want_fn(g), rtol=1e-5)


def add_at(shape, where, g):
    """np.add.at of ``g`` into zeros of ``shape`` at ``where``."""
    out = np.zeros(shape, g.dtype)
    np.add.at(out, where, g)
    return out


@pytest.mark.parametrize("op", [lambda x, i: dense.gather(x, i, axis=1),
                                lambda x, i: dense.batch_gather(x, i)])
def test_gather_out_of_range_raises_the_cpu_message(backend, op):
    x = np.zeros((2, 5))
    index = np.array([[0, 1], [5, 0]])
    with pytest.raises(IndexError) as on_cpu:
        op(dense.to_tensor(x), dense.to_tensor(index))
    with pytest.raises(IndexError) as here:
        op(dense.to_tensor(x, place=backend), dense.to_tensor(index, place=backend))
    assert str(here.value) == str(on_cpu.value)


def test_sparse_coo_ops_with_gradients(backend):
    m = scipy.sparse.random_array((6, 8), density=0.3, random_state=1, format="coo")
    x = sparse.sparse_coo_tensor(np.stack(m.coords), m.data, m.shape, place=backend,
                                 stop_gradient=False)
    assert x.place == backend
    y = sparse.reshape(x, [4, 12])
    assert y.place == backend
    np.testing.assert_array_equal(host(y.to_dense()), m.toarray().reshape(4, 12))
    np.testing.assert_array_equal(host(sparse.reshape(x, [12, 4], order="F").to_dense()),
                                  m.toarray().reshape(12, 4, order="F"))
    csr = y.to_sparse_csr()
    want = scipy.sparse.csr_array(m.toarray().reshape(4, 12))
    want.sum_duplicates()
    np.testing.assert_array_equal(host(csr.crows()), want.indptr)
    np.testing.assert_array_equal(host(csr.to_dense()), want.toarray())
    back = csr.to_sparse_coo()
    np.testing.assert_array_equal(host(back.to_dense()), want.toarray())
    g = RNG.standard_normal((4, 12))
    back.to_dense().backward(dense.to_tensor(g, place=backend))
    np.testing.assert_array_equal(host(x.grad.values()), g.reshape(6, 8)[tuple(m.coords)])


def test_sparse_csr_batched_and_coalesce(backend):
    d = RNG.standard_normal((2, 3, 4)) * (RNG.random((2, 3, 4)) < 0.5)
    x = dense.to_tensor(d, place=backend).to_sparse_csr()
    assert x.place == backend
    coo = x.to_sparse_coo()
    np.testing.assert_array_equal(host(coo.indices()), np.array(np.nonzero(d)))
    np.testing.assert_array_equal(host(sparse.reshape(x, [3, 2, 4]).to_dense()),
                                  d.reshape(3, 2, 4))
    dup = sparse.sparse_coo_tensor([[1, 0, 1], [2, 0, 2]], [1.0, 2.0, 3.0], [2, 3],
                                   place=backend)
    c = sparse.coalesce(dup)
    np.testing.assert_array_equal(host(c.indices()), [[0, 1], [0, 2]])
    np.testing.assert_array_equal(host(c.values()), [2.0, 4.0])
