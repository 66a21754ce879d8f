"""Dtypes and Python scalars in dense ops, against numpy 2: no op returns a dtype
phisparse does not support, comparisons with out-of-range Python ints answer as
numpy 2 does, and bad fills, powers and dtypes raise errors that name the op."""
import itertools
import operator

import numpy as np
import pytest

import dense
import sparse
from kernels.core.dtypes import ALL, BOOL, INTS

INT_DTYPES = [d.name for d in INTS]
COMPARE = {"equal": operator.eq, "not_equal": operator.ne, "less_than": operator.lt,
           "less_equal": operator.le, "greater_than": operator.gt,
           "greater_equal": operator.ge}
UNSUPPORTED = [np.uint16, np.uint32, np.uint64, np.longdouble]


def _values(dtype):
    """A few values of ``dtype`` including its extremes (bool: both)."""
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return np.array([True, False, True])
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return np.array([info.min, 0, 1, info.max], dt)
    return np.array([-1.5, 0, 2], dt)


# ------------------------------------------------------------ 1. supported dtypes only
@pytest.mark.parametrize("dtype", [d.name for d in BOOL + INTS])
@pytest.mark.parametrize("op", ["sum", "prod"])
def test_integer_sums_and_products_widen_to_int64_and_stay_usable(op, dtype):
    a = np.array([True, True, False]) if dtype == "bool" else \
        np.array([np.iinfo(dtype).max, np.iinfo(dtype).max, 3], dtype)
    x = dense.to_tensor(a)
    out = getattr(dense, op)(x)
    assert out.dtype == np.int64 == getattr(dense, op).infer_meta(x).dtype
    assert out.item() == getattr(np, op)(a.astype(np.int64))
    np.testing.assert_array_equal((out + 1).numpy(), out.numpy() + 1)
    assert dense.cast(out, "float64").item() == float(out.item())
    np.testing.assert_allclose(dense.exp(dense.cast(out, "float64") * 0).numpy(), 1.0)


def test_integer_prod_along_an_axis_widens_uint8_as_sum_does():
    a = np.array([[200, 2], [200, 3]], np.uint8)
    out = dense.prod(dense.to_tensor(a), axis=0, keepdim=True)
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out.numpy(), np.prod(a.astype(np.int64), axis=0,
                                                       keepdims=True))
    assert dense.mean(dense.to_tensor(a)).dtype == np.mean(a).dtype == np.float64


@pytest.mark.parametrize("x_dtype", [d.name for d in ALL])
@pytest.mark.parametrize("y_dtype", [d.name for d in ALL])
def test_binary_ops_on_supported_dtypes_give_numpys_dtype_which_is_supported(x_dtype, y_dtype):
    a, b = _values(x_dtype)[:3], _values(y_dtype)[:3]
    x, y = dense.to_tensor(a), dense.to_tensor(b)
    for name in ("add", "multiply", "maximum", *COMPARE):
        with np.errstate(all="ignore"):
            try:
                want = getattr(np, {"add": "add", "multiply": "multiply",
                                    "maximum": "maximum"}.get(name, name.replace(
                                        "_than", "")))(a, b)
            except TypeError:       # numpy refuses the pair (a comparison of complex, ...)
                continue
            out = getattr(dense, name)(x, y)
        assert out.dtype == want.dtype and out.dtype in ALL, name
    assert dense.where(dense.to_tensor(a != 0), x, y).dtype == np.result_type(a, b)
    assert dense.concat([x, y]).dtype == np.result_type(a, b)


@pytest.mark.parametrize("dtype", [d.name for d in ALL])
def test_unary_ops_and_reductions_give_supported_dtypes(dtype):
    x = dense.to_tensor(_values(dtype))
    with np.errstate(all="ignore"):
        for name in ("abs", "exp", "sqrt", "sin", "tanh", "sum", "prod", "mean", "max"):
            try:
                out = getattr(dense, name)(x)
            except TypeError as exc:          # a dtype the op refuses, by name
                assert str(exc).startswith(f"{name}"), exc
                continue
            assert out.dtype in ALL, (name, out.dtype)


@pytest.mark.parametrize("bad", UNSUPPORTED, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name,call", [
    ("add", lambda t, a: t + a), ("add", lambda t, a: a + t),
    ("multiply", lambda t, a: t * a), ("maximum", lambda t, a: dense.maximum(t, a)),
    ("where", lambda t, a: dense.where(np.array([True]), t, a)),
    ("concat", lambda t, a: dense.concat([t, a])),
    ("matmul", lambda t, a: dense.matmul(t, a)),
    ("less_than", lambda t, a: t < a),
    ("add", lambda t, a: dense.add.infer_meta(t, a))])
