"""The op generator: strict parsing, freshness, regeneration and user ops."""
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from kernels.codegen import CodegenError, load_yaml_dir

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GENERATED = ("kernels/_generated/op_table.py", "dense/_generated_api.py",
             "sparse/_generated_api.py")

GOOD = """\
- op : reshape
  args : (Tensor x, IntArray shape)
  output : Tensor(out)
  infer_meta :
    func : reshape_infer_meta
  kernel :
    func : reshape
  backward : reshape_grad
  module : kernels.dense.reshape
  doc : Reshape.
"""
GOOD_BACKWARD = """\
- backward_op : reshape_grad
  forward : reshape (Tensor x, IntArray shape) -> Tensor(out)
  args : (Tensor x, Tensor out_grad)
  output : Tensor(x_grad)
  infer_meta :
    func : unchanged_infer_meta
    param : [x]
  kernel :
    func : reshape_grad
  no_need_buffer : x
  module : kernels.dense.reshape
"""


def _write(tmp_path, ops, backward=GOOD_BACKWARD):
    (tmp_path / "ops.yaml").write_text(ops)
    (tmp_path / "backward.yaml").write_text(backward)
    return str(tmp_path)


def test_good_yaml_parses(tmp_path):
    defs = load_yaml_dir(_write(tmp_path, GOOD))
    assert [d.name for d in defs] == ["reshape", "reshape_grad"]
    assert defs[1].no_need_buffer == ("x",)


BAD = [
    ("kernal :", GOOD.replace("kernel :", "kernal :"), 6, "unknown key 'kernal'"),
    ("no output", GOOD.replace("  output : Tensor(out)\n", ""), 1, "missing key 'output'"),
    ("backward names nothing", GOOD.replace("backward : reshape_grad", "backward : nope"),
     1, "backward 'nope' names no backward_op"),
    ("missing infer-meta function", GOOD.replace("reshape_infer_meta", "no_such_meta"),
     1, "infer_meta function 'no_such_meta' does not exist"),
    ("unregistered kernel", GOOD.replace("func : reshape\n", "func : reshape_nope\n"),
     1, "kernel 'reshape_nope' is not registered"),
    ("module missing", GOOD.replace("module : kernels.dense.reshape", "module : no.such.mod"),
     1, "module 'no.such.mod' cannot be imported"),
    ("bad args", GOOD.replace("(Tensor x, IntArray shape)", "(Tensor x, list shape)"),
     2, "is not 'TYPE name"),
    ("Tensor after attribute", GOOD.replace("(Tensor x, IntArray shape)",
                                            "(IntArray shape, Tensor x)"),
     2, "comes after an attribute"),
    ("duplicate op", GOOD + GOOD.replace("  backward : reshape_grad\n", ""), 11, "defined twice"),
    ("invalid yaml", GOOD.replace("  output : Tensor(out)", "  output : [Tensor(out)"),
     4, "invalid YAML"),
    ("bad layout", GOOD.replace("func : reshape\n", "func : reshape{sparse_xyz -> dense}\n"),
     7, "unknown layout 'sparse_xyz'"),
    ("duplicate key", GOOD.replace("  doc : Reshape.\n", "  doc : A.\n  doc : B.\n"),
     11, "duplicate key 'doc'"),
]


@pytest.mark.parametrize("case,text,line,message", BAD, ids=[b[0] for b in BAD])
def test_malformed_yaml_names_file_and_line(tmp_path, case, text, line, message):
    with pytest.raises(CodegenError) as err:
        load_yaml_dir(_write(tmp_path, text))
    assert f"ops.yaml:{line}:" in str(err.value)
    assert message in str(err.value)


BAD_BACKWARD = [
    ("wrong forward", GOOD_BACKWARD.replace("forward : reshape (", "forward : reshap ("),
     "'reshap'"),
    ("bad output name", GOOD_BACKWARD.replace("Tensor(x_grad)", "Tensor(y_grad)"),
     "output 'y_grad' must be '<input>_grad'"),
    ("invoke unknown op", GOOD_BACKWARD.replace(
        "  kernel :\n    func : reshape_grad\n", "  invoke : nope(out_grad, x.shape)\n"),
     "invoke calls 'nope'"),
    ("invoke stray name", GOOD_BACKWARD.replace(
        "  kernel :\n    func : reshape_grad\n", "  invoke : reshape(out_grad, y)\n"),
     "invoke uses 'y'"),
    ("kernel and invoke", GOOD_BACKWARD.replace(
        "  no_need_buffer", "  invoke : reshape(out_grad, x.shape)\n  no_need_buffer"),
     "exactly one of 'kernel' or 'invoke'"),
    ("optional_grads on one gradient", GOOD_BACKWARD + "  optional_grads : true\n",
     "optional_grads needs a kernel with two or more Tensor gradient outputs"),
    # a misspelt attribute with a default was accepted and the kernel got the default: a
    # wrong gradient, silently
    ("unknown attribute with a default", GOOD_BACKWARD.replace(
        "args : (Tensor x, Tensor out_grad)", "args : (Tensor x, Tensor out_grad, int axes = -1)"),
     "argument 'axes' is neither a forward input"),
]


