"""The elementwise family: broadcasting, promotion, operators, errors and the YAML family."""
import warnings

import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra.numpy import mutually_broadcastable_shapes

import dense
import sparse
from kernels.codegen import CodegenError, load_yaml_dir
from kernels.funcs.elementwise import BINARY, UNARY
from opdb import numeric_vjp

DIFFERENTIABLE = [n for n in ("add", "subtract", "multiply", "divide", "pow", "maximum",
                              "minimum")]


@given(shapes=mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3),
       name=st.sampled_from(DIFFERENTIABLE), seed=st.integers(0, 2 ** 16))
def test_broadcast_pairs_forward_and_gradient(shapes, name, seed):
    rng = np.random.default_rng(seed)
    sx, sy = shapes.input_shapes
    x = rng.uniform(0.5, 3, sx)
    y = np.asarray(rng.uniform(0.5, 3, sy) * (1 if name in ("divide", "pow") else rng.choice([-1, 1], sy)))
    ref = {"pow": np.power}.get(name, getattr(np, name, None))
    tx, ty = (dense.to_tensor(a, stop_gradient=False) for a in (x, y))
    out = getattr(dense, name)(tx, ty)
    np.testing.assert_allclose(out.numpy(), ref(x, y), rtol=1e-12)
    assert out.shape == list(shapes.result_shape)
    w = rng.standard_normal(shapes.result_shape)
    out.backward(dense.to_tensor(w))
    for k, t in enumerate((tx, ty)):
        np.testing.assert_allclose(t.grad.numpy(), numeric_vjp(ref, [x, y], k, w), rtol=1e-6,
                                   atol=1e-7)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8, np.int32, np.complex64])
@pytest.mark.parametrize("scalar", [2, 2.5, 1j, True])
def test_python_scalars_are_weak_on_either_side(dtype, scalar):
    a = np.arange(1, 4).astype(dtype)
    t = dense.to_tensor(a)
    for got, want in ((t + scalar, a + scalar), (scalar - t, scalar - a),
                      (t * scalar, a * scalar), (scalar / t, scalar / a)):
        assert got.dtype == want.dtype, (got.dtype, want.dtype)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)


def test_remembered_scalar_tensors_keep_type_sign_and_context_apart():
    """Operators remember a scalar's 0-d tensor: equal values of other types, the two
    zeros, and other dtypes beside it must never share one."""
    f32 = dense.to_tensor(np.array([1.0, -1.0], np.float32))
    i64 = dense.to_tensor(np.array([3, 4]))
    for _ in range(2):                                    # the second pass hits the memo
        assert (f32 / 0.0).numpy().tolist() == [np.inf, -np.inf]
        assert (f32 / -0.0).numpy().tolist() == [-np.inf, np.inf]
        assert (i64 * 2).dtype == np.int64 and (i64 * 2.0).dtype == np.float64
        assert (i64 + True).numpy().tolist() == [4, 5] and (f32 * 2).dtype == np.float32
        assert (np.float64(2) * f32).dtype == np.float64
        c = f32 * complex(-0.0, -0.0)
        np.testing.assert_array_equal(c.numpy(), f32.numpy() * complex(-0.0, -0.0))
        assert np.isnan((f32 * float("nan")).numpy()).all()


def test_numpy_scalars_and_arrays_are_strong_and_defer_to_the_tensor():
    t = dense.to_tensor(np.ones(2, np.float32))
    out = np.float64(2) * t
    assert isinstance(out, dense.Tensor) and out.dtype == np.float64
    out = np.ones(2, np.float16) + t
    assert isinstance(out, dense.Tensor) and out.dtype == np.float32


