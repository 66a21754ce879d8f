"""The elementwise family: broadcasting, promotion, operators, errors and the YAML family."""
import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra.numpy import mutually_broadcastable_shapes

import dense
from kernels.codegen import CodegenError, load_yaml_dir
from kernels.funcs.elementwise import BINARY, UNARY

DIFFERENTIABLE = [n for n in ("add", "subtract", "multiply", "divide", "pow", "maximum",
                              "minimum")]


def _fd(f, arrays, k, w, eps=1e-6):
    x = arrays[k]
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        vals = []
        for sign in (1, -1):
            shifted = x.copy()
            shifted[i] += sign * eps
            args = arrays[:k] + [shifted] + arrays[k + 1:]
            vals.append(np.sum(f(*args) * w))
        grad[i] = (vals[0] - vals[1]) / (2 * eps)
    return grad


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
        np.testing.assert_allclose(t.grad.numpy(), _fd(ref, [x, y], k, w), rtol=1e-6,
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
    with pytest.raises(TypeError):
        t * [1, 2]
    assert (t == "a") is False  # both sides NotImplemented: Python compares identity


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
    want = _fd(lambda v: entry.fn(np, v, *params), [x], 0, g)
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
    assert fwd.backward == "neg_grad" and bwd.forward[0] == "neg"
    assert [a.name for a in bwd.args] == ["x", "out", "out_grad"]
    assert [r.text for r in fwd.sbp.rules] == ["S(i) -> S(i)", "P -> P"]