def test_array_operands_of_unsupported_dtypes_raise_type_error_naming_the_op(name, call, bad):
    t = dense.to_tensor(np.array([2], np.uint8))
    a = np.array([1], bad)
    with pytest.raises(TypeError, match=rf"^{name}: .*{np.dtype(bad).name} is not supported"):
        call(t, a)
    with pytest.raises(TypeError, match=rf"to_tensor: dtype {np.dtype(bad).name} is not"):
        dense.to_tensor(a)


def test_numpy_scalars_and_raw_arrays_of_unsupported_dtypes_are_refused():
    t = dense.to_tensor(np.array([2], np.uint8))
    with pytest.raises(TypeError, match="^add: scalar np.uint16.*uint16 is not supported"):
        t + np.uint16(1)
    with pytest.raises(TypeError, match="^Tensor: .*uint32 is not supported"):
        dense.Tensor(np.array([1], np.uint32))
    with pytest.raises(TypeError, match="^add: y dtype object is not supported"):
        dense.add(t, np.array([None], object))


# ------------------------------------------------------------ 2. out-of-range Python ints
@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("value", [1000, -1, -129, 300, 2 ** 31, 2 ** 63, 2 ** 64, -2 ** 64,
                                   2 ** 100])
@pytest.mark.parametrize("name", COMPARE)
def test_comparisons_with_any_python_int_match_numpy_2(name, value, dtype):
    a = _values(dtype)
    x = dense.to_tensor(a)
    op = COMPARE[name]
    for got, want in ((op(x, value), op(a, value)), (op(value, x), op(value, a)),
                      (getattr(dense, name)(x, value), op(a, value))):
        assert got.dtype == np.bool_ and got.stop_gradient
        np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("name,call", [
    ("add", lambda x: x + 1000), ("subtract", lambda x: 1000 - x),
    ("multiply", lambda x: dense.multiply(x, -1000)),
    ("maximum", lambda x: dense.maximum(x, 2 ** 64))])
def test_arithmetic_with_an_out_of_range_int_raises_naming_the_op_and_range(name, call):
    x = dense.to_tensor(np.array([1, 2], np.int8))
    assert (x < 1000).numpy().all()     # a comparison's stand-in is never reused by arithmetic
    with np.errstate(all="ignore"), pytest.raises(OverflowError):
        np.array([1, 2], np.int8) + 1000        # numpy raises too
    with pytest.raises(TypeError, match=rf"^{name}: scalar .* \(int8 holds \[-128, 127\]\)"):
        call(x)


@pytest.mark.parametrize("dtype", INT_DTYPES + [np.bool_])
@pytest.mark.parametrize("value", [1000, -1, -129, 300, 2 ** 31, 2 ** 63, 2 ** 64, 2 ** 100])
def test_true_division_by_any_python_int_is_numpys_float64(value, dtype):
    """numpy divides integers in float64, so an int beyond the dtype takes part as one."""
    a = np.array([1, 0, 1], dtype) if dtype == np.bool_ else _values(dtype)
    x = dense.to_tensor(a)
    with np.errstate(all="ignore"):
        for got, want in ((x / value, a / value), (value / x, value / a),
                          (dense.divide(x, value), a / value)):
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got.numpy(), want)
    with pytest.raises(TypeError, match="^multiply: scalar"):
        x * 2 ** 100                    # the float64 stand-in is never reused by arithmetic
    s = sparse.sparse_coo_tensor([[0, 2]], a[:2], [3])
    np.testing.assert_array_equal((s / value).to_dense().numpy(),
                                  np.array([a[0], 0, a[1]]) / value)


def test_bool_tensors_compare_with_python_ints_as_numpy_does():
    a = np.array([True, False])
    for v in (2, -1, 1000):
        np.testing.assert_array_equal((dense.to_tensor(a) < v).numpy(), a < v)
    with pytest.raises(OverflowError):
        a < 2 ** 70
    with pytest.raises(TypeError, match="^less_than: scalar"):
        dense.to_tensor(a) < 2 ** 70


# ------------------------------------------------------------ 3. fill values
@pytest.mark.parametrize("name,call,text", [
    ("full", lambda: dense.full([2], float("nan"), dtype="int64"), "nan cannot become int64"),
    ("full", lambda: dense.full([2], float("inf"), dtype="int32"), "inf cannot become int32"),
    ("full", lambda: dense.full([2], -np.inf, dtype="uint8"), "-inf cannot become uint8"),
    ("full_like", lambda: dense.full_like(dense.to_tensor(np.array([1], np.int8)),
                                          float("nan")), "nan cannot become int8"),
    ("full", lambda: dense.full([2], 300, dtype="uint8"), r"300 is out of the range of uint8; "
     r"expected a value in \[0, 255\]"),
    ("full", lambda: dense.full([2], 1e20, dtype="int64"), r"1e\+20 is out of the range of int64"),
    ("full_like", lambda: dense.full_like(dense.to_tensor(np.array([1], np.int8)), 1000),
     r"1000 is out of the range of int8; expected a value in \[-128, 127\]"),
    ("full_like", lambda: dense.full_like(dense.to_tensor([1.0]), -1, dtype="uint8"),
     "-1 is out of the range of uint8"),
    ("full", lambda: dense.full.infer_meta([2], 300, "uint8"), "300 is out of the range")])
