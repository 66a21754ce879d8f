"""The YAML argument types Tensor[], Scalar and DataType: parsing, dispatch and autograd."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from kernels.codegen import CodegenError, load_yaml_dir
from kernels.core.dispatch import _convert_attr
from kernels.core.opspec import Arg, OpSpec

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

USER_OPS = """\
- op : my_concat
  args : (Tensor[] xs, int axis = 0)
  output : Tensor(out)
  infer_meta :
    func : myops.kernels.concat_meta
  kernel :
    func : my_concat
  backward : my_concat_grad
  module : myops.kernels
  doc : Concatenate.

- op : my_full
  args : (IntArray shape, Scalar fill_value, DataType dtype = None)
  output : Tensor(out)
  infer_meta :
    func : myops.kernels.full_meta
  kernel :
    func : my_full
  module : myops.kernels
  doc : Fill.
"""
USER_BACKWARD = """\
- backward_op : my_concat_grad
  forward : my_concat (Tensor[] xs, int axis) -> Tensor(out)
  args : (Tensor[] xs, Tensor out_grad, int axis = 0)
  output : Tensor[](xs_grad)
  infer_meta :
    func : myops.kernels.concat_grad_meta
    param : [xs]
  kernel :
    func : my_concat_grad
    data_type : out_grad
  no_need_buffer : xs
  module : myops.kernels
"""
USER_KERNEL = '''\
import numpy as np
from kernels import register_kernel
from kernels.core.dtypes import ALL
from kernels.core.meta import MetaTensor


def concat_meta(xs, axis=0):
    shape = list(xs[0].shape)
    shape[axis] = sum(x.shape[axis] for x in xs)
    return xs[0].with_(shape=tuple(shape))


def concat_grad_meta(xs):
    return list(xs)


def full_meta(shape, fill_value, dtype=None):
    return MetaTensor(shape, dtype if dtype is not None else np.asarray(fill_value).dtype)


@register_kernel("my_concat", dtypes=ALL)
def my_concat(xs, axis=0):
    return np.concatenate(xs, axis=axis)


@register_kernel("my_concat_grad", dtypes=ALL)
def my_concat_grad(xs, out_grad, axis=0):
    cuts = np.cumsum([x.shape[axis] for x in xs])[:-1]
    return np.split(out_grad, cuts, axis=axis)


@register_kernel("my_full", dtypes=ALL)
def my_full(shape, fill_value, dtype=None):
    return np.full(shape, fill_value, dtype=dtype)
'''


def _user_package(tmp_path):
    res = _generate(tmp_path, USER_KERNEL)
    assert res.returncode == 0, res.stderr
    return res.env


def _generate(tmp_path, kernel_source):
    """The user package ``myops`` with ``kernel_source`` and the generator's run on it
    (its ``env`` attached)."""
    pkg = tmp_path / "myops"
    (pkg / "yaml").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "kernels.py").write_text(kernel_source)
    (pkg / "yaml" / "ops.yaml").write_text(USER_OPS)
    (pkg / "yaml" / "backward.yaml").write_text(USER_BACKWARD)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), ROOT]))
    res = subprocess.run([sys.executable, "-m", "kernels.codegen", "--yaml", "myops/yaml",
                          "--out", "myops/generated"], cwd=tmp_path, env=env,
                         capture_output=True, text=True)
    res.env = env
    return res


def _run(tmp_path, env, script):
    res = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], cwd=tmp_path,
                         env=env, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    return res.stdout.split("\n")


def test_tensor_list_forward_backward_and_scalar_datatype(tmp_path):
    env = _user_package(tmp_path)
    out = _run(tmp_path, env, """
        import numpy as np, dense
        from myops.generated import api
        a = dense.to_tensor(np.array([[1.0, 2.0]]), stop_gradient=False)
        b = dense.to_tensor(np.array([[3.0, 4.0], [5.0, 6.0]]), stop_gradient=False)
        y = api.my_concat([a, b, a], axis=0)
        print(y.numpy().tolist())
        y.backward(dense.to_tensor(np.arange(8.0).reshape(4, 2)))
        print(a.grad.numpy().tolist(), b.grad.numpy().tolist())
        print(api.my_concat.infer_meta([a.meta, b], 0).shape)
        f = api.my_full([2], np.float32(1.5))
        print(f.dtype, f.numpy().tolist(), api.my_full([1], 2, 'int8').dtype)
        print(api.my_full([1], 2, np.float32).dtype, api.my_full.infer_meta([3], 1j).dtype)
        for bad in (lambda: api.my_full([1], 2, 'float17'),
                    lambda: api.my_full([1], '2'),
                    lambda: api.my_concat([]),
                    lambda: api.my_concat(a)):
            try:
                bad()
            except (TypeError, ValueError) as exc:
                print(type(exc).__name__, str(exc).split(':')[0])
    """)
    assert out[0] == "[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [1.0, 2.0]]"
    # a appears twice: its gradient is the sum of rows 0 and 3 of out_grad
    assert out[1] == "[[6.0, 8.0]] [[2.0, 3.0], [4.0, 5.0]]"
    assert out[2] == "(3, 2)"
    assert out[3] == "float32 [1.5, 1.5] int8"
    assert out[4] == "float32 complex128"
    assert out[5:9] == ["TypeError my_full", "TypeError my_full", "ValueError my_concat",
                        "TypeError my_concat"]


SPEC = OpSpec(name="myop", namespace="dense", args=(), outputs=("out",))


@pytest.mark.parametrize("value", [True, 3, 2.5, 1 + 2j, np.float32(1.5), np.int8(3),
                                   np.bool_(False), np.complex64(1j)])
def test_scalar_is_kept_as_given(value):
    got = _convert_attr(value, SPEC, Arg("v", "Scalar"))
    assert got is value


@pytest.mark.parametrize("value", ["1", [1], np.ones(2), None, b"1"])
def test_scalar_rejects_non_scalars_naming_the_op(value):
    with pytest.raises(TypeError, match="myop: argument 'v' must be a scalar"):
        _convert_attr(value, SPEC, Arg("v", "Scalar"))


@pytest.mark.parametrize("value,want", [("float32", np.float32), (np.int64, np.int64),
                                        (np.dtype("complex64"), np.complex64),
                                        ("bool", np.bool_)])
def test_datatype_converts_names_and_dtypes(value, want):
    assert _convert_attr(value, SPEC, Arg("dtype", "DataType")) == np.dtype(want)


@pytest.mark.parametrize("value", ["float17", "uint64", object(), 3])
def test_datatype_rejects_unknown_dtypes_naming_the_op(value):
    with pytest.raises(TypeError, match="myop: dtype"):
        _convert_attr(value, SPEC, Arg("dtype", "DataType"))


def test_none_default_is_accepted():
    assert _convert_attr(None, SPEC, Arg("dtype", "DataType", True, None)) is None


def _write(tmp_path, ops, backward):
    (tmp_path / "ops.yaml").write_text(ops)
    (tmp_path / "backward.yaml").write_text(backward)
    return str(tmp_path)


def _local_ops():
    """USER_OPS on kernels of the same signatures that dense's modules register."""
    text = USER_OPS.replace("myops.kernels.concat_meta", "concat_infer_meta")
    text = text.replace("myops.kernels.full_meta", "full_infer_meta")
    assert text.index("op : my_concat") < text.index("op : my_full")
    text = text.replace("module : myops.kernels", "module : kernels.dense.manip", 1)
    text = text.replace("module : myops.kernels", "module : kernels.dense.creation", 1)
    text = text.replace("func : my_concat\n", "func : concat\n")
    return text.replace("func : my_full\n", "func : full\n")


