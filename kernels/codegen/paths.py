"""Where phisparse's own op YAML and generated modules live.

In a checkout the op YAML is the top-level ``yaml/`` folder beside the
packages: the source of truth.  A wheel cannot ship that folder under its own
name (``yaml`` in site-packages is PyYAML), so the build copies it into the
package as ``kernels/ops_yaml/`` (see ``setup.py``), with ``yaml/README.md``,
the format's manual.  A checkout is recognised by ``yaml/ops.yaml`` beside
the ``kernels`` package; anything else is an installed copy, which the
generator reads but never writes unless asked to with ``--write-installed``.
"""
import os

KERNELS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(KERNELS)
SHIPPED_YAML = os.path.join(KERNELS, "ops_yaml")
YAML_LABEL = "yaml"


def is_checkout() -> bool:
    """True when the packages sit beside their top-level ``yaml/`` (a source tree)."""
    return os.path.isfile(os.path.join(ROOT, "yaml", "ops.yaml"))


def builtin_yaml_dir() -> str:
    """The folder holding phisparse's own op YAML, in a checkout or an installed copy."""
    return os.path.join(ROOT, "yaml") if is_checkout() else SHIPPED_YAML


def builtin_paths() -> dict:
    """The three generated modules of phisparse itself."""
    return {"table": os.path.join(KERNELS, "_generated", "op_table.py"),
            "dense": os.path.join(ROOT, "dense", "_generated_api.py"),
            "sparse": os.path.join(ROOT, "sparse", "_generated_api.py")}
