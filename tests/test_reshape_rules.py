"""Paddle's reshape shape rules (ValidateShape) and the kernel registry's errors."""
import doctest

import numpy as np
import pytest

import dense
import kernels
import sparse
from kernels.core import dispatch, registry
from kernels.core.meta import MetaTensor
from kernels.infermeta import reshape as reshape_rules


def _x(shape, dtype=np.float32):
    return dense.to_tensor(np.zeros(shape, dtype))


@pytest.mark.parametrize("shape,target,out", [
    ((2, 4, 6), [6, 8], [6, 8]), ((2, 4, 6), [2, 3, -1, 2], [2, 3, 4, 2]),
    ((2, 4, 6), [-1, 0, 3, 2], [2, 4, 3, 2]), ((1,), [], []), ((1, 1, 1), [], []),
    ((0, 3), [3, -1], [3, 0]), ((0, 3), [0, 3], [0, 3]), ((), [-1], [1]),
    ((2, 3), (3, 2), [3, 2]), ((6,), np.array([2, 3]), [2, 3]),
])
def test_valid_shapes(shape, target, out):
    assert dense.reshape(_x(shape), target).shape == out


@pytest.mark.parametrize("shape,target,message", [
    ((2, 3), [-1, -1], "more than one -1"),
    ((2, 3), [2, 3, 0], "0 at index 2"),
    ((2, 3), [-2, -3], "negative value -2"),
    ((2, 3), [4, 2], "6 elements"),
    ((2, 3), [4, -1], "not divisible by 4"),
    ((2, 3), [], "6 elements"),
    ((0, 3), [0, -1], "ambiguous"),
    ((2, 3), [2 ** 40, 2 ** 40, 0], "0 at index 2"),
])
def test_invalid_shapes_raise_value_error_naming_reshape(shape, target, message):
    with pytest.raises(ValueError, match=message) as err:
        dense.reshape(_x(shape), target)
    assert str(err.value).startswith("reshape:")


def test_element_count_beyond_int64_raises_in_infer_meta():
    meta = MetaTensor((2 ** 62, 4), np.float32)
    with pytest.raises(ValueError, match="2\\*\\*63"):
        reshape_rules.reshape_infer_meta(meta, [2 ** 31, 2 ** 31, 4])


@pytest.mark.parametrize("bad", [[2.0, 3], ["2", 3], [True, 6], "6", None])
def test_shape_of_wrong_type_raises_type_error(bad):
    with pytest.raises(TypeError, match="reshape: argument 'shape'"):
        dense.reshape(_x((6,)), bad)


def test_shape_list_may_hold_one_element_integer_tensors_as_in_paddle():
    x = _x((24,))
    assert dense.reshape(x, [dense.to_tensor(6), 4]).shape == [6, 4]
    assert x.reshape(dense.to_tensor(np.array([2], np.int32)), -1).shape == [2, 12]
    with pytest.raises(TypeError, match="reshape: argument 'shape'"):
        dense.reshape(x, [dense.to_tensor(6.0), 4])


def test_non_tensor_input_raises_type_error():
    with pytest.raises(TypeError, match="reshape: argument 'x' must be a Tensor"):
        dense.reshape([1, 2, 3], [3])


def test_infer_meta_touches_no_data():
    meta = dense.reshape.infer_meta(MetaTensor((2, 0, 3), np.int16), [-1, 2])
    assert meta == MetaTensor((0, 2), np.int16, "dense", "cpu")


def test_infer_meta_takes_keywords_and_defaults_like_the_api():
    meta = MetaTensor((4, 6), np.float32)
    assert dense.sum.infer_meta(meta, axis=[1], keepdim=True).shape == (4, 1)
    assert dense.sum.infer_meta(x=meta).shape == ()
    assert dense.reshape.infer_meta(meta, shape=[-1]).shape == (24,)
    coo = MetaTensor((4, 6), np.float32, "sparse_coo", sparse_dim=2)
    assert sparse.reshape.infer_meta(coo, [6, 4], order="F").shape == (6, 4)
    with pytest.raises(TypeError, match="reshape.infer_meta"):
        dense.reshape.infer_meta(meta, [24], bogus=1)


def test_reshape_shares_memory_with_its_input():
    x = dense.to_tensor(np.arange(6.0))
    assert np.shares_memory(dense.reshape(x, [2, 3])._data(), x._data())


def test_missing_kernel_lists_what_is_registered():
    spec = dispatch.get_op("dense", "reshape")
    with pytest.raises(registry.KernelNotFoundError) as err:
        registry.lookup("reshape", "cpu", "dense", "uint16", op=spec.name)
    msg = str(err.value)
    assert "reshape: no kernel 'reshape'" in msg and "(cpu, dense, float32)" in msg


def test_registry_keys_are_op_backend_layout_dtype():
    keys = kernels.registered("reshape")
    assert ("cpu", "dense", "float64") in keys and ("gpu", "dense", "complex64") in keys


@pytest.mark.parametrize("module", [dense._generated_api, sparse._generated_api,
                                    dense.tensor, reshape_rules])
def test_docstring_examples_run(module):
    res = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert res.failed == 0
    if module is not sparse._generated_api or sparse.__all__:
        assert res.attempted > 0