def test_fill_values_an_int_dtype_cannot_hold_raise_value_error(name, call, text):
    with pytest.raises(ValueError, match=rf"^{name}: fill_value {text}"):
        call()


@pytest.mark.parametrize("value,dtype", [(2.5, "int64"), (-2.5, "int8"), (255.9, "uint8"),
                                         (-0.9, "uint8"), (np.float32(7.75), "int16"),
                                         (np.int64(-3), "int32"), (True, "uint8")])
def test_fills_an_int_dtype_holds_truncate_as_numpy(value, dtype):
    out = dense.full([2], value, dtype=dtype)
    want = np.full(2, value, dtype)
    assert out.dtype == want.dtype
    np.testing.assert_array_equal(out.numpy(), want)
    like = dense.full_like(dense.to_tensor(np.zeros(2, dtype)), value)
    np.testing.assert_array_equal(like.numpy(), want)


def test_to_tensor_of_a_value_out_of_the_dtypes_range_raises_value_error():
    with pytest.raises(OverflowError):
        np.array(300, np.uint8)
    for data in (300, [1, -1]):
        with pytest.raises(ValueError, match=r"^to_tensor: .* uint8 \(it holds \[0, 255\]\)"):
            dense.to_tensor(data, dtype="uint8")



@pytest.mark.parametrize("value", [2 ** 63, 2 ** 70, -2 ** 63 - 1])
def test_a_python_int_fill_beyond_int64_names_the_range_not_numpys_dtype(value):
    """numpy makes such an int uint64 or object; the error says what was wrong with it."""
    assert np.asarray(value).dtype in (np.uint64, object)
    with pytest.raises(ValueError, match=rf"^full: fill_value {value} is out of the range of "
                                         r"int64 \(the dtype a Python int takes\)"):
        dense.full([2], value)
    np.testing.assert_array_equal(dense.full([2], value, dtype="float64").numpy(),
                                  np.full(2, float(value)))
    assert dense.full([1], 2 ** 63 - 1).numpy()[0] == 2 ** 63 - 1


@pytest.mark.parametrize("data", [2 ** 63, [2 ** 64], [[1], [2 ** 70]], (-2 ** 63 - 1,)])
def test_to_tensor_of_python_ints_beyond_int64_names_the_range(data):
    with pytest.raises(ValueError, match=r"^to_tensor: data holds a Python int out of the "
                                         r"range of int64 \[-9223372036854775808, "):
        dense.to_tensor(data)
    want = np.array(data, dtype=np.float64)
    np.testing.assert_array_equal(dense.to_tensor(data, dtype="float64").numpy(), want)


def test_to_tensor_of_items_of_no_numeric_dtype_keeps_its_type_error():
    with pytest.raises(TypeError, match=r"^to_tensor: data of type list is not numbers"):
        dense.to_tensor([1, None])
    with pytest.raises(TypeError, match=r"^to_tensor: dtype uint64 is not supported"):
        dense.to_tensor(np.array([1], np.uint64))

# ------------------------------------------------------------ 4. negative integer powers
@pytest.mark.parametrize("call", [
    lambda: dense.to_tensor(np.array([2])) ** -1,
    lambda: dense.pow(dense.to_tensor(np.array([2], np.int8)), -1),
    lambda: 2 ** dense.to_tensor(np.array([1, -2])),
    lambda: dense.pow(dense.to_tensor(np.array([2, 3])), np.array([0, -1], np.int32)),
    lambda: dense.to_tensor(np.array([True])) ** -1])
def test_integers_to_negative_integer_powers_raise_value_error_naming_pow(call):
    with pytest.raises(ValueError, match="^pow: the exponent y holds negative integers"):
        call()


def test_powers_numpy_allows_match_numpy():
    a, e = np.array([2, 3, -4], np.int8), np.array([0, 2, 3], np.int64)
    for x, y, want in ((a, e, a ** e), (a.astype(np.float32), -1, a.astype(np.float32) ** -1),
                       (a, -1.0, a ** -1.0), (a, np.uint8(2), a ** np.uint8(2))):
        out = dense.to_tensor(x) ** y if not isinstance(y, np.ndarray) \
            else dense.pow(dense.to_tensor(x), y)
        assert out.dtype == want.dtype
        np.testing.assert_array_equal(out.numpy(), want)


