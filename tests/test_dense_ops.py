"""Dense ops of issue 19 beyond the op database: indexing, corners, settled details, errors."""
import doctest

import numpy as np
import pytest
from hypothesis import given, strategies as st

import dense
import dense._generated_api as api

A = np.arange(60.0).reshape(3, 4, 5)
KEYS = [0, -1, (1, 2), (slice(None), 1), (slice(None, None, -1),), (Ellipsis, 2),
        (None, 0, None), (1, slice(4, 0, -2), None, Ellipsis), (slice(-2, None), Ellipsis, 0),
        np.array([2, 0, 2]), (slice(None), np.array([[3, -1], [0, 0]])),
        (1, Ellipsis, np.array([4, 1])), (0, [1, 2]), (), Ellipsis, (slice(5, 9),),
        (slice(None), slice(None), slice(None, None, 3))]


@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_getitem_matches_numpy_and_its_gradient_is_a_scatter(key):
    x = dense.to_tensor(A, stop_gradient=False)
    out = x[key]
    want = A[key]
    assert out.shape == list(want.shape)
    np.testing.assert_array_equal(out.numpy(), want)
    w = np.random.default_rng(0).standard_normal(want.shape)
    out.backward(dense.to_tensor(w))
    expect = np.zeros_like(A)
    np.add.at(expect, key, w)
    np.testing.assert_allclose(x.grad.numpy(), expect)


@pytest.mark.parametrize("n", [0, 1, 4])
def test_getitem_slices_with_bounds_past_either_end_match_numpy(n):
    """Every start and stop in [-n - 3, n + 3] with steps of both signs, as numpy
    clamps them: a start below -n with a negative step selects nothing (it read as
    the last element once), and the gradient of the selection follows."""
    a = np.arange(2.0 * n).reshape(2, n)
    bounds = [None, *range(-n - 3, n + 4)]
    for start in bounds:
        for stop in bounds:
            for step in (None, 1, 2, -1, -2, -(n + 2)):
                key = (slice(None), slice(start, stop, step))
                x = dense.to_tensor(a, stop_gradient=False)
                out = x[key]
                np.testing.assert_array_equal(out.numpy(), a[key], err_msg=repr(key))
                dense.sum(out).backward()
                expect = np.zeros_like(a)
                expect[key] = 1.0
                np.testing.assert_array_equal(x.grad.numpy(), expect, err_msg=repr(key))


@given(st.tuples(*[st.one_of(st.integers(-3, 2), st.slices(3), st.none())] * 2))
def test_getitem_basic_keys_match_numpy(key):
    a = np.arange(9).reshape(3, 3)
    key = tuple(k for k in key)
    try:
        want = a[key]
    except IndexError:
        with pytest.raises(IndexError):
            dense.to_tensor(a)[key]
        return
    np.testing.assert_array_equal(dense.to_tensor(a)[key].numpy(), want)


def test_basic_indexing_is_a_view_and_array_indexing_a_copy():
    x = dense.to_tensor(A)
    assert np.shares_memory(np.asarray(x[1, ::-2, None]), np.asarray(x))
    assert np.shares_memory(np.asarray(x[..., 3]), np.asarray(x))
    assert not np.shares_memory(np.asarray(x[np.array([0, 1])]), np.asarray(x))


_ENTRY = st.one_of(st.integers(-4, 3), st.slices(4), st.none(), st.just(Ellipsis))


@given(st.lists(_ENTRY, max_size=4).map(tuple), st.sampled_from([(4,), (3, 4), (2, 3, 4)]))
def test_basic_keys_are_views_with_scatter_gradients(key, shape):
    a = np.arange(float(np.prod(shape))).reshape(shape)
    try:
        want = a[key]
    except IndexError:
        with pytest.raises(IndexError, match="getitem"):
            dense.to_tensor(a)[key]
        return
    x = dense.to_tensor(a, stop_gradient=False)
    for _ in range(2):                     # the second call takes the remembered plan
        out = x[key]
        np.testing.assert_array_equal(out.numpy(), want)
        assert out.shape == list(np.shape(want))
    if np.shares_memory(want, a):          # numpy's view (its scalars are copies: ours a view)
        assert np.shares_memory(np.asarray(out), np.asarray(x))
    w = np.random.default_rng(1).standard_normal(np.shape(want))
    out.backward(dense.to_tensor(w))
    expect = np.zeros_like(a)
    expect[key] = w
    np.testing.assert_allclose(x.grad.numpy(), expect)


