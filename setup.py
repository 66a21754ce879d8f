"""Build hook: ship phisparse's op YAML inside the package.

The top-level ``yaml/`` folder is the source of truth, but a wheel cannot
install it under that name (``yaml`` in site-packages is PyYAML).  Every build
copies its YAML files and README.md (the format's manual) into the built
package as ``kernels/ops_yaml/``, where ``kernels.codegen.paths`` finds them,
so the two can never differ.  Everything else is in pyproject.toml.
"""
import glob
import os

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildPyWithOpYaml(build_py):
    """build_py, plus yaml/*.yaml and yaml/README.md as kernels/ops_yaml/."""

    def run(self):
        super().run()
        target = os.path.join(self.build_lib, "kernels", "ops_yaml")
        self.mkpath(target)
        for src in sorted(glob.glob(os.path.join("yaml", "*.yaml"))) + [
                os.path.join("yaml", "README.md")]:
            self.copy_file(src, os.path.join(target, os.path.basename(src)))


setup(cmdclass={"build_py": BuildPyWithOpYaml})
