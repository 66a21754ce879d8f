"""batch_gather (OneFlow semantics): examples, error order and messages, gradients."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import dense
from kernels.core.meta import MetaTensor

from opdb.gather import batch_gather_ref, gather_ref
from test_gather import scatter_add_ref


def _bg(x, index, backend="cpu"):
    return dense.batch_gather(dense.to_tensor(x, place=backend), index).numpy()


def test_oneflow_docstring_examples(backend):
    x = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    out = _bg(x, np.array([1, 0], np.int64), backend)
    assert out.dtype == np.float32
    assert np.array_equal(out, [[4, 5, 6], [1, 2, 3]])
    x = np.array([[[1, 2, 3], [4, 5, 6]], [[1, 2, 3], [4, 5, 6]]], np.float32)
    assert np.array_equal(_bg(x, np.array([[1, 0], [0, 1]]), backend),
                          [[[4, 5, 6], [1, 2, 3]], [[1, 2, 3], [4, 5, 6]]])


def test_article_batch_gather_shape(backend):
    # OneFlow's gather-primitive article's example: params [4, 2, 3, 2], indices [4, 2, 5] -> [4, 2, 3, 5] is
    # gather(axis=3, batch_dims=2); batch_gather always gathers axis index.ndim - 1
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 2, 3, 2))
    index = rng.integers(0, 2, (4, 2, 5))
    out = dense.gather(dense.to_tensor(x, place=backend), index, axis=3, batch_dims=2)
    assert out.shape == [4, 2, 3, 5]
    moved = np.moveaxis(x, 3, 2)  # [4, 2, 2, 3]: now the gathered axis is index.ndim - 1
    assert np.array_equal(np.moveaxis(_bg(moved, index, backend), 2, 3), out.numpy())
    index3 = rng.integers(0, 3, (4, 2, 5))
    assert _bg(x, index3, backend).shape == (4, 2, 5, 2)


@st.composite
def cases(draw):
    ndim = draw(st.integers(1, 4))
    x_shape = tuple(draw(st.lists(st.integers(1, 4), min_size=ndim, max_size=ndim)))
    k = draw(st.integers(1, ndim))
    n = x_shape[k - 1]
    index_shape = x_shape[:k - 1] + (draw(st.integers(0, 6)),)
    seed = draw(st.integers(0, 2**16))
    index = np.random.default_rng(seed).integers(-n, n, index_shape)
    return x_shape, index.astype(draw(st.sampled_from([np.int32, np.int64]))), seed


@given(cases())
def test_property_equals_gather_on_the_last_index_axis(case):
    x_shape, index, seed = case
    rng = np.random.default_rng(seed)
    x = dense.to_tensor(rng.standard_normal(x_shape), stop_gradient=False)
    k = index.ndim
    out = dense.batch_gather(x, index)
    assert np.array_equal(out.numpy(), gather_ref(x.numpy(), index, k - 1, k - 1))
    assert np.array_equal(out.numpy(), batch_gather_ref(x.numpy(), index))
    g = rng.standard_normal(out.shape)
    out.backward(dense.to_tensor(g))
    np.testing.assert_allclose(x.grad.numpy(), scatter_add_ref(x_shape, index, g, k - 1, k - 1),
                               rtol=1e-12, atol=1e-12)


def test_grad_with_many_repeats(backend):
    rng = np.random.default_rng(1)
    x = dense.to_tensor(rng.standard_normal((4, 3, 5)).astype(np.float32), place=backend,
                        stop_gradient=False)
    index = rng.integers(0, 3, (4, 50))
    out = dense.batch_gather(x, index)
    assert isinstance(out._grad_fn.saved["x"], MetaTensor)  # no_need_buffer
    g = rng.standard_normal(out.shape).astype(np.float32)
    out.backward(dense.to_tensor(g, place=backend))
    np.testing.assert_allclose(x.grad.numpy(),
                               scatter_add_ref(x.shape, index, g.astype(np.float64), 1, 1),
                               rtol=1e-5, atol=1e-5)


# ------------------------------------------ errors, in API.md's order: shapes, dtype, values
@pytest.mark.parametrize("x_shape, index, error, match", [
    ((), np.array([0]), ValueError, r"batch_gather: x is 0-d"),
    ((), np.array(0.5), ValueError, r"batch_gather: x is 0-d"),
    ((3,), np.array(0), ValueError, r"batch_gather: index is 0-d"),
    ((3,), np.array(0.5), ValueError, r"batch_gather: index is 0-d"),
    ((3,), np.zeros((3, 1), np.int64), ValueError,
     r"batch_gather: index has rank 2 \(shape \[3, 1\]\), more than x's rank 1"),
    ((3,), np.zeros((3, 1), np.float32), ValueError, r"batch_gather: index has rank 2"),
    ((3, 4), np.zeros((3, 2), np.int16), TypeError,
     r"batch_gather: index dtype int16 is not supported; expected int32 or int64"),
    ((3, 4), np.zeros((3, 2), np.bool_), TypeError, r"batch_gather: index dtype bool"),
    ((3, 4), np.zeros((3, 2), np.uint8), TypeError, r"batch_gather: index dtype uint8"),
    ((3, 4), np.full((2, 2), 99), ValueError,
     r"batch_gather: the batch dims of x \[3\] and of index \[2\] differ"),
    ((3, 4), np.zeros((2, 2), np.float64), ValueError,      # shapes before the dtype
     r"batch_gather: the batch dims of x \[3\] and of index \[2\] differ"),
    ((3, 4), np.array([[0, 1], [2, 4], [0, 0]]), IndexError,
     r"batch_gather: index 4 at position \(1, 1\) is out of range for axis 1 of size 4"),
    ((3, 4), np.array([[0, 1], [2, -5], [0, 0]], np.int32), IndexError,
     r"batch_gather: index -5 at position \(1, 1\)"),
])
def test_errors_name_batch_gather_and_come_in_order(x_shape, index, error, match):
    x = dense.to_tensor(np.zeros(x_shape))
    with pytest.raises(error, match=match):
        dense.batch_gather(x, index)
    if error is not IndexError:  # the same checks run on metadata alone
        with pytest.raises(error, match=match):
            dense.batch_gather.infer_meta(x.meta, MetaTensor(index.shape, index.dtype))
