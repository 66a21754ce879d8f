"""dense.Tensor and dense.to_tensor: dtypes, places, immutability, repr."""
import numpy as np
import pytest

import dense
from kernels.core.dtypes import ALL


@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_numpy_arrays_keep_their_dtype(dtype):
    a = np.arange(6).reshape(2, 3).astype(dtype)
    t = dense.to_tensor(a)
    assert t.dtype == dtype and t.shape == [2, 3] and t.ndim == 2 and t.place == "cpu"
    np.testing.assert_array_equal(t.numpy(), a)


@pytest.mark.parametrize("data,dtype", [([1.0], np.float64), (3, np.int64), (True, np.bool_),
                                        ([[1, 2], [3, 4]], np.int64), (1 + 2j, np.complex128),
                                        ([], np.float64)])
def test_python_data_follows_numpy_rules(data, dtype):
    t = dense.to_tensor(data)
    assert t.dtype == np.asarray(data).dtype == dtype
    assert t.shape == list(np.asarray(data).shape)


def test_explicit_dtype_casts():
    assert dense.to_tensor([1, 2], dtype="float32").dtype == np.float32


@pytest.mark.parametrize("bad", [np.array(["a"]), np.array([1], dtype=np.uint16),
                                 np.array([object()])])
def test_unsupported_dtypes_raise_type_error(bad):
    with pytest.raises(TypeError, match="to_tensor"):
        dense.to_tensor(bad)


def test_ragged_lists_raise_value_error():
    with pytest.raises(ValueError, match="to_tensor"):
        dense.to_tensor([[1, 2], [3]])


def test_bad_place_raises():
    with pytest.raises(ValueError, match="place"):
        dense.to_tensor([1.0], place="tpu")


def test_gpu_place_without_gpu_raises_runtime_error():
    from kernels.core.xp import gpu_ready
    if gpu_ready()[0]:
        pytest.skip("a GPU is present, so place='gpu' succeeds")
    with pytest.raises(RuntimeError, match="gpu"):
        dense.to_tensor([1.0], place="gpu")


def test_caller_array_is_copied_and_never_mutated():
    a = np.arange(4.0)
    t = dense.to_tensor(a)
    a[0] = 99.0
    assert t.numpy()[0] == 0.0
    assert a.flags.writeable


def test_numpy_returns_a_free_copy():
    t = dense.to_tensor(np.arange(4.0))
    n = t.numpy()
    n[0] = 42.0
    assert t.numpy()[0] == 0.0


def test_asarray_is_a_read_only_view_and_data_ptr_shows_sharing():
    t = dense.to_tensor(np.arange(6.0))
    r = dense.reshape(t, [2, 3])           # reshape shares memory with its input
    view = np.asarray(r)
    assert np.shares_memory(view, np.asarray(t)) and r.data_ptr() == t.data_ptr()
    with pytest.raises(ValueError):
        view[0, 0] = 1.0
    free = np.array(r)                     # np.array copies
    free[0, 0] = 7.0
    assert t.numpy()[0] == 0.0 and np.asarray(t, dtype=np.float32).dtype == np.float32
    assert dense.to_tensor(np.arange(6.0)).data_ptr() != t.data_ptr()


def test_ops_on_raw_arrays_do_not_touch_caller_flags():
    a = np.arange(6.0)
    out = dense.reshape(a, [2, 3])
    assert a.flags.writeable
    np.testing.assert_array_equal(out.numpy(), a.reshape(2, 3))


def test_zero_d_and_item():
    t = dense.to_tensor(2.5)
    assert t.shape == [] and t.ndim == 0 and t.item() == 2.5
    with pytest.raises(ValueError, match="item"):
        dense.to_tensor([1, 2]).item()


def test_repr_is_paddle_like():
    r = repr(dense.to_tensor([[1.0, 2.0]], stop_gradient=False))
    assert r.startswith("Tensor(shape=[1, 2], dtype=float64, place=Place(cpu), "
                        "stop_gradient=False,")
    assert "[[1., 2.]]" in r


def test_stop_gradient_is_settable():
    t = dense.to_tensor([1.0])
    assert t.stop_gradient
    t.stop_gradient = False
    assert not t.stop_gradient


def test_method_forms_of_reshape():
    t = dense.to_tensor(np.arange(6))
    assert t.reshape(2, 3).shape == [2, 3]
    assert t.reshape([3, 2]).shape == [3, 2]
    assert t.reshape((6,)).shape == [6]
