"""python -m kernels.codegen [--yaml DIR] [--out DIR [--package NAME]] [--check]

Without --out it regenerates phisparse's own modules from yaml/.  With --out
it generates a user's op package (op_table.py, api.py, sparse_api.py).
"""
import argparse
import os
import sys

from .loader import CodegenError
from .emit import generate
from .yamldir import load_yaml_dir

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _builtin_paths():
    return {"table": os.path.join(ROOT, "kernels", "_generated", "op_table.py"),
            "dense": os.path.join(ROOT, "dense", "_generated_api.py"),
            "sparse": os.path.join(ROOT, "sparse", "_generated_api.py")}


def _user_paths(out):
    return {"table": os.path.join(out, "op_table.py"), "dense": os.path.join(out, "api.py"),
            "sparse": os.path.join(out, "sparse_api.py")}


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m kernels.codegen", description=__doc__)
    parser.add_argument("--yaml", default=None, help="directory holding the op YAML files")
    parser.add_argument("--out", default=None, help="output package directory (user ops)")
    parser.add_argument("--package", default=None,
                        help="dotted import name of --out (default: its path from here)")
    parser.add_argument("--check", action="store_true", help="fail if outputs are stale")
    ns = parser.parse_args(argv)
    if ns.out:
        yaml_dir = ns.yaml or "."
        package = ns.package or os.path.relpath(ns.out).replace(os.sep, ".").strip(".")
        paths, table_module = _user_paths(ns.out), package + ".op_table"
        label_root = None
    else:
        yaml_dir = ns.yaml or os.path.join(ROOT, "yaml")
        paths, table_module, label_root = _builtin_paths(), "kernels._generated.op_table", ROOT
    try:
        defs = load_yaml_dir(yaml_dir, label_root)
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
