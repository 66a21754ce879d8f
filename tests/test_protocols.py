"""Python and numpy habits on tensors: scalar conversions, len and iteration, astype,
numpy functions, DLPack, place names and sizes given one by one."""
import operator

import numpy as np
import pytest
import scipy.sparse as sp

import dense
import sparse
from kernels.core.xp import canonical_place

CONVERSIONS = [(float, "float"), (int, "int"), (complex, "complex"), (bool, "bool")]


# ------------------------------------------------------------------ scalars
@pytest.mark.parametrize("shape", [(), (1,), (1, 1, 1)])
@pytest.mark.parametrize("value,dtype", [(2.75, "float64"), (-3, "int32"), (0, "uint8"),
                                         (1.5, "float32"), (True, "bool")])
@pytest.mark.parametrize("conv,_", CONVERSIONS)
def test_one_element_tensors_convert_like_numpy(shape, value, dtype, conv, _):
    a = np.full(shape, value, dtype=dtype)
    got = conv(dense.to_tensor(a))
    assert type(got) is conv and got == conv(a.reshape(()))


@pytest.mark.parametrize("shape", [(2,), (0,), (2, 3)])
@pytest.mark.parametrize("conv,name", CONVERSIONS + [(operator.index, "operator.index")])
def test_more_or_fewer_elements_raise_value_error(shape, conv, name):
    with pytest.raises(ValueError, match=rf"{name}\(\): only a one-element tensor .* "
                                         rf"shape \[{', '.join(map(str, shape))}\]"):
        conv(dense.to_tensor(np.zeros(shape, dtype=np.int64)))


def test_operator_index_takes_integer_tensors_only():
    assert operator.index(dense.to_tensor(np.array([4], dtype=np.int32))) == 4
    assert list(range(10))[dense.to_tensor(np.int64(3))] == 3
    for dtype in ("float64", "bool", "complex64"):
        with pytest.raises(TypeError, match=f"operator.index.*{dtype}"):
            operator.index(dense.to_tensor(np.ones(1, dtype=dtype)))


def test_complex_to_int_raises_type_error_as_python_does():
    with pytest.raises(TypeError):
        int(dense.to_tensor(1 + 2j))


# ------------------------------------------------------------------ len and iteration
def test_len_and_iteration_follow_the_first_dim():
    a = np.arange(24.0).reshape(4, 3, 2)
    t = dense.to_tensor(a)
    rows = list(t)
    assert len(t) == 4 and len(rows) == 4
    for row, ref in zip(rows, a):
        assert isinstance(row, dense.Tensor) and row.shape == [3, 2]
        np.testing.assert_array_equal(row.numpy(), ref)
    assert [float(v) for v in dense.to_tensor(a[:, 0, 0])] == list(a[:, 0, 0])
    assert list(dense.to_tensor(np.zeros((0, 3)))) == []


def test_iteration_is_differentiable():
    t = dense.to_tensor(np.arange(6.0).reshape(3, 2), stop_gradient=False)
    first, _, last = t
    loss = dense.sum(dense.expand(dense.reshape(first, [1, 2]), [3, 2]))
    loss.backward()
    dense.sum(last).backward()
    np.testing.assert_array_equal(t.grad.numpy(), [[3.0, 3.0], [0.0, 0.0], [1.0, 1.0]])


@pytest.mark.parametrize("what", [len, iter])
def test_a_0d_tensor_has_no_len_and_no_iteration(what):
    with pytest.raises(TypeError, match="0-d"):
        what(dense.to_tensor(3.0))


# ------------------------------------------------------------------ astype
@pytest.mark.filterwarnings("ignore:Casting complex values")
@pytest.mark.parametrize("src", ["float64", "float32", "int64", "bool", "complex128"])
@pytest.mark.parametrize("dst", ["int32", np.float16, np.dtype("complex64"), "bool", "uint8"])
def test_astype_casts_as_numpy(src, dst):
    a = np.array([[-2.5, 0.0, 1.0], [3.75, 7.0, 255.0]]).astype(src)
    got = dense.to_tensor(a).astype(dst)
    with np.errstate(all="ignore"):   # numpy warns the same way on both sides
        ref = a.astype(dst)
    assert got.dtype == ref.dtype and got.stop_gradient
    np.testing.assert_array_equal(got.numpy(), ref)