def test_remembered_plans_depend_on_the_shape_and_the_key_types():
    for shape in [(3, 4), (5, 2), (6,)]:
        a = np.arange(float(np.prod(shape))).reshape(shape)
        for key in [1, (1,), slice(1, None, -1), (Ellipsis, -1), (None, 0)]:
            np.testing.assert_array_equal(dense.to_tensor(a)[key].numpy(), a[key])
    x = dense.to_tensor(A)
    x[1]
    with pytest.raises(TypeError, match="getitem"):
        x[True]
    np.testing.assert_array_equal(x[np.int64(1)].numpy(), A[1])


@pytest.mark.parametrize("args,match", [
    (([0], [0], [1], [1], [1], []), "decrease_axis \\[1\\] must name distinct axes among axes"),
    (([1], [0], [2], [1], [1], []), "decrease_axis 1 has a window of 2 elements; expected exactly one"),
    (([], [], [], [], [], [0, 0]), "none_axis \\[0, 0\\] names an output dim more than once"),
    (([], [], [], [], [], [4]), "none_axis 4 is out of range"),
    (([0], [0], [1], [0], [], []), "stride 0 on axis 0"),
    (([0, 0], [0, 0], [1, 1], [1, 1], [], []), "basic_index: axes \\[0, 0\\] name an axis more than once"),
    (([0], [0, 1], [1], [1], [], []), "basic_index: axes, starts, ends and strides have 1, 2, 1 and 1")])
def test_basic_index_errors_name_the_op_and_argument(args, match):
    x = dense.to_tensor(A)
    with pytest.raises(ValueError, match=match):
        dense.basic_index(x, *args)
    with pytest.raises(ValueError, match=match):
        dense.basic_index.infer_meta(x, *args)


def test_getitem_with_an_integer_tensor_index():
    x = dense.to_tensor(A)
    idx = dense.to_tensor(np.array([2, 0], np.int32))
    np.testing.assert_array_equal(x[:, idx].numpy(), A[:, [2, 0]])


@pytest.mark.parametrize("key,exc", [(1.5, TypeError), ((0, "a"), TypeError),
                                     (np.array([0.5]), TypeError), (np.array([True]), TypeError),
                                     (True, TypeError), ((0, 0, 0, 0), IndexError),
                                     ((Ellipsis, Ellipsis), IndexError), (3, IndexError),
                                     ((0, -5), IndexError), ((np.array([0]), np.array([1])),
                                                             IndexError),
                                     ((slice(None, None, 0),), ValueError),
                                     ([[0], [0, 1]], ValueError)])
def test_bad_keys_raise_naming_getitem(key, exc):
    with pytest.raises(exc, match="getitem"):
        dense.to_tensor(A)[key]


INT_INDEXES = [(np.dtype(t), False) for t in (np.int8, np.int16, np.uint8, np.uint16,
                                              np.uint32, np.uint64, np.int32, np.int64)] + \
    [(np.dtype(t), True) for t in (np.int8, np.int16, np.uint8)]   # the tensors' int dtypes


@pytest.mark.parametrize("dtype, tensor", INT_INDEXES, ids=str)
def test_getitem_takes_integer_arrays_of_any_dtype_as_numpy(dtype, tensor):
    i = np.array([2, 0, 2], dtype)
    index = dense.to_tensor(i) if tensor else i
    x = dense.to_tensor(A, stop_gradient=False)
    out = x[1, index]
    np.testing.assert_array_equal(out.numpy(), A[1, i])
    out.backward(dense.to_tensor(np.ones((3, 5))))
    expect = np.zeros_like(A)
    np.add.at(expect, (1, i), 1.0)
    np.testing.assert_array_equal(x.grad.numpy(), expect)


@pytest.mark.parametrize("key", [[], (slice(None), []), (Ellipsis, []), [[]], (None, 0, [])],
                         ids=repr)
def test_an_empty_list_is_an_empty_integer_index(key):
    want = A[key]
    out = dense.to_tensor(A)[key]
    assert out.shape == list(want.shape) and out.numpy().dtype == A.dtype


@pytest.mark.parametrize("key", [np.array([True, False, True]), [True, False, True],
                                 (slice(None), dense.to_tensor(np.ones(4, bool)))], ids=repr)