# ------------------------------------------------------------ 5. arange
def test_arange_refuses_bool():
    with pytest.raises(TypeError, match="^arange: dtype bool is not supported"):
        dense.arange(0, 3, dtype=bool)
    with pytest.raises(TypeError, match="^arange: dtype bool"):
        dense.arange.infer_meta(2, dtype="bool")


_ARANGE_ARGS = [0, 3, 2.0, -1.5, True, np.float32(1), np.float32(-0.5), np.float16(1),
                np.float64(1), np.int8(2), np.int32(1), np.int64(3)]


@pytest.mark.parametrize("start", _ARANGE_ARGS, ids=repr)
def test_arange_dtype_is_numpys_for_any_mix_of_scalars(start):
    """numpy 2's arange promotes each argument by its kind alone: three float32
    scalars give float64 and three int32 int64 (a float32 result was a probe's find)."""
    for end, step in itertools.product(_ARANGE_ARGS, repeat=2):
        if not step:
            continue
        want = np.arange(start, end, step)
        got = dense.arange(start, end, step)
        assert got.dtype == want.dtype, (start, end, step)
        np.testing.assert_array_equal(got.numpy(), want)


# ------------------------------------------------------------ 6. == None and other objects
@pytest.mark.parametrize("other", [None, "a", object()], ids=["None", "str", "object"])
def test_equality_with_a_non_operand_is_python_identity(other):
    """As torch and Paddle: ``t == None`` is False and ``t != None`` is True (Python bools)."""
    t = dense.to_tensor(np.array([1.0, 2.0]))
    assert (t == other) is False and (t != other) is True
    assert (other == t) is False and (other != t) is True
    with pytest.raises(TypeError):
        t < other
    with pytest.raises(TypeError, match="^equal: argument 'y' must be a Tensor"):
        dense.equal(t, other)


@pytest.mark.parametrize("other", ["ab", b"ab", None], ids=repr)
def test_operators_refuse_strings_and_other_non_operands_by_name(other):
    """A string never repeats itself by a one-element integer tensor (``t * 'ab'`` gave
    'ababab' through ``__index__``): each operator raises TypeError naming its op."""
    t = dense.to_tensor(np.array([3]))
    for fn, op in ((lambda: t * other, "multiply"), (lambda: other * t, "multiply"),
                   (lambda: t + other, "add"), (lambda: other - t, "subtract"),
                   (lambda: t / other, "divide"), (lambda: t ** other, "pow"),
                   (lambda: t @ other, "matmul"), (lambda: t <= other, "less_equal")):
        with pytest.raises(TypeError, match=rf"^{op}: the other operand of .* got "
                                            rf"{type(other).__name__}$"):
            fn()


def test_operators_defer_to_a_class_that_defines_the_reflected_method():
    """Python still asks an operand that implements the reflected operator."""
    class Other:
        def __radd__(self, x):
            return "radd"

        def __gt__(self, x):
            return "gt"

    t = dense.to_tensor(np.array([1.0]))
    assert t + Other() == "radd" and (t < Other()) == "gt"


def test_empty_integer_powers_to_negative_exponents_are_empty_as_numpy():
    """numpy refuses int ** -1 only when there is a value to compute: empty stays empty."""
    empty = dense.to_tensor(np.zeros(0, np.int32))
    assert (empty ** -1).shape == [0] and (empty ** -1).dtype == np.int32
    s = sparse.sparse_coo_tensor(np.zeros((2, 0), np.int64), np.zeros(0, np.int32), [2, 3])
    assert sparse.pow(s, -1).shape == [2, 3] and sparse.pow(s, -1).nnz() == 0
    with pytest.raises(ValueError, match="pow"):
        dense.to_tensor(np.array([2], np.int32)) ** -1


def test_complex_fills_into_integer_dtypes_are_refused_by_name():
    """numpy casts a complex fill by its real part, dropping the imaginary part with a
    ComplexWarning; full and full_like refuse any complex fill into a real dtype by name
    (as the sparse constructors and to_tensor refuse complex values), NaN and inf included."""
    for v in (complex(np.nan, 0), complex(np.inf, 1), complex(1e20, 0), complex(3.7, 2.0)):
        with pytest.raises(ValueError, match=r"^full: fill_value \(.*\) is complex"):
            dense.full([2], v, dtype="int32")
        with pytest.raises(ValueError, match="^full_like: fill_value .* is complex"):
            dense.full_like(dense.to_tensor(np.zeros(2, np.int32)), v)
