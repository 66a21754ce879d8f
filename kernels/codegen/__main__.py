"""python -m kernels.codegen [--yaml DIR] [--out DIR [--package NAME]] [--check]

Without --out it regenerates phisparse's own modules from its op YAML: the
top-level yaml/ folder of a checkout, or the copy an installed phisparse ships
as kernels/ops_yaml/.  An installed phisparse is only checked, never written,
unless --write-installed says so.  With --out it generates a user's op package
(op_table.py, api.py, sparse_api.py) from --yaml (default: the current folder).
"""
import argparse
import os
import sys

from .loader import CodegenError
from .emit import generate
from .model import FILES
from .paths import YAML_LABEL, builtin_paths, builtin_yaml_dir, is_checkout
from .yamldir import load_yaml_dir


def _user_paths(out):
    return {"table": os.path.join(out, "op_table.py"), "dense": os.path.join(out, "api.py"),
            "sparse": os.path.join(out, "sparse_api.py")}


def _parser():
    parser = argparse.ArgumentParser(
        prog="python -m kernels.codegen", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=f"phisparse's own op YAML here: {builtin_yaml_dir()}")
    parser.add_argument("--yaml", default=None, help="directory holding the op YAML files")
    parser.add_argument("--out", default=None, help="output package directory (user ops)")
    parser.add_argument("--package", default=None,
                        help="dotted import name of --out, used by the generated api.py "
                             "to import its op_table (default: --out's path from the "
                             "current folder, so run from the package's parent folder)")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if the generated files are stale")
    parser.add_argument("--write-installed", action="store_true",
                        help="allow rewriting the generated modules of an installed "
                             "phisparse (not a checkout)")
    return parser


def main(argv=None):
    ns = _parser().parse_args(argv)
    check = ns.check
    if ns.out:
        yaml_dir = ns.yaml or "."
        package = ns.package or os.path.relpath(ns.out).replace(os.sep, ".").strip(".")
        paths, table_module, label = _user_paths(ns.out), package + ".op_table", None
    else:
        yaml_dir = ns.yaml or builtin_yaml_dir()
        paths, table_module = builtin_paths(), "kernels._generated.op_table"
        label = None if ns.yaml else YAML_LABEL
        check = check or not (is_checkout() or ns.write_installed)
    try:
        defs = load_yaml_dir(yaml_dir, label)
    except CodegenError as exc:
        print(f"codegen: error: {exc}", file=sys.stderr)
        return 1
    files = list(dict.fromkeys(d.file for d in defs))
    if not files:
        print(f"codegen: error: no op YAML ({', '.join(f[0] for f in FILES)}) in {yaml_dir}",
              file=sys.stderr)
        return 1
    stale = generate(defs, paths, table_module, ", ".join(files) or "no YAML", check)
    if ns.out and not check and not os.path.exists(os.path.join(ns.out, "__init__.py")):
        open(os.path.join(ns.out, "__init__.py"), "w").close()
    if check and stale:
        hint = ("run python -m kernels.codegen" if ns.check else
                "this phisparse is installed, not a checkout: nothing was written; "
                "pass --write-installed to rewrite it")
        print(f"codegen: stale generated files ({hint}):\n  " + "\n  ".join(stale),
              file=sys.stderr)
        return 1
    done = (f"checked {len(paths)} modules: fresh" if check else
            f"wrote {len(paths)} modules ({len(stale)} changed)")
    note = "" if ns.check or not check else " (installed copy: nothing written)"
    print(f"codegen: {len(defs)} ops from {yaml_dir}, {done}{note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