def test_boolean_masks_are_refused_naming_getitem(key):
    with pytest.raises(TypeError, match="getitem: a boolean mask index is not supported.*bool"):
        dense.to_tensor(A)[key]


@pytest.mark.parametrize("key, axis, size, value", [
    (np.array([0, 3]), 0, 3, 3), ((0, np.array([7])), 1, 4, 7),
    ((None, Ellipsis, np.array([1, -6])), 2, 5, -6), ((1, None, np.array([4])), 1, 4, 4),
    ((slice(None), dense.to_tensor(np.array([[0], [-5]]))), 1, 4, -5),
    (np.array([300], np.uint16), 0, 3, 300)], ids=repr)
def test_array_index_out_of_range_names_getitem_and_the_callers_axis(key, axis, size, value):
    with pytest.raises(IndexError, match=rf"^getitem: index {value} at .* out of range for "
                                         rf"axis {axis} of size {size}"):
        dense.to_tensor(A)[key]


def test_a_uint64_index_beyond_int64_is_out_of_range_not_wrapped():
    # numpy 2.4 casts it to intp, wrapping to -1 (the last row): we refuse it instead
    with pytest.raises(IndexError, match="getitem: index 18446744073709551615 is out of range"):
        dense.to_tensor(A)[np.array([2 ** 64 - 1], np.uint64)]


def test_T_reverses_the_dims():
    x = dense.to_tensor(np.arange(6).reshape(2, 3), stop_gradient=True)
    np.testing.assert_array_equal(x.T.numpy(), np.arange(6).reshape(2, 3).T)
    assert dense.to_tensor(A).T.shape == [5, 4, 3]


# ---------------------------------------------------------------- settled details
def test_creation_defaults_follow_numpy():
    assert dense.zeros([2]).dtype == np.float64 and dense.ones([2]).dtype == np.float64
    assert dense.full([2], 3).dtype == np.int64 and dense.full([2], 3.5).dtype == np.float64
    assert dense.full([2], True).dtype == np.bool_ and dense.arange(4).dtype == np.int64
    assert dense.arange(0.0, 1.0, 0.5).dtype == np.float64
    assert dense.full([1], np.float32(2)).dtype == np.float32
    np.testing.assert_array_equal(dense.arange(2, 11, 3).numpy(), np.arange(2, 11, 3))
    assert dense.full_like(dense.to_tensor([1.0]), 2).dtype == np.float64


@pytest.mark.parametrize("call,exc,text", [
    (lambda: dense.zeros([2, -1]), ValueError, "zeros: shape [2, -1] has a negative dim"),
    (lambda: dense.full([-3], 1.0), ValueError, "full:"),
    (lambda: dense.arange(0, 5, 0), ValueError, "arange: step is 0"),
    (lambda: dense.ones([2], "float17"), TypeError, "ones: dtype"),
    (lambda: dense.cast(dense.to_tensor([1.0]), "float17"), TypeError, "cast: dtype"),
    (lambda: dense.cast(dense.to_tensor([1.0]), object), TypeError, "cast"),
    (lambda: dense.cast(dense.to_tensor([1]), None), TypeError, "cast: dtype None"),
    (lambda: dense.to_tensor([1]).astype(None), TypeError, "cast: dtype None"),
    (lambda: pow(dense.to_tensor([1.0]), 2, 3), TypeError, "pow: takes no modulo"),
])
def test_creation_and_cast_errors(call, exc, text):
    with pytest.raises(exc) as err:
        call()
    assert text in str(err.value)


def test_cast_gradient_across_floating_dtypes_and_int_casts_stop_gradient():
    x = dense.to_tensor(np.array([1.5, -2.25]), stop_gradient=False)
    y = dense.cast(x, "float32")
    assert y.dtype == np.float32 and not y.stop_gradient
    (y * 2).sum().backward()
    assert x.grad.dtype == np.float64
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])
    i = dense.cast(x, np.int32)
    assert i.stop_gradient and i.numpy().tolist() == [1, -2]


def test_non_differentiable_results_stop_gradient():
    x = dense.to_tensor(np.array([[1.0, 3.0], [2.0, 0.0]]), stop_gradient=False)
    for out in (x > 1, dense.argmax(x), dense.argmin(x, 1), dense.zeros_like(x),
                dense.cast(x, "int64"), dense.equal(x, x)):
        assert out.stop_gradient