def test_operators_match_numpy_and_comparisons_stop_gradient():
    a, b = np.array([[1.0, -2.0, 3.0]]), np.array([[2.0], [-1.0]])
    x, y = dense.to_tensor(a, stop_gradient=False), dense.to_tensor(b)
    pairs = [(x + y, a + b), (x - y, a - b), (x * y, a * b), (x / y, a / b),
             (abs(x) ** y, np.abs(a) ** b), (-x, -a), (abs(x), np.abs(a))]
    for got, want in pairs:
        np.testing.assert_allclose(got.numpy(), want)
        assert got.stop_gradient is False
    for got, want in [(x == y, a == b), (x != y, a != b), (x < y, a < b), (x <= 1, a <= 1),
                      (x > y, a > b), (x >= y, a >= b)]:
        assert got.dtype == np.bool_ and got.stop_gradient is True
        np.testing.assert_array_equal(got.numpy(), want)


def test_unsupported_operands_fall_back_to_python():
    t = dense.to_tensor(np.ones(2))
    with pytest.raises(TypeError):
        t + "a"
    assert (t == "a") is False  # both sides NotImplemented: Python compares identity
    np.testing.assert_array_equal((t * [1, 2]).numpy(), np.ones(2) * [1, 2])  # as numpy


def test_tensors_stay_hashable():
    t = dense.to_tensor(np.ones(2))
    assert {t: 1}[t] == 1


@pytest.mark.parametrize("op,args,exc,text", [
    ("add", (np.ones((2, 3)), np.ones((4,))), ValueError, "add: shapes [2, 3] and [4]"),
    ("multiply", (np.ones((2, 1, 3)), np.ones((4, 2))), ValueError, "multiply: shapes"),
    ("subtract", (np.ones(2, bool), np.ones(2, bool)), TypeError, "subtract: dtype bool"),
    ("neg", (np.ones(2, bool),), TypeError, "neg: dtype bool"),
    ("add", (np.ones(2, np.int8), 1000), TypeError, "add: scalar 1000"),
    ("clip", (np.ones(2), "a"), TypeError, "clip: argument 'min'"),
    ("exp", ("a",), TypeError, "exp: argument 'x'"),
])
def test_errors_name_the_op(op, args, exc, text):
    with pytest.raises(exc) as err:
        getattr(dense, op)(*args)
    assert text in str(err.value)


def test_infer_meta_needs_no_data():
    x = dense.MetaTensor((4, 1, 3), np.float32)
    y = dense.MetaTensor((2, 1), np.int64)
    meta = dense.add.infer_meta(x, y)
    assert meta.shape == (4, 2, 3) and meta.dtype == np.float64
    assert dense.sqrt.infer_meta(dense.MetaTensor((2,), np.int16)).dtype == np.float32
    assert dense.clip.infer_meta(dense.MetaTensor((2,), np.int64), 0.5).dtype == np.float64


def test_the_table_covers_the_sparse_value_wise_ops():
    sparse_ops = ("abs neg sqrt square sin sinh tan tanh asin asinh atan atanh expm1 log1p "
                  "deg2rad rad2deg relu relu6 leaky_relu pow scale isnan").split()
    assert set(sparse_ops) <= set(UNARY)
    assert all(UNARY[n].grad is not None for n in sparse_ops if n != "isnan")
    assert {"add", "subtract", "multiply", "divide"} <= set(BINARY)


@pytest.mark.parametrize("name,params", [
    ("sinh", ()), ("tan", ()), ("asin", ()), ("asinh", ()), ("atan", ()), ("atanh", ()),
    ("expm1", ()), ("log1p", ()), ("deg2rad", ()), ("rad2deg", ()), ("relu6", ()),
    ("leaky_relu", (0.2,)), ("pow", (2.5,)), ("scale", (2.0, 0.5, False)),
    ("scale", (3.0, 1.0, True)), ("clip", (-0.3, 0.4))])
def test_table_derivatives_match_finite_differences(name, params):
    """The table serves the sparse value-wise ops too: check each derivative directly."""
    entry = UNARY[name]
    x = np.random.default_rng(0).uniform(0.1, 0.9, 7) * np.array([1, -1, 1, -1, 1, 1, 1])
    if name == "pow":
        x = np.abs(x)
    if name == "relu6":
        x = x * 8
    out = entry.fn(np, x, *params)
    g = np.random.default_rng(1).standard_normal(7)
    got = entry.grad(np, x, out, g, *params)
    want = numeric_vjp(lambda v: entry.fn(np, v, *params), [x], 0, g)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


