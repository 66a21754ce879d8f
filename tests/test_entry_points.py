"""Every ``python -m`` entry point answers --help with its usage and does nothing else."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _entry_points():
    """Module names of the files in dense/, sparse/, kernels/ and bench/ that run as __main__."""
    found = []
    for pkg in ("dense", "sparse", "kernels", "bench"):
        for folder, _, files in os.walk(os.path.join(ROOT, pkg)):
            for name in sorted(files):
                path = os.path.join(folder, name)
                if name.endswith(".py") and 'if __name__ == "__main__":' in open(path).read():
                    rel = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
                    found.append(rel.removesuffix(".__main__"))
    return sorted(found)


def test_the_entry_points_are_found():
    assert {"sparse", "kernels.codegen", "bench", "bench.worker"} <= set(_entry_points())


@pytest.mark.parametrize("module", _entry_points())
def test_help(module):
    res = subprocess.run([sys.executable, "-m", module, "--help"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith(f"usage: python -m {module}")
    assert "all checks passed" not in res.stdout and "codegen:" not in res.stdout