def test_argmax_argmin_are_int64_and_flat_without_axis():
    a = np.array([[1.0, 7.0, 7.0], [9.0, -1.0, 9.0]])
    x = dense.to_tensor(a)
    assert dense.argmax(x).shape == [] and dense.argmax(x).item() == 3
    assert dense.argmin(x).item() == 4 and dense.argmax(x).dtype == np.int64
    np.testing.assert_array_equal(dense.argmax(x, 1).numpy(), [1, 0])
    assert dense.argmax(x, keepdim=True).shape == [1, 1]
    with pytest.raises(ValueError, match="argmax"):
        dense.argmax(dense.to_tensor(np.zeros((2, 0))))


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("axis, keepdim", [(None, False), (None, True), (0, False), (1, True)])
def test_arg_reductions_of_complex_follow_numpys_order(name, axis, keepdim):
    """Complex values in numpy's lexicographic order (real part, then imaginary), as
    ``max``/``min`` take them; ties and a NaN as numpy resolves them."""
    a = np.array([[1 + 2j, 3 - 1j, 3 + 0j, 2 + 5j], [np.nan + 0j, 1, 3 + 0j, 3 - 4j]],
                 np.complex64)
    out = getattr(dense, name)(dense.to_tensor(a), axis=axis, keepdim=keepdim)
    ref = getattr(np, name)(a, axis=axis, keepdims=keepdim)
    assert out.dtype == np.int64 and out.shape == list(np.shape(ref))
    np.testing.assert_array_equal(out.numpy(), ref)


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("shape, axis, keepdim", [((3, 0), 0, False), ((3, 0), 0, True),
                                                  ((0, 2, 3), -1, False), ((2, 0, 4), 2, True)])
def test_arg_reductions_over_a_nonempty_axis_of_an_empty_tensor_are_empty(name, shape, axis,
                                                                          keepdim):
    a = np.zeros(shape)
    out = getattr(dense, name)(dense.to_tensor(a), axis=axis, keepdim=keepdim)
    ref = getattr(np, name)(a, axis=axis, keepdims=keepdim)
    assert out.shape == list(ref.shape) and out.dtype == np.int64


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("shape, axis", [((3, 0), 1), ((3, 0), -1), ((3, 0), None),
                                         ((0,), 0)])
def test_arg_reductions_over_a_zero_length_axis_raise_naming_the_op(name, shape, axis):
    with pytest.raises(ValueError):
        getattr(np, name)(np.zeros(shape), axis=axis)          # numpy refuses too
    with pytest.raises(ValueError, match=rf"{name}: .*\[{', '.join(map(str, shape))}\]"):
        getattr(dense, name)(dense.to_tensor(np.zeros(shape)), axis=axis)


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_arg_reductions_of_a_large_locked_tensor_match_numpy_and_leave_it_locked(name, axis):
    """numpy copies a read-only argmax input; the kernel reads the tensor's locked buffer
    through an alias (kernels.core.owned.readable) and must give numpy's answer."""
    from kernels.core.owned import READ_ALIAS_BYTES
    a = np.random.default_rng(5).standard_normal((64, READ_ALIAS_BYTES // 8))
    x = dense.to_tensor(a)
    got = getattr(dense, name)(x, axis=axis).numpy()
    np.testing.assert_array_equal(got, getattr(np, name)(a, axis=axis))
    assert not np.asarray(x).flags.writeable
    np.testing.assert_array_equal(x.numpy(), a)


def test_readable_aliases_only_large_read_only_arrays():
    from kernels.core.owned import READ_ALIAS_BYTES, frozen, lock, readable
    big = lock(np.arange(READ_ALIAS_BYTES // 8 * 3, dtype=np.float64))
    alias = readable(big[::3])
    assert alias.flags.writeable and np.shares_memory(alias, big)
    assert alias.strides == big[::3].strides and alias.base.array is not None
    np.testing.assert_array_equal(alias, big[::3])
    assert frozen(big) and not big.flags.writeable       # the tensor's buffer is untouched
    small = lock(np.arange(4.0))
    writable = np.arange(READ_ALIAS_BYTES)
    assert readable(small) is small and readable(writable) is writable
    assert readable([1, 2]) == [1, 2]


def test_max_min_keep_int_dtypes_and_send_the_gradient_to_one_extremum():
    """Hand-worked: each slice's gradient goes to its first arg-extremum (torch's max(dim);
    the issue's rule), a NaN extreme to the first NaN."""
    assert dense.max(dense.to_tensor(np.array([3, 1], np.int8))).dtype == np.int8
    a = np.array([[1.0, 7.0, 7.0], [9.0, -1.0, 9.0]])
    x = dense.to_tensor(a, stop_gradient=False)
    dense.max(x, axis=1).backward(dense.to_tensor([10.0, 20.0]))
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 10, 0], [20, 0, 0]])
    x.clear_grad()
    dense.min(x).backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 0, 0], [0, 1, 0]])
    x = dense.to_tensor(np.array([[2.0, 2.0], [1.0, 2.0]], np.float32), stop_gradient=False)
    dense.max(x).backward()
    assert x.grad.dtype == np.float32
    np.testing.assert_array_equal(x.grad.numpy(), [[1, 0], [0, 0]])
    x = dense.to_tensor([[1.0, np.nan, 3.0, np.nan]], stop_gradient=False)
    dense.max(x, axis=1).backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 1, 0, 0]])
    with pytest.raises(ValueError, match="max: cannot reduce"):
        dense.max(dense.to_tensor(np.zeros((2, 0))), axis=1)