FAMILY = """\
- op : exp
  family : unary
  args : (Tensor x)
  doc : Exp.
"""


@pytest.mark.parametrize("text,message", [
    (FAMILY.replace("op : exp", "op : expp"), "op 'expp' is not in the unary table"),
    (FAMILY.replace("family : unary", "family : ternary"), "family 'ternary' is unknown"),
    (FAMILY.replace("(Tensor x)", "(Tensor x, Tensor y)"), "must be (Tensor x)"),
    (FAMILY.replace("family : unary", "family : binary"), "not in the binary table"),
    (FAMILY.replace("unary", "binary").replace("exp", "add"), "must be (Tensor x, Tensor y)"),
    (FAMILY + "  kernel :\n    func : exp\n", "unknown key 'kernel'"),
    (FAMILY.replace("op : exp", "op : leaky_relu"), "must be (Tensor x, negative_slope)"),
    (FAMILY.replace("  doc : Exp.\n", ""), "missing key 'doc'"),
])
def test_family_entries_are_strict(tmp_path, text, message):
    (tmp_path / "ops.yaml").write_text(text)
    with pytest.raises(CodegenError) as err:
        load_yaml_dir(str(tmp_path))
    assert message in str(err.value) and "ops.yaml:" in str(err.value)


def test_family_entry_expands_to_forward_backward_and_sbp(tmp_path):
    (tmp_path / "ops.yaml").write_text(FAMILY.replace("exp", "neg"))
    fwd, bwd = load_yaml_dir(str(tmp_path))
    assert fwd.backward == "neg_grad" and bwd.forward.name == "neg"
    assert [a.name for a in bwd.args] == ["x", "out", "out_grad"]
    assert [r.text for r in fwd.sbp.rules] == ["S(i) -> S(i)", "P -> P"]


def test_numpy_ufuncs_on_tensors_run_the_ops():
    a = np.array([0.5, 2.0])
    t = dense.to_tensor(a, stop_gradient=False)
    out = np.exp(t) * np.ones(2) + np.float32(1)
    assert isinstance(out, dense.Tensor) and out.dtype == np.float64
    out.sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), np.exp(a))
    cum = np.add.accumulate(t)  # a method phisparse has no op for: numpy on the values
    assert isinstance(cum, np.ndarray) and cum.tolist() == [0.5, 2.5]
    assert isinstance(np.arctan2(t, t), np.ndarray)


def test_result_dtype_cache_tells_equal_scalars_of_other_types_apart():
    x = dense.to_tensor(np.arange(3))
    assert dense.clip(x, 1).dtype == np.int64
    assert dense.clip(x, 1.0).dtype == np.float64
    assert dense.clip(x, True).dtype == np.int64


@pytest.mark.parametrize("name,params", [
    ("exp", ()), ("log", ()), ("sqrt", ()), ("square", ()), ("sin", ()), ("cos", ()),
    ("tan", ()), ("sinh", ()), ("tanh", ()), ("asin", ()), ("asinh", ()), ("atan", ()),
    ("atanh", ()), ("expm1", ()), ("log1p", ()), ("sigmoid", ()), ("pow", (3,)),
    ("scale", (2.0, 1.0, True)), ("neg", ())])