@pytest.mark.parametrize("case,text,message", BAD_BACKWARD, ids=[b[0] for b in BAD_BACKWARD])
def test_malformed_backward_yaml(tmp_path, case, text, message):
    with pytest.raises(CodegenError) as err:
        load_yaml_dir(_write(tmp_path, GOOD, text))
    assert "backward.yaml:1:" in str(err.value) and message in str(err.value)


MATMUL = """\
- op : matmul
  args : (Tensor x, Tensor y, bool transpose_x = false, bool transpose_y = false)
  output : Tensor(out)
  infer_meta :
    func : matmul_infer_meta
  kernel :
    func : matmul
  backward : matmul_grad
  module : kernels.dense.matmul
  doc : Matmul.
"""
MATMUL_BACKWARD = """\
- backward_op : matmul_grad
  forward : matmul (Tensor x, Tensor y, bool transpose_x, bool transpose_y) -> Tensor(out)
  args : (Tensor x, Tensor y, Tensor out_grad, bool transpose_x = false, bool transpose_y = false)
  output : Tensor(x_grad), Tensor(y_grad)
  optional_grads : true
  infer_meta :
    func : binary_grad_infer_meta
    param : [x, y]
  kernel :
    func : {kernel}
  module : {module}
"""


def test_optional_grads_is_true_or_false(tmp_path):
    with pytest.raises(CodegenError, match="backward.yaml:12: optional_grads must be true or "
                                           "false"):
        load_yaml_dir(_write(tmp_path, GOOD, GOOD_BACKWARD + "  optional_grads : yes\n"))


def test_optional_grads_wants_kernels_taking_grad_mask(tmp_path):
    good = load_yaml_dir(_write(tmp_path, MATMUL, MATMUL_BACKWARD.format(
        kernel="matmul_grad", module="kernels.dense.matmul")))
    assert good[1].optional_grads and not good[0].optional_grads
    with pytest.raises(CodegenError, match="backward.yaml:1: .*kernel 'reshape_grad' "
                                           r"\(kernels.dense.reshape.reshape_grad\) takes no "
                                           "'grad_mask' argument"):
        load_yaml_dir(_write(tmp_path, MATMUL, MATMUL_BACKWARD.format(
            kernel="reshape_grad", module="kernels.dense.reshape")))


LIST_OP = """\
- op : my_concat
  args : (Tensor[] xs, int axis = 0)
  output : Tensor(out)
  infer_meta :
    func : concat_infer_meta
  kernel :
    func : concat
  module : kernels.dense.manip
  sbp :
    rules :
      - S(i) -> S(i) if i != norm_axis(axis, xs[0].ndim)
      - P -> P
  doc : Concat.
"""


def test_sbp_rules_over_a_tensor_list_are_accepted(tmp_path):
    from kernels.codegen.sbp import sbp_source
    op = next(d for d in load_yaml_dir(_write(tmp_path, GOOD + LIST_OP)) if d.name == "my_concat")
    assert [r.text for r in op.sbp.rules] == [
        "S(i) -> S(i) if i != norm_axis(axis, xs[0].ndim)", "P -> P"]
    assert "e.i != _r.norm_axis(e.axis, e.xs[0].ndim)" in sbp_source(op, "my_concat")


@pytest.mark.parametrize("rule, message", [
    ("S(i) -> S(i) if i != norm_axis(axis, xs.ndim)",
     "reads 'xs.ndim', but 'xs' is a Tensor[] (a list of tensors); read an element, "
     "e.g. 'xs[0].ndim'"),
    ("S(i), B -> S(i)", "has 2 inputs and 1 outputs; the op has 1 Tensor arguments and 1 "
     "outputs (a Tensor[] argument, ['xs'], takes one pattern that each element must have)"),
    ("'[S(i), B] -> S(i)'", "input pattern '[S(i), B]' must be S(name), B or P"),
])
def test_malformed_sbp_rules_over_a_tensor_list(tmp_path, rule, message):
    text = LIST_OP.replace("S(i) -> S(i) if i != norm_axis(axis, xs[0].ndim)", rule)
    with pytest.raises(CodegenError) as err:
        load_yaml_dir(_write(tmp_path, GOOD + text))
    assert "ops.yaml:21: sbp: " in str(err.value) and message in str(err.value)


