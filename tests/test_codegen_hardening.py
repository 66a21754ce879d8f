"""The generator treats its YAML and command line as untrusted text (hardening items 9-14)."""
import dataclasses
import os
import subprocess
import sys
import time

import numpy as np
import pytest

import dense
from kernels import register_kernel, registered
from kernels.codegen import CodegenError, load_yaml_dir
from kernels.core import dispatch, registry

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GENERATED = ("kernels/_generated/op_table.py", "dense/_generated_api.py",
             "sparse/_generated_api.py")

OP = """\
- op : {name}
  args : (Tensor x, {args})
  output : Tensor(out)
  infer_meta :
    func : unchanged_infer_meta
    param : [x]
  kernel :
    func : reshape
  module : kernels.dense.reshape
  doc : {doc}
"""
INVOKE_OP = OP.format(name="reshape", args="IntArray shape", doc="Reshape.") + """\
- op : scaled
  args : (Tensor x, IntArray shape)
  output : Tensor(out)
  invoke : {invoke}
  doc : Reshape.
"""


def _op(name="my_op", args="IntArray shape", doc="Reshape."):
    return OP.format(name=name, args=args, doc=doc)


def _dir(tmp_path, text, fname="ops.yaml", mode="w"):
    d = tmp_path / "yaml"
    d.mkdir(exist_ok=True)
    with open(d / fname, mode) as fh:
        fh.write(text)
    return str(d)


def _codegen(*args, cwd=ROOT, env=None):
    return subprocess.run([sys.executable, "-m", "kernels.codegen", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=ROOT, **(env or {})))


# ---------------------------------------------------------------- 9. command line
def test_item9_yaml_without_out_is_refused_and_the_library_is_untouched(tmp_path):
    before = [open(os.path.join(ROOT, p)).read() for p in GENERATED]
    res = _codegen("--yaml", _dir(tmp_path, _op()))
    assert res.returncode == 1 and "--yaml and --package need --out" in res.stderr
    assert [open(os.path.join(ROOT, p)).read() for p in GENERATED] == before


def test_item9_a_missing_or_empty_yaml_folder_is_an_error(tmp_path):
    res = _codegen("--yaml", str(tmp_path / "nope"), "--out", "gen", cwd=tmp_path)
    assert res.returncode == 1 and "is not a directory" in res.stderr
    res = _codegen("--yaml", str(tmp_path), "--out", "gen", cwd=tmp_path)
    assert res.returncode == 1 and "holds none of ops.yaml" in res.stderr
    assert not (tmp_path / "gen").exists()


# ---------------------------------------------------------------- 10. no silent replacing
def test_item10_a_kernel_name_taken_by_another_function_raises():
    import kernels.dense.reshape  # noqa: F401  (registers the built-in kernels)
    original = registry.lookup("reshape_grad", "cpu", "dense", np.float64)
    with pytest.raises(ValueError, match="kernel 'reshape_grad' .* already registered"):
        register_kernel("reshape_grad", dtypes=[np.float64])(lambda x, g: g * 0)
    assert registry.lookup("reshape_grad", "cpu", "dense", np.float64) is original
    try:
        register_kernel("reshape_grad", dtypes=[np.float64], override=True)(lambda x, g: g * 0)
        x = dense.to_tensor(np.ones(2), stop_gradient=False)
        dense.reshape(x, [2]).backward()
        assert x.grad.numpy().tolist() == [0.0, 0.0]
    finally:
        register_kernel("reshape_grad", dtypes=[np.float64], override=True)(original)
    assert ("cpu", "dense", "float64") in registered("reshape_grad")


def test_item10_registering_the_same_function_again_is_allowed():
    import kernels.dense.reshape  # noqa: F401
    fn = registry.lookup("reshape", "cpu", "dense", np.float64)
    assert register_kernel("reshape", dtypes=[np.float64])(fn) is fn


def test_item10_an_op_of_another_table_may_not_replace_a_builtin():
    spec = dispatch.get_op("dense", "reshape")
    clone = dataclasses.replace(spec, infer_meta=lambda x, shape: x)
    with pytest.raises(ValueError, match="op 'dense.reshape' is already defined"):
        dispatch.register_ops([clone])
    assert dispatch.get_op("dense", "reshape") is spec


