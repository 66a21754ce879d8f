"""The wheel and the sdist work like the checkout (slow: two builds, two fresh venvs).

``python -m build`` makes the sdist and, from it, the wheel.  Each goes into a
fresh virtual environment of its own (no system site-packages, so a missing
dependency fails), and there, from a folder outside the checkout, the tests
run the tour, ``python -m kernels.codegen --check`` (fresh), a bare ``python
-m kernels.codegen`` (writes nothing into the installed copy; every op still
there), and the README's user-op example, commands and output as printed.
The sdist's own test suite then runs from the unpacked sdist in the sdist's
venv, installed with the ``[cpu-test]`` extra (no CUDA wheels: the NVRTC
checks skip, so REQUIRE_NVRTC is unset there; CI runs them in the checkout).
"""
import glob
import hashlib
import os
import re
import subprocess
import sys
import tarfile
import zipfile

import pytest

pytestmark = pytest.mark.slow

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GENERATED = ("kernels/_generated/op_table.py", "dense/_generated_api.py",
             "sparse/_generated_api.py")


def _sh(cmd, cwd, env=None, timeout=900):
    res = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
                         timeout=timeout, shell=isinstance(cmd, str))
    assert res.returncode == 0, f"{cmd}\n{res.stdout[-4000:]}\n{res.stderr[-4000:]}"
    return res


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    _sh([sys.executable, "-m", "build", "--outdir", str(out), ROOT], cwd=ROOT)
    (wheel,), (sdist,) = glob.glob(str(out / "*.whl")), glob.glob(str(out / "*.tar.gz"))
    return {"wheel": wheel, "sdist": sdist}


def _venv_env(venv):
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "REQUIRE_NVRTC", "REQUIRE_GPU", "PYTHONHOME")}
    env["PATH"] = os.path.join(venv, "bin") + os.pathsep + env.get("PATH", "")
    env["VIRTUAL_ENV"] = str(venv)
    return env


@pytest.fixture(scope="module")
def venvs(dist, tmp_path_factory):
    """kind -> (environment, working folder) of a fresh venv holding the wheel or the sdist."""
    made = {}

    def get(kind):
        if kind not in made:
            base = tmp_path_factory.mktemp(kind)
            _sh([sys.executable, "-m", "venv", str(base / "venv")], cwd=base)
            env = _venv_env(base / "venv")
            target = dist[kind] + ("[cpu-test]" if kind == "sdist" else "")
            _sh(["python", "-m", "pip", "install", "-q", "--disable-pip-version-check",
                 target], cwd=base, env=env)
            (base / "work").mkdir()
            made[kind] = env, base / "work"
        return made[kind]
    return get


@pytest.fixture(params=["wheel", "sdist"])
def installed(request, venvs):
    return venvs(request.param)


def test_the_wheel_ships_the_op_yaml_its_manual_and_py_typed(dist):
    with zipfile.ZipFile(dist["wheel"]) as z:
        names = set(z.namelist())
        for src in sorted(glob.glob(os.path.join(ROOT, "yaml", "*"))):
            shipped = "kernels/ops_yaml/" + os.path.basename(src)
            with open(src, "rb") as fh:
                assert z.read(shipped) == fh.read(), shipped
    assert {"dense/py.typed", "sparse/py.typed", "kernels/py.typed"} <= names
    tracked = _sh(["git", "ls-files", "dense", "sparse", "kernels"], cwd=ROOT).stdout.split()
    assert set(tracked) <= names, sorted(set(tracked) - names)   # .cu, .cuh, ... included
    assert not [n for n in names if n.startswith(("tests/", "bench/", "yaml/"))]


def test_the_sdist_holds_what_the_suite_needs(dist):
    with tarfile.open(dist["sdist"]) as t:
        names = {n.split("/", 1)[1] for n in t.getnames() if "/" in n}
    tracked = _sh(["git", "ls-files"], cwd=ROOT).stdout.split()
    wanted = {n for n in tracked if n.startswith(("yaml/", "bench/", "tests/", "dense/",
                                                  "sparse/", "kernels/"))}
    assert {"tests/conftest.py", "tests/opdb/__init__.py", "yaml/ops.yaml", "setup.py",
            "bench/__main__.py", "pyproject.toml"} <= names
    assert wanted <= names, sorted(wanted - names)


def test_the_tour_runs(installed):
    env, work = installed
    assert "all checks passed" in _sh(["python", "-m", "sparse"], cwd=work, env=env).stdout


def _digests(env, work):
    code = ("import hashlib, os, kernels; r = os.path.dirname(os.path.dirname(kernels.__file__)); "
            f"print([hashlib.sha256(open(os.path.join(r, p), 'rb').read()).hexdigest() "
            f"for p in {GENERATED!r}])")
    return _sh(["python", "-c", code], cwd=work, env=env).stdout


def test_codegen_says_fresh_and_a_bare_run_changes_nothing(installed):
    env, work = installed
    res = _sh(["python", "-m", "kernels.codegen", "--check"], cwd=work, env=env)
    assert "fresh" in res.stdout and "ops_yaml" in res.stdout
    before = _digests(env, work)
    res = _sh(["python", "-m", "kernels.codegen"], cwd=work, env=env)
    assert "nothing written" in res.stdout
    assert _digests(env, work) == before
    ops = _sh(["python", "-c", "import dense, sparse; print(len(dense.__all__), "
               "callable(dense.expand), callable(sparse.reshape))"], cwd=work, env=env)
    assert ops.stdout.split()[1:] == ["True", "True"]


def readme_user_op():
    """The README's user-op example: {path: text} and [(command, expected output lines)]."""
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as fh:
        text = fh.read()
    section = text[text.index("Your own ops live outside"):]
    files = {m[0]: m[1] for m in re.findall(r"`(myops/[\w/]+\.\w+)`:\s*\n+```\w+\n(.*?)```",
                                             section, re.S)}
    console = re.search(r"```console\n(.*?)```", section, re.S).group(1)
    steps = []
    for line in console.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            steps[-1][1].append(line)
    return files, steps


def run_readme_user_op(folder, env):
    files, steps = readme_user_op()
    assert set(files) == {"myops/kernels.py", "myops/yaml/ops.yaml", "myops/yaml/backward.yaml"}
    for path, body in files.items():
        os.makedirs(os.path.join(folder, os.path.dirname(path)), exist_ok=True)
        with open(os.path.join(folder, path), "w") as fh:
            fh.write(body)
    open(os.path.join(folder, "myops", "__init__.py"), "w").close()
    for cmd, expected in steps:
        assert _sh(cmd, cwd=folder, env=env).stdout.splitlines() == expected, cmd


def test_the_readme_user_op_example(installed):
    env, work = installed
    run_readme_user_op(work / "user", env)


def test_the_suite_runs_from_the_unpacked_sdist(venvs, dist, tmp_path):
    env, _ = venvs("sdist")
    with tarfile.open(dist["sdist"]) as t:
        t.extractall(tmp_path, filter="data")
    (src,) = tmp_path.iterdir()
    res = _sh(["python", "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
               "--ignore", "tests/test_packaging.py"], cwd=src, env=env, timeout=1800)
    assert re.search(r"\d+ passed", res.stdout), res.stdout[-2000:]
    skips = [line for line in res.stdout.splitlines() if line.startswith("SKIPPED [")]
    assert all("cupy is not installed" in line for line in skips), skips   # the NVRTC checks