def test_complex_derivatives_are_conjugated(name, params):
    """For holomorphic f the rule is g * conj(f'(z)) (PyTorch's and Paddle's convention)."""
    entry = UNARY[name]
    z = np.array([0.3 + 0.4j, -0.2 + 0.1j, 0.5 - 0.3j])
    h = 1e-6
    deriv = (entry.fn(np, z + h, *params) - entry.fn(np, z - h, *params)) / (2 * h)
    got = entry.grad(np, z, entry.fn(np, z, *params), np.ones_like(z), *params)
    np.testing.assert_allclose(got, np.conj(deriv), rtol=1e-6)


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "divide", "pow"])
def test_complex_binary_derivatives_are_conjugated(name):
    entry = BINARY[name]
    x, y = np.array([0.3 + 0.4j, 1.2 - 0.5j]), np.array([0.7 - 0.2j, -0.4 + 0.9j])
    h = 1e-6
    dx = (entry.fn(np, x + h, y) - entry.fn(np, x - h, y)) / (2 * h)
    dy = (entry.fn(np, x, y + h) - entry.fn(np, x, y - h)) / (2 * h)
    gx, gy = entry.grad(np, x, y, entry.fn(np, x, y), np.ones_like(x))
    np.testing.assert_allclose(gx, np.conj(dx), rtol=1e-6)
    np.testing.assert_allclose(gy, np.conj(dy), rtol=1e-6)


def test_pow_gradients_are_zero_where_torch_takes_the_limit():
    """torch's pow backward: x's gradient is 0 where y == 0 (not 0 * 0**-1 = nan), y's
    is 0 where x == 0 and y >= 0 (not 0 * log 0 = nan); every other value is the formula."""
    x = np.array([0., 0., 0., 2., 0., 3.])
    y = np.array([0., 2., 0.5, 0., -1., 1.5])
    tx, ty = (dense.to_tensor(a, stop_gradient=False) for a in (x, y))
    dense.pow(tx, ty).backward(dense.to_tensor(np.ones(6)))
    # y * x**(y-1): 0 (y == 0), 2 * 0, 0.5 * 0**-0.5, 0 (y == 0), -1 * 0**-2, 1.5 * 3**0.5
    np.testing.assert_array_equal(tx.grad.numpy(), [0, 0, np.inf, 0, -np.inf, 1.5 * 3 ** 0.5])
    # x**y * log x: 0, 0, 0 (x == 0, y >= 0), 1 * log 2, inf * log 0, 3**1.5 * log 3
    np.testing.assert_allclose(ty.grad.numpy(), [0, 0, 0, np.log(2), -np.inf,
                                                 3 ** 1.5 * np.log(3)], rtol=1e-15)
    tx = dense.to_tensor(np.array([0., 1.5]), stop_gradient=False)
    (tx ** 0).backward(dense.to_tensor(np.ones(2)))
    np.testing.assert_array_equal(tx.grad.numpy(), [0, 0])


@pytest.mark.parametrize("k, x, y", [
    (0, [0., 0., 2.], [0., 2., 0.]),          # x's gradient where y == 0 or x == 0
    (1, [0., 0., 2.], [2., 0.5, 0.]),         # y's gradient where x == 0 < y, and y == 0
])
def test_pow_limit_gradients_match_finite_differences(k, x, y):
    x, y = np.array(x), np.array(y)
    t = [dense.to_tensor(a, stop_gradient=False) for a in (x, y)]
    w = np.array([1., 2., 3.])
    dense.pow(*t).backward(dense.to_tensor(w))
    np.testing.assert_allclose(t[k].grad.numpy(), numeric_vjp(np.power, [x, y], k, w),
                               atol=1e-6)


def test_pow_exponent_gradient_is_zeroed_only_on_the_real_axis_for_complex_exponents():
    x, y = np.zeros(2, complex), np.array([2 + 0j, 1 + 1j])
    with np.errstate(all="ignore"):
        gx, gy = BINARY["pow"].grad(np, x, y, np.power(x, y), np.ones(2, complex))
    assert gy[0] == 0 and gx[0] == 0
    assert gy[1] != 0     # 0**(1+i) * log 0 is not the flat limit torch takes