def test_cli_reports_errors_with_nonzero_exit(tmp_path):
    _write(tmp_path, GOOD.replace("kernel :", "kernal :"))
    res = subprocess.run([sys.executable, "-m", "kernels.codegen", "--yaml", str(tmp_path),
                          "--out", str(tmp_path / "gen")], capture_output=True, text=True,
                         cwd=ROOT)
    assert res.returncode == 1 and "ops.yaml:6" in res.stderr


def test_generated_files_are_fresh():
    res = subprocess.run([sys.executable, "-m", "kernels.codegen", "--check"],
                         capture_output=True, text=True, cwd=ROOT)
    assert res.returncode == 0, res.stderr


def test_regenerating_from_scratch_reproduces_the_committed_files(tmp_path):
    for pkg in ("kernels", "dense", "sparse", "yaml"):
        shutil.copytree(os.path.join(ROOT, pkg), tmp_path / pkg,
                        ignore=shutil.ignore_patterns("__pycache__"))
    for rel in GENERATED:
        os.remove(tmp_path / rel)
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    res = subprocess.run([sys.executable, "-m", "kernels.codegen"], cwd=tmp_path, env=env,
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    for rel in GENERATED:
        with open(os.path.join(ROOT, rel)) as a, open(tmp_path / rel) as b:
            assert a.read() == b.read(), rel
    smoke = ("import numpy as np, dense, sparse, kernels; "
             "x = dense.to_tensor(np.arange(6.0), stop_gradient=False); "
             "dense.sum(dense.reshape(x, [2, 3])).backward(); "
             "assert dense.__file__.startswith(%r); print(x.grad.numpy().sum())" % str(tmp_path))
    res = subprocess.run([sys.executable, "-c", smoke], cwd=tmp_path, env=env,
                         capture_output=True, text=True)
    assert res.returncode == 0 and res.stdout.strip() == "6.0", res.stderr


USER_OPS = """\
- op : my_scale
  args : (Tensor x, float factor = 2.0)
  output : Tensor(out)
  infer_meta :
    func : unchanged_infer_meta
    param : [x]
  kernel :
    func : my_scale
  backward : my_scale_grad
  module : myops.kernels
  doc : |
    Multiply x by factor.

    Examples
    --------
    >>> import numpy as np, dense
    >>> from myops.generated import api
    >>> api.my_scale(dense.to_tensor(np.ones(2)), 3.0).numpy()
    array([3., 3.])
"""
USER_BACKWARD = """\
- backward_op : my_scale_grad
  forward : my_scale (Tensor x, float factor) -> Tensor(out)
  args : (Tensor out_grad, float factor)
  output : Tensor(x_grad)
  invoke : my_scale(out_grad, factor)
"""
USER_KERNEL = '''\
from kernels import register_kernel
from kernels.core.dtypes import FLOATS


@register_kernel("my_scale", backends=("cpu", "gpu"), dtypes=FLOATS)
def my_scale(x, factor):
    return x * factor
'''


def test_user_op_end_to_end(tmp_path):
    pkg = tmp_path / "myops"
    (pkg / "yaml").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "kernels.py").write_text(USER_KERNEL)
    (pkg / "yaml" / "ops.yaml").write_text(USER_OPS)
    (pkg / "yaml" / "backward.yaml").write_text(USER_BACKWARD)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), ROOT]))
    res = subprocess.run([sys.executable, "-m", "kernels.codegen", "--yaml", "myops/yaml",
                          "--out", "myops/generated"], cwd=tmp_path, env=env,
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    script = textwrap.dedent("""
        import doctest, numpy as np, dense
        from myops.generated import api
        x = dense.to_tensor(np.array([1.0, -2.0]), stop_gradient=False)
        y = api.my_scale(x, 4.0)
        y.backward(dense.to_tensor(np.array([1.0, 10.0])))
        print(y.numpy().tolist(), x.grad.numpy().tolist())
        print(api.my_scale.infer_meta(x).shape)
        print(doctest.testmod(api).failed)
    """)
    res = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env,
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split("\n")[:3] == ["[4.0, -8.0] [4.0, 40.0]", "(2,)", "0"]
    # a changed doc makes the generated API stale: --check's hint repeats the arguments
    (pkg / "yaml" / "ops.yaml").write_text(USER_OPS.replace("Multiply x", "Scale x"))
    res = subprocess.run([sys.executable, "-m", "kernels.codegen", "--yaml", "myops/yaml",
                          "--out", "myops/generated", "--check"], cwd=tmp_path, env=env,
                         capture_output=True, text=True)
    assert res.returncode == 1
    assert "run python -m kernels.codegen --yaml myops/yaml --out myops/generated)" \
        in res.stderr, res.stderr