@pytest.mark.parametrize("op, x_grad, y_grad", [
    ("maximum", [0.5, 1, 0.5, 0, 0, 0], [0.5, 0, 0.5, 1, 0, 0]),
    ("minimum", [0.5, 0, 0.5, 1, 0, 0], [0.5, 1, 0.5, 0, 0, 0])])
def test_maximum_minimum_split_a_tie_and_pass_nothing_through_nan(op, x_grad, y_grad):
    """Hand-worked, as Paddle 3.3 and torch give."""
    x = dense.to_tensor([1.0, 2.0, 0.0, -1.0, np.nan, 1.0], stop_gradient=False)
    y = dense.to_tensor([1.0, 1.0, 0.0, 2.0, 1.0, np.nan], stop_gradient=False)
    dense.sum(getattr(dense, op)(x, y)).backward()
    np.testing.assert_array_equal(x.grad.numpy(), x_grad)
    np.testing.assert_array_equal(y.grad.numpy(), y_grad)


def test_clip_passes_the_gradient_at_its_bounds():
    """Paddle 3.3 and torch: the bounds are inside (relu and relu6 stay strict)."""
    x = dense.to_tensor([1.0, 2.0, 0.0, -1.0, 0.5], stop_gradient=False)
    dense.sum(dense.clip(x, 0.0, 1.0)).backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1, 0, 1, 0, 1])
    x = dense.to_tensor([0.0, 6.0, 3.0], stop_gradient=False)
    dense.sum(dense.relu(x) + dense.clip(x, max=6.0)).backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1, 2, 2])


@pytest.mark.parametrize("name", ["sum", "mean", "max", "min", "prod", "argmax", "argmin"])
@pytest.mark.parametrize("axis", [0, -1])
def test_reductions_of_a_0d_tensor_take_axis_0_and_minus_1(name, axis):
    """numpy (mean aside) and Paddle reduce a 0-d array over axis 0 or -1 to itself."""
    ref = getattr(np, name)(np.array(3.5), axis=axis) if name != "mean" else np.float64(3.5)
    for keepdim in (False, True):
        out = getattr(dense, name)(dense.to_tensor(3.5), axis=axis, keepdim=keepdim)
        assert out.shape == [] and out.dtype == np.asarray(ref).dtype and out.item() == ref
    with pytest.raises(ValueError, match=f"{name}: axis 1 is out of range"):
        getattr(dense, name)(dense.to_tensor(3.5), axis=1)


def test_sum_with_empty_axis_reduces_everything():
    x = dense.to_tensor(np.arange(6.0).reshape(2, 3))
    assert dense.sum(x, axis=[]).shape == [] and dense.sum(x, axis=[]).item() == 15.0
    assert dense.mean(x, axis=[], keepdim=True).shape == [1, 1]


def test_prod_gradient_with_zeros():
    a = np.array([[2.0, 0.0, 3.0], [0.0, 0.0, 4.0], [1.0, 2.0, 3.0]])
    x = dense.to_tensor(a, stop_gradient=False)
    dense.prod(x, axis=1).backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 6, 0], [0, 0, 0], [6, 3, 2]])