def test_relu_of_negative_zero_is_positive_zero_and_sigmoid_of_ints_does_not_wrap():
    """relu(-0.0) is +0.0 (Paddle, torch) on dense and sparse values; sigmoid of an
    integer x negates it in exp's float dtype, so int8 -128 or uint8 200 do not wrap."""
    x = dense.to_tensor(np.array([-0.0, -1.0, np.nan, 2.0]))
    got = dense.relu(x).numpy()
    assert not np.signbit(got[0]) and np.isnan(got[2]) and got[[1, 3]].tolist() == [0.0, 2.0]
    s = sparse.sparse_coo_tensor([[0, 1]], np.array([-0.0, 3.0]), [2])
    assert not np.signbit(sparse.relu(s).values().numpy()[0])
    for dt, v in [(np.uint8, [200, 10]), (np.int8, [-128, 5]), (np.int16, [-32768, 3]),
                  (np.int32, [-2 ** 31, 1]), (np.int64, [-2 ** 40, 0]), (np.bool_, [True, False])]:
        a = np.array(v, dt)
        f = a.astype(np.result_type(dt, np.float16)).astype(np.float64)
        want = 1 / (1 + np.exp(-f))
        got = dense.sigmoid(dense.to_tensor(a)).numpy()
        assert got.dtype == np.result_type(dt, np.float16)
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-30)   # float32 underflows


@pytest.mark.parametrize("dtype, ulps", [(np.float32, 0.5), (np.float64, 2.5)])
@pytest.mark.parametrize("n", [1, 10, 4096, 4097, 70000])
def test_sigmoid_is_within_its_ulps_small_or_large_with_its_tails(dtype, ulps, n):
    """sigmoid of float32 is computed in float64 and rounded once (within 0.5 ulp of
    1 / (1 + exp(-x)) in long double); float64 takes scipy's expit up to 4096 elements
    and the blocked formula above (within 2.5 ulp); both keep the far tails (results
    below the dtype's normal range are subnormal, not 0) and warn about nothing.  The
    values sweep [-40, 40] finely, where a float32 formula was off by 3.7 ulp."""
    tails = np.array([-746, -720, -104, -103, -95, -89, -88, -80, -20, -0.0, 0.0, 1e-30, 20,
                      40, 800, np.inf, -np.inf])
    x = np.resize(np.concatenate([tails, np.linspace(-40, 40, 9973)]), n).astype(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = dense.sigmoid(dense.to_tensor(x)).numpy()
    ref = 1 / (1 + np.exp(-x.astype(np.longdouble)))
    assert got.dtype == dtype
    err = np.abs(got.astype(np.longdouble) - ref) / np.spacing(ref.astype(dtype)).astype(
        np.longdouble)
    assert err.max() <= ulps + 1e-6, (x[err.argmax()], got[err.argmax()], ref[err.argmax()])


def test_sigmoid_of_float32_has_the_same_bits_at_every_size_and_0d_tails_work():
    """float32 values give the same sigmoid in arrays of 4096 (scipy's expit in float64)
    and of 4097 (float64 blocks); a 0-d float64 below -700 takes exp(x) (it raised
    TypeError: expit returns a numpy scalar for a 0-d array); float16 and int8 go
    through float32 and keep tails float16 holds (sigmoid(-12) is 6.1e-06, not 0)."""
    x = np.random.default_rng(3).uniform(-40, 40, 4096).astype(np.float32)
    small = dense.sigmoid(dense.to_tensor(x)).numpy()
    large = dense.sigmoid(dense.to_tensor(np.append(x, np.float32(0)))).numpy()
    np.testing.assert_array_equal(small, large[:-1])
    for v, want in [(-800.0, 0.0), (-705.0, np.exp(-705.0)), (3.0, 1 / (1 + np.exp(-3.0)))]:
        got = dense.sigmoid(dense.to_tensor(np.array(v))).numpy()
        assert got.shape == () and got == want
    h = dense.sigmoid(dense.to_tensor(np.array([-12.0, -20.0], np.float16))).numpy()
    assert h.dtype == np.float16 and h.tolist() == [np.float16(6.139e-06), np.float16(2e-09)]
    i = dense.sigmoid(dense.to_tensor(np.array([-12], np.int8))).numpy()
    assert i.dtype == np.float16 and i[0] == np.float16(1 / (1 + np.exp(12.0)))