def _local_backward():
    text = USER_BACKWARD.replace("myops.kernels.concat_grad_meta", "unchanged_infer_meta")
    # (param [xs]: one argument, as unchanged_infer_meta takes)
    text = text.replace("module : myops.kernels", "module : kernels.dense.manip")
    return text.replace("func : my_concat_grad", "func : concat_grad")


def test_the_three_types_parse(tmp_path):
    defs = {d.name: d for d in load_yaml_dir(_write(tmp_path, _local_ops(), _local_backward()))}
    assert [(a.name, a.type) for a in defs["my_full"].args] == [
        ("shape", "IntArray"), ("fill_value", "Scalar"), ("dtype", "DataType")]
    assert defs["my_concat"].tensor_args[0].is_list
    assert defs["my_concat_grad"].list_outputs == ("xs_grad",)


BAD = [
    ("Tensor[] default", "ops", "(Tensor[] xs, int axis = 0)", "(Tensor[] xs = 1, int axis = 0)",
     "cannot have a default"),
    ("Tensor[] after attribute", "ops", "(Tensor[] xs, int axis = 0)",
     "(int axis, Tensor[] xs)", "comes after an attribute"),
    ("list output in a forward op", "ops", "output : Tensor(out)\n  infer_meta :\n"
     "    func : concat_infer_meta\n  kernel :\n    func : concat\n  backward",
     "output : Tensor[](out)\n  infer_meta :\n    func : concat_infer_meta\n  kernel :\n"
     "    func : concat\n  backward", "is not 'Tensor(name)'"),
    ("single gradient of a list input", "backward", "Tensor[](xs_grad)", "Tensor(xs_grad)",
     "must be declared Tensor[](xs_grad)"),
    ("Scalar default not a number", "ops", "Scalar fill_value", "Scalar fill_value = 'a'",
     "does not fit type Scalar"),
    ("DataType default unknown", "ops", "DataType dtype = None", "DataType dtype = float17",
     "does not fit type DataType"),
]


@pytest.mark.parametrize("case,where,old,new,message", BAD, ids=[b[0] for b in BAD])
def test_bad_typed_arguments_are_rejected(tmp_path, case, where, old, new, message):
    ops, backward = _local_ops(), _local_backward()
    if where == "ops":
        assert old in ops
        ops = ops.replace(old, new, 1)
    else:
        assert old in backward
        backward = backward.replace(old, new, 1)
    with pytest.raises(CodegenError) as err:
        load_yaml_dir(_write(tmp_path, ops, backward))
    assert message in str(err.value)


def test_a_kernel_that_cannot_take_the_ops_arguments_is_a_codegen_error(tmp_path):
    """A kernel registered with fewer parameters than the op passes (``my_concat(xs)`` for
    ``(Tensor[] xs, int axis)``) failed only at the first call, with a TypeError naming
    neither the op nor the YAML; the generator now says where."""
    res = _generate(tmp_path, USER_KERNEL.replace("def my_concat(xs, axis=0):",
                                                  "def my_concat(xs):"))
    assert res.returncode != 0
    assert "ops.yaml:" in res.stderr and "my_concat: kernel 'my_concat(xs)'" in res.stderr
    assert "cannot take the op's 2 arguments ['xs', 'axis']" in res.stderr