def test_item10_a_user_package_naming_a_builtin_must_say_override(tmp_path):
    text = _op(name="reshape")
    res = _codegen("--yaml", _dir(tmp_path, text), "--out", "gen", cwd=tmp_path)
    assert res.returncode == 1 and "ops.yaml:1: reshape: 'dense.reshape' is a built-in" \
        in res.stderr
    res = _codegen("--yaml", _dir(tmp_path, text.replace("  doc :", "  override : true\n  doc :")),
                   "--out", "gen", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "override=('reshape',)" in (tmp_path / "gen" / "op_table.py").read_text()


# ---------------------------------------------------------------- 11. names
BAD_NAMES = [
    ("keyword op", _op(name="class"), "op name 'class' is not a valid name"),
    ("keyword arg", _op(args="IntArray lambda"), "argument 'lambda' is not a valid name"),
    ("non-ascii", _op(name="r\u00e9shape"), "is not a valid name"),
    ("underscore arg", _op(args="IntArray _d"), "argument '_d' is not a valid name"),
    ("inf default", _op(args="float f = .inf"), "default '.inf' is not a finite number"),
    ("nan default", _op(args="float f = .nan"), "is not a finite number"),
    ("double star", INVOKE_OP.format(invoke="reshape(x, **shape)"), "'**'"),
    ("module", _op().replace("kernels.dense.reshape", "kernels.dense.re-shape"),
     "module 'kernels.dense.re-shape' is not a valid dotted name"),
    ("infer_meta", _op().replace("unchanged_infer_meta", "x; import os"),
     "infer_meta.func"),
]


@pytest.mark.parametrize("case,text,message", BAD_NAMES, ids=[b[0] for b in BAD_NAMES])
def test_item11_invalid_names_are_file_line_errors(tmp_path, case, text, message):
    with pytest.raises(CodegenError, match=r"ops\.yaml:\d+: ") as err:
        load_yaml_dir(_dir(tmp_path, text))
    assert message in str(err.value)


@pytest.mark.parametrize("out,extra,message", [
    ("my-ops", [], "is not dotted Python names"),
    (os.path.join(os.pardir, "elsewhere"), [], "outside the current directory"),
    ("gen", ["--package", "class.gen"], "is not dotted Python names")])
def test_item11_out_package_names_are_checked(tmp_path, out, extra, message):
    work = tmp_path / "work"
    work.mkdir()
    res = _codegen("--yaml", _dir(tmp_path, _op()), "--out", out, *extra, cwd=work)
    assert res.returncode == 1 and message in res.stderr


# ---------------------------------------------------------------- 12. inert text
@pytest.mark.parametrize("invoke", ['builtins.exec("print(1)")', 'os.system("true")',
                                    "kernels.core.dispatch._OPS.clear()",
                                    "kernels.codegen.__main__.main()"])
def test_item12_invoke_calls_only_ops_and_public_package_functions(tmp_path, invoke):
    with pytest.raises(CodegenError, match="neither an op nor a public function"):
        load_yaml_dir(_dir(tmp_path, INVOKE_OP.format(invoke=f"reshape(x, {invoke})")))


def test_item12_sbp_expressions_import_nothing_outside_the_package(tmp_path):
    marker = tmp_path / "imported"
    (tmp_path / "probe_mod_xyz.py").write_text(
        f"open({str(marker)!r}, 'w').close()\ndef f(*a):\n    return 0\n")
    text = _op() + "  sbp :\n    rules :\n      - S(i) -> S(i) if probe_mod_xyz.f(i) == 0\n"
    code = ("import sys; sys.path.insert(0, sys.argv[1])\n"
            "from kernels.codegen import load_yaml_dir, CodegenError\n"
            "try:\n    load_yaml_dir(sys.argv[2])\nexcept CodegenError as e:\n    print(e)\n")
    res = subprocess.run([sys.executable, "-c", code, str(tmp_path), _dir(tmp_path, text)],
                         capture_output=True, text=True, cwd=ROOT,
                         env=dict(os.environ, PYTHONPATH=ROOT))
    assert "ops.yaml" in res.stdout and "probe_mod_xyz" in res.stdout, res.stdout + res.stderr
    assert not marker.exists()


def test_item12_a_newline_in_the_yaml_path_stays_a_comment(tmp_path):
    odd = tmp_path / "a\nimport os; os.system('touch PWNED')\nb"
    odd.mkdir()
    (odd / "ops.yaml").write_text(_op())
    res = _codegen("--yaml", str(odd), "--out", "gen", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    table = (tmp_path / "gen" / "op_table.py").read_text()
    assert "\nimport os" not in table and "\\nimport os" in table
    res = subprocess.run([sys.executable, "-c", "import gen.op_table"], cwd=tmp_path,
                         capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), ROOT])))
    assert res.returncode == 0, res.stderr
    assert not (tmp_path / "PWNED").exists()


# ---------------------------------------------------------------- 13. aliases
def test_item13_a_billion_laughs_file_is_refused_quickly(tmp_path):
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{k}: &a{k} [{', '.join([f'*a{k - 1}'] * 9)}]" for k in range(1, 10)]
    text = "- op : x\n  " + "\n  ".join(lines) + "\n"
    start = time.monotonic()
    with pytest.raises(CodegenError, match=r"ops\.yaml:\d+: YAML aliases"):
        load_yaml_dir(_dir(tmp_path, text))
    assert time.monotonic() - start < 5


# ---------------------------------------------------------------- 14. file:line, no traceback
def test_item14_triple_quotes_in_doc(tmp_path):
    with pytest.raises(CodegenError, match=r'ops\.yaml:\d+: doc may not contain triple'):
        load_yaml_dir(_dir(tmp_path, _op(doc="'say \"\"\" here'")))


def test_item14_a_file_that_is_not_utf8(tmp_path):
    text = (_op() + "# caf\xe9\n").encode("latin-1")
    with pytest.raises(CodegenError, match=r"ops\.yaml:11: the file is not UTF-8"):
        load_yaml_dir(_dir(tmp_path, text, mode="wb"))


def test_item14_deep_nesting(tmp_path):
    text = "- op : x\n  args : " + "[" * 5000 + "]" * 5000 + "\n"
    res = _codegen("--yaml", _dir(tmp_path, text), "--out", "gen", cwd=tmp_path)
    assert res.returncode == 1 and "ops.yaml:1: " in res.stderr and "Traceback" not in res.stderr


def test_an_infer_meta_rule_that_cannot_take_its_params_is_refused_naming_the_op(tmp_path):
    """``param: [x, shape]`` for unchanged_infer_meta(x): the generator refuses it, naming
    the file, the op and the rule's signature (the first call raised a bare TypeError)."""
    text = _op().replace("param : [x]", "param : [x, shape]")
    res = _codegen("--yaml", _dir(tmp_path, text), "--out", "gen", cwd=tmp_path)
    assert res.returncode == 1
    assert "ops.yaml" in res.stderr and "my_op" in res.stderr
    assert "infer_meta function 'unchanged_infer_meta(x)' cannot take the 2 arguments" \
        in res.stderr, res.stderr
