"""python -m kernels.codegen [--yaml DIR] [--out DIR [--package NAME]] [--check]

Without --out it regenerates phisparse's own modules from yaml/ (and refuses
a --yaml folder: that would replace the library's ops).  With --out it
generates a user's op package (op_table.py, api.py, sparse_api.py); its import
name comes from --package or from --out's path below the current directory,
and must be dotted Python names.
"""
import argparse
import os
import sys

from .loader import CodegenError
from .emit import generate
from ..core.resolve import is_name
from .yamldir import load_yaml_dir

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _builtin_paths():
    return {"table": os.path.join(ROOT, "kernels", "_generated", "op_table.py"),
            "dense": os.path.join(ROOT, "dense", "_generated_api.py"),
            "sparse": os.path.join(ROOT, "sparse", "_generated_api.py")}


def _user_paths(out):
    return {"table": os.path.join(out, "op_table.py"), "dense": os.path.join(out, "api.py"),
            "sparse": os.path.join(out, "sparse_api.py")}


def _package(out, package):
    """The import name of the --out package, checked to be dotted Python names."""
    if package is None:
        rel = os.path.relpath(os.path.abspath(out))
        if rel.startswith(os.pardir) or os.path.isabs(rel):
            raise CodegenError(f"--out {out!r} is outside the current directory, so its import "
                               "name is unknown; pass --package NAME")
        package = rel.replace(os.sep, ".").strip(".")
    if not all(is_name(p) for p in package.split(".")):
        raise CodegenError(f"package name {package!r} (from --package or --out) is not dotted "
                           "Python names: use ASCII letters, digits and '_', each part starting "
                           "with a letter, no keywords (no '-' or spaces)")
    return package


def _check_builtin_names(defs):
    """A user op named like a built-in one must say ``override : true``."""
    import importlib
    from ..core.dispatch import get_op
    importlib.import_module("kernels._generated.op_table")   # registers the built-in ops
    for d in defs:
        try:
            get_op(d.namespace, d.name)
        except KeyError:
            continue
        if not d.override:
            raise CodegenError(f"{d.where}: {d.name}: '{d.namespace}.{d.name}' is a built-in "
                               "op; importing this package would replace it for everyone. "
                               "Rename the op, or set 'override : true' to mean it")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m kernels.codegen", description=__doc__)
    parser.add_argument("--yaml", default=None, help="directory holding the op YAML files")
    parser.add_argument("--out", default=None, help="output package directory (user ops)")
    parser.add_argument("--package", default=None,
                        help="dotted import name of --out (default: its path from here)")
    parser.add_argument("--check", action="store_true", help="fail if outputs are stale")
    ns = parser.parse_args(argv)
    try:
        if ns.out:
            yaml_dir, label_root = ns.yaml or ".", None
        else:
            if ns.yaml is not None or ns.package is not None:
                raise CodegenError("--yaml and --package need --out: without --out the "
                                   "generator rewrites phisparse's own modules from its own "
                                   "yaml/ folder; pass --out DIR to generate a user package")
            yaml_dir = os.path.join(ROOT, "yaml")
            paths, table_module = _builtin_paths(), "kernels._generated.op_table"
            label_root = ROOT
        defs = load_yaml_dir(yaml_dir, label_root)
        if ns.out:
            _check_builtin_names(defs)
            paths = _user_paths(ns.out)
            table_module = _package(ns.out, ns.package) + ".op_table"
    except CodegenError as exc:
        print(f"codegen: error: {exc}", file=sys.stderr)
        return 1
    files = list(dict.fromkeys(d.file for d in defs))
    stale = generate(defs, paths, table_module, ", ".join(files) or "no YAML", ns.check)
    if ns.out and not ns.check and not os.path.exists(os.path.join(ns.out, "__init__.py")):
        open(os.path.join(ns.out, "__init__.py"), "w").close()
    if ns.check and stale:
        print("codegen: stale generated files (run python -m kernels.codegen):\n  "
              + "\n  ".join(stale), file=sys.stderr)
        return 1
    print(f"codegen: {len(defs)} ops, {'checked' if ns.check else 'wrote'} "
          f"{len(paths)} modules" + (f" ({len(stale)} changed)" if not ns.check else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