def test_astype_is_the_differentiable_cast():
    x = dense.to_tensor(np.array([1.5, -2.0]), stop_gradient=False)
    y = x.astype("float32")
    assert y.dtype == np.float32 and not y.stop_gradient
    dense.sum(dense.expand(y, [3, 2])).backward()
    assert x.grad.dtype == np.float64
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])


def test_astype_rejects_unknown_dtypes_naming_cast():
    t = dense.to_tensor([1.0])
    for bad in ("float128x", "object", np.dtype("datetime64[s]")):
        with pytest.raises(TypeError, match="cast: dtype"):
            t.astype(bad)


# ------------------------------------------------------------------ numpy functions
def test_numpy_functions_take_dense_tensors_as_their_values():
    a = np.arange(12.0).reshape(3, 4)
    t = dense.to_tensor(a)
    assert np.sum(t) == a.sum() and isinstance(np.sum(t), np.floating)
    np.testing.assert_array_equal(np.mean(t, axis=0), a.mean(axis=0))
    np.testing.assert_array_equal(np.concatenate([t, a]), np.concatenate([a, a]))
    np.testing.assert_array_equal(np.where(np.asarray(t) > 5, t, 0), np.where(a > 5, a, 0))
    view = np.asarray(t)
    assert not view.flags.writeable and np.shares_memory(view, np.asarray(t))


@pytest.mark.parametrize("layout", ["coo", "csr"])
@pytest.mark.parametrize("call", [np.asarray, np.array, np.sum, lambda s: np.mean(s, axis=0)])
def test_numpy_refuses_sparse_tensors_pointing_to_to_dense(layout, call):
    m = sp.random_array((4, 5), density=0.4, format=layout, rng=0)
    with pytest.raises(TypeError, match=r"sparse tensor: use x\.to_dense\(\)"):
        call(sparse.from_scipy(m))


# ------------------------------------------------------------------ DLPack
@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "int8", "int64", "uint8",
                                   "bool", "complex64", "complex128"])
def test_numpy_reads_a_tensor_through_dlpack_without_a_copy_and_read_only(dtype):
    a = (np.arange(6) % 3).reshape(2, 3).astype(dtype)
    t = dense.to_tensor(a)
    out = np.from_dlpack(t)
    np.testing.assert_array_equal(out, a)
    assert out.dtype == a.dtype and not out.flags.writeable
    assert np.shares_memory(out, np.asarray(t))
    with pytest.raises(ValueError, match="read-only"):
        out[0, 0] = 1
    copied = np.from_dlpack(t, copy=True)
    assert copied.flags.writeable and not np.shares_memory(copied, np.asarray(t))


class _Unversioned:
    """A consumer of the old, unversioned protocol: ``__dlpack__()`` with no version."""

    def __init__(self, t):
        self.t = t

    def __dlpack__(self, stream=None):
        return self.t.__dlpack__()

    def __dlpack_device__(self):
        return self.t.__dlpack_device__()


def test_the_unversioned_protocol_exports_a_copy():
    """It cannot flag the buffer read-only, so a plain ``__dlpack__()`` hands over a copy
    (``copy=None`` allows one); ``copy=False`` refuses."""
    a = np.array([1.0, 2.0, 3.0])
    t = dense.to_tensor(a)
    out = np.from_dlpack(_Unversioned(t))      # numpy marks it read-only anyway
    np.testing.assert_array_equal(out, a)
    assert not np.shares_memory(out, np.asarray(t))
    with pytest.raises(BufferError):
        t.__dlpack__(copy=False)
    assert t.__dlpack__(max_version=(0, 8)) is not None     # also unversioned: a copy


@pytest.mark.parametrize("dtype", ["float64", "int32", "bool", "complex64"])
def test_from_dlpack_copies_numpy_arrays_and_tensors(dtype):
    a = np.arange(8).reshape(2, 4).astype(dtype)
    t = dense.from_dlpack(a)
    a[0, 0] = 1 if dtype != "bool" else True
    assert t.dtype == np.dtype(dtype) and t.shape == [2, 4] and t.stop_gradient
    np.testing.assert_array_equal(t.numpy(), np.arange(8).reshape(2, 4).astype(dtype))
    back = dense.from_dlpack(t)
    np.testing.assert_array_equal(back.numpy(), t.numpy())
    assert not np.shares_memory(np.asarray(back), np.asarray(t))
    assert not dense.from_dlpack(np.ones(2), stop_gradient=False).stop_gradient