@pytest.mark.parametrize("sx,sy,tx,ty", [((2, 3), (4,), False, False), ((3, 2), (3, 2), False,
                                                                          False),
                                         ((2, 2, 3), (3, 2, 4), False, False), ((), (3,), False,
                                                                                False)])
def test_matmul_shape_errors_name_the_op(sx, sy, tx, ty):
    with pytest.raises(ValueError, match="matmul"):
        dense.matmul(np.ones(sx), np.ones(sy), tx, ty)


@pytest.mark.parametrize("call,exc,text", [
    (lambda x: dense.transpose(x, [0, 0, 1]), ValueError, "transpose: perm"),
    (lambda x: dense.transpose(x, [0, 1]), ValueError, "transpose: perm"),
    (lambda x: dense.squeeze(x, [3]), ValueError, "squeeze: axis 3"),
    (lambda x: dense.unsqueeze(x, [5]), ValueError, "unsqueeze: axis 5"),
    (lambda x: dense.flatten(x, 2, 1), ValueError, "flatten: start_axis 2"),
    (lambda x: dense.concat([x, x[0]]), ValueError, "concat: tensor 1"),
    (lambda x: dense.concat([]), ValueError, "concat: argument 'xs'"),
    (lambda x: dense.concat(x), TypeError, "concat: argument 'xs'"),
    (lambda x: dense.stack([x, x[:, :2]]), ValueError, "stack: tensor 1"),
    (lambda x: dense.slice(x, [0, 0], [0, 1], [1, 2]), ValueError, "slice: axes"),
    (lambda x: dense.slice(x, [0], [0], [1, 2]), ValueError, "slice:"),
    (lambda x: dense.strided_slice(x, [0], [0], [1], [0]), ValueError, "strided_slice: stride"),
    (lambda x: dense.index_select(x, np.array([0.0])), TypeError, "index_select: index dtype"),
    (lambda x: dense.index_select(x, np.array([[0]])), ValueError, "index_select: index has"),
    (lambda x: dense.index_select(x, np.array([3])), IndexError, "index_select: index 3"),
    (lambda x: dense.mean(x, [0, 0]), ValueError, "mean: axis [0, 0] repeats"),
    (lambda x: dense.prod(x, [3]), ValueError, "prod: axis 3"),
    (lambda x: dense.where(x, x, x), TypeError, "where: condition"),
    (lambda x: dense.where(x > 0, x, np.ones(7)), ValueError, "where: shapes"),
])
def test_shape_and_index_errors_name_the_op(call, exc, text):
    x = dense.to_tensor(A)
    with pytest.raises(exc) as err:
        call(x)
    assert text in str(err.value)


def test_infer_meta_takes_lists_and_needs_no_data():
    m = dense.MetaTensor((2, 3), np.float32)
    assert dense.concat.infer_meta([m, m], 1).shape == (2, 6)
    assert dense.stack.infer_meta([m, m, m]).shape == (3, 2, 3)
    assert dense.matmul.infer_meta(m, dense.MetaTensor((3,), np.float64)).shape == (2,)
    assert dense.full.infer_meta([2], 1).dtype == np.int64
    assert dense.argmax.infer_meta(m).shape == ()
    assert dense.strided_slice.infer_meta(m, [1], [-1], [-9], [-2]).shape == (2, 2)


def test_shape_ops_are_views():
    x = dense.to_tensor(A)
    for out in (dense.transpose(x, [2, 0, 1]), dense.squeeze(dense.unsqueeze(x, [0])),
                dense.flatten(x), dense.slice(x, [1], [1], [3]), x.T):
        assert np.shares_memory(np.asarray(out), np.asarray(x))


def test_concat_stack_promote_and_route_each_gradient():
    a = dense.to_tensor(np.ones((1, 2), np.float32), stop_gradient=False)
    b = dense.to_tensor(np.ones((2, 2)), stop_gradient=False)
    out = dense.concat([a, b, a])
    assert out.dtype == np.float64
    out.backward(dense.to_tensor(np.arange(8.0).reshape(4, 2)))
    np.testing.assert_array_equal(a.grad.numpy(), [[6.0, 8.0]])
    assert a.grad.dtype == np.float32
    np.testing.assert_array_equal(b.grad.numpy(), [[2.0, 3.0], [4.0, 5.0]])