class _Producer:
    """A DLPack producer wrapping a numpy array, with a device of our choosing."""

    def __init__(self, array, device=(1, 0)):
        self.array, self.device = array, device

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.device


def test_from_dlpack_names_itself_on_bad_input():
    with pytest.raises(TypeError, match="from_dlpack: expected an array with __dlpack__"):
        dense.from_dlpack([1.0, 2.0])
    with pytest.raises(TypeError, match="from_dlpack: numpy cannot import this _Producer"):
        dense.from_dlpack(_Producer(np.array(["2026-01-01"], dtype="datetime64[D]")))
    with pytest.raises(ValueError, match="from_dlpack: DLPack device type 9 is not supported"):
        dense.from_dlpack(_Producer(np.ones(2), device=(9, 0)))
    np.testing.assert_array_equal(dense.from_dlpack(_Producer(np.arange(3))).numpy(), [0, 1, 2])


def test_dlpack_device(backend):
    t = dense.to_tensor(np.arange(3.0), place=backend)
    assert t.__dlpack_device__() == ((1, 0) if backend == "cpu" else (2, 0))
    assert all(type(v) is int for v in t.__dlpack_device__())


def test_dlpack_round_trip_with_the_backends_array_library(backend):
    xp = np
    if backend == "gpu":
        import cupy as xp
    a = np.arange(12.0).reshape(3, 4)
    t = dense.to_tensor(a, place=backend)
    out = xp.from_dlpack(t)
    np.testing.assert_array_equal(out.get() if backend == "gpu" else out, a)
    back = dense.from_dlpack(xp.asarray(a))
    assert back.place == backend
    np.testing.assert_array_equal(back.numpy(), a)


# ------------------------------------------------------------------ places
@pytest.mark.parametrize("alias", ["cuda", "gpu:0", "cuda:0"])
def test_gpu_place_aliases_behave_as_gpu(alias):
    assert canonical_place(alias, "op") == "gpu"
    for make in (lambda p: dense.to_tensor([1.0], place=p),
                 lambda p: sparse.sparse_coo_tensor([[0]], [1.0], [2], place=p)):
        try:
            expected = make("gpu").place
        except RuntimeError as exc:
            with pytest.raises(RuntimeError, match="place 'gpu' is unavailable") as got:
                make(alias)
            assert str(got.value) == str(exc)
        else:
            assert make(alias).place == expected


@pytest.mark.parametrize("bad", ["gpu:1", "cuda:x", "cpu:0", "tpu", "GPU"])
def test_other_places_raise_value_error(bad):
    with pytest.raises(ValueError, match=f"to_tensor: place '{bad}' is not one of"):
        dense.to_tensor([1.0], place=bad)
    with pytest.raises(ValueError, match=f"sparse_coo_tensor: place '{bad}'"):
        sparse.sparse_coo_tensor([[0]], [1.0], [2], place=bad)


# ------------------------------------------------------------------ sizes one by one
def test_dense_ops_take_sizes_one_by_one():
    a = np.arange(3.0).reshape(1, 3)
    x = dense.to_tensor(a)
    np.testing.assert_array_equal(dense.expand(x, 2, 3).numpy(), np.broadcast_to(a, (2, 3)))
    np.testing.assert_array_equal(dense.expand(x, 2, -1).numpy(), np.broadcast_to(a, (2, 3)))
    np.testing.assert_array_equal(dense.repeat(x, 2, 1).numpy(), np.tile(a, (2, 1)))
    np.testing.assert_array_equal(dense.reshape(x, 3, 1).numpy(), a.reshape(3, 1))
    assert dense.expand(x, shape=[4, 3]).shape == [4, 3]


@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_sparse_reshape_takes_sizes_one_by_one(layout):
    m = sp.random_array((6, 4), density=0.5, format=layout, rng=1)
    s = sparse.from_scipy(m)
    got = s.reshape(4, 6)
    np.testing.assert_array_equal(got.to_dense().numpy(), m.toarray().reshape(4, 6))
    f = s.reshape(3, 8, order="F")
    np.testing.assert_array_equal(f.to_dense().numpy(), m.toarray().reshape(3, 8, order="F"))
    assert s.reshape([2, 12]).shape == [2, 12]


def test_docstring_examples_run():
    import doctest

    import dense._generated_api
    import dense.tensor
    for module in (dense.tensor, dense._generated_api):
        res = doctest.testmod(module)
        assert res.failed == 0 and res.attempted > 0, module.__name__