def test_generated_api_docstring_examples_run():
    res = doctest.testmod(api)
    assert res.failed == 0 and res.attempted > 100


def test_slice_rule_docstring_examples_run():
    import kernels.infermeta.slice as rules
    res = doctest.testmod(rules)
    assert res.failed == 0 and res.attempted > 0


def test_readme_mlp_trains_with_a_decreasing_loss(capsys):
    import os
    import re
    readme = open(os.path.join(os.path.dirname(__file__), "..", "README.md")).read()
    code = re.search(r"```python\n(# mlp\.py.*?)```", readme, re.S).group(1)
    exec(compile(code, "README mlp.py", "exec"), {})
    losses = [float(v) for v in re.findall(r"loss ([0-9.]+)", capsys.readouterr().out)]
    assert len(losses) == 6 and all(b < a for a, b in zip(losses, losses[1:]))
    assert f"step 5: loss {losses[-1]:.4f}" in readme  # the README shows this run's output


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64])
@pytest.mark.parametrize("shape, axis", [((2, 5), 1), ((3, 7, 4), (0, 2)), ((6,), None),
                                         ((5, 3), 0), ((2, 0, 3), 1)])
def test_mean_has_numpys_bits(dtype, shape, axis):
    """mean divides the own-dtype sum by the count (a remembered 0-d divisor for float
    dtypes), which gives numpy's np.mean to the bit; an empty slice gives NaN as numpy."""
    rng = np.random.default_rng(7)
    a = (rng.standard_normal(shape) * 1e3).astype(dtype)
    x = dense.to_tensor(a)
    for _ in range(2):               # the second call takes the remembered divisor
        got = dense.mean(x, axis=axis).numpy()
        with np.errstate(all="ignore"):
            want = np.mean(a, axis=axis)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("cond", [True, False])
def test_where_takes_a_python_bool_condition_as_numpy(cond):
    x = np.arange(3.0)
    for y in (0.0, np.full(3, 7.0)):
        out = dense.where(cond, dense.to_tensor(x), y)
        np.testing.assert_array_equal(out.numpy(), np.where(cond, x, y))
        assert out.numpy().dtype == np.where(cond, x, y).dtype
    small = np.arange(3, dtype=np.int8)
    assert dense.where(cond, dense.to_tensor(small), 0).numpy().dtype == np.int8
    assert dense.where.infer_meta(cond, dense.to_tensor(x), 0.0).shape == (3,)


@pytest.mark.parametrize("cond", [1, 0.5, 1j])
def test_where_refuses_a_python_number_as_condition(cond):
    with pytest.raises(TypeError, match=r"where: argument 'condition' must be a bool"):
        dense.where(cond, dense.to_tensor(np.arange(3.0)), 0.0)


@pytest.mark.parametrize("axis", [0, -1, [0, -1], None])
def test_squeeze_of_a_0d_tensor_takes_axis_0_and_minus_1(axis):
    x = dense.to_tensor(np.array(2.5), stop_gradient=False)
    out = dense.squeeze(x, axis)
    assert out.shape == [] and float(out) == 2.5
    out.backward()
    assert float(x.grad) == 1.0


def test_squeeze_of_a_0d_tensor_refuses_other_axes():
    with pytest.raises(ValueError, match=r"squeeze: axis 1 .* rank 0; expected none"):
        dense.squeeze(dense.to_tensor(np.array(2.5)), 1)


def test_clip_bound_beyond_an_int_dtype_names_the_bound():
    with pytest.raises(TypeError, match=r"clip: dtype int8 cannot hold the arguments \[300, None\]"):
        dense.clip(dense.to_tensor(np.arange(3, dtype=np.int8)), 300)


def test_scalar_arguments_take_one_element_tensors_as_paddle_does():
    """Paddle's clip(x, min=t, max=t), full(shape, t) and arange(t, t, t): a one-element
    Tensor stands for its value (Paddle's test_clip_op, test_full_op, test_arange)."""
    x = np.array([[0.1, 0.5, 0.9]], np.float32)
    got = dense.clip(dense.to_tensor(x), dense.to_tensor(np.array([0.2], np.float32)),
                     dense.to_tensor(np.array(0.8, np.float32)))
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got.numpy(), np.clip(x, np.float32(0.2), np.float32(0.8)))
    np.testing.assert_array_equal(dense.full([2], dense.to_tensor(np.array(4.0))).numpy(),
                                  [4.0, 4.0])
    t = [dense.to_tensor(np.array(v)) for v in (1, 7, 2)]
    got = dense.arange(*t)
    assert got.dtype == np.int64 and got.numpy().tolist() == [1, 3, 5]
    with pytest.raises(TypeError, match=r"^full: argument 'fill_value' .*one-element Tensor"):
        dense.full([2], dense.to_tensor(np.array([1.0, 2.0])))


def test_squeeze_with_an_empty_axis_list_drops_every_size_one_dim_as_paddle():
    """Paddle's rule: axis None or [] squeezes every size-1 dim (numpy's axis=() drops
    none); a listed dim that is not 1 stays."""
    x = dense.to_tensor(np.zeros((1, 3, 1, 2)))
    assert dense.squeeze(x, axis=[]).shape == [3, 2] == dense.squeeze(x).shape
    assert dense.squeeze(x, axis=[1, 2]).shape == [1, 3, 2]


@pytest.mark.parametrize("value, spec", [(3.14159, ".2f"), (3.14159, ""), (7, "03d"),
                                         (1 + 2j, ".1f"), (True, "")])
def test_a_0d_tensor_formats_as_numpy_formats_its_0d_array(value, spec):
    a = np.array(value)
    assert format(dense.to_tensor(a), spec) == format(a, spec)


def test_format_spec_on_a_tensor_of_other_shape_is_a_type_error_naming_format():
    t = dense.to_tensor([1.0, 2.0])
    assert format(t, "") == str(t)
    with pytest.raises(TypeError, match=r"^format: spec '\.2f' needs a 0-d tensor"):
        format(t, ".2f")


def test_every_method_op_is_its_function_with_the_tensor_first():
    """``x.op(...)`` is ``dense.op(x, ...)`` for every name of METHOD_OPS: the same values,
    shapes and dtypes, keywords included, and the same gradient."""
    from dense.tensor import METHOD_OPS
    a = np.array([[0.5, -1.5, 2.0], [3.0, 0.25, -0.75]])
    extra = {"clip": ((-1.0, 1.0), {}), "pow": ((2.0,), {}), "matmul": ((a.T,), {}),
             "transpose": (([1, 0],), {}), "unsqueeze": ((0,), {}), "cast": (("float32",), {}),
             "index_select": ((np.array([1, 0, 1]),), {"axis": 1}),
             "gather": ((np.array([1, 0]),), {"axis": 0}), "mean": ((), {"axis": 1}),
             "max": ((), {"axis": 0, "keepdim": True})}
    for name in ("add", "subtract", "multiply", "divide", "maximum", "minimum"):
        extra[name] = ((a[::-1].copy(),), {})
    for name in METHOD_OPS:
        args, kwargs = extra.get(name, ((), {}))
        x = dense.to_tensor(np.abs(a) if name in ("log", "sqrt") else a)
        want = getattr(dense, name)(x, *args, **kwargs)
        got = getattr(x, name)(*args, **kwargs)
        assert got.shape == want.shape and got.dtype == want.dtype, name
        np.testing.assert_array_equal(got.numpy(), want.numpy(), err_msg=name)
    x = dense.to_tensor(a, stop_gradient=False)
    x.mean(axis=1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full(a.shape, 1 / 3))


def test_methods_take_sizes_one_by_one_and_refuse_extra_arguments_as_the_functions_do():
    t = dense.to_tensor(np.ones((2, 3)))
    assert t.unsqueeze(0, 1).shape == dense.unsqueeze(t, 0, 1).shape == [1, 1, 2, 3]
    assert dense.to_tensor(np.ones((2, 3, 4))).transpose(2, 0, 1).shape == [4, 2, 3]
    for call in (lambda: t.mean(1, False, "junk"), lambda: t.clip(0, 3, 99),
                 lambda: t.sum(1, False, "junk")):
        with pytest.raises(TypeError):
            call()
    from kernels.core import dispatch
    with pytest.raises(TypeError, match=r"^sum: takes at most 3 arguments"):
        dispatch.call("dense", "sum", t, 1, False, "junk")
    assert "The arithmetic mean" in dense.Tensor.mean.__doc__
    import pickle
    assert pickle.loads(pickle.dumps(dense.Tensor.mean)) is dense.Tensor.mean
