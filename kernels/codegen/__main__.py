"""python -m kernels.codegen [--out DIR [--yaml DIR] [--package NAME]] [--check]

Without --out it regenerates phisparse's own modules from its op YAML: the
top-level yaml/ folder of a checkout, or the copy an installed phisparse ships
as kernels/ops_yaml/.  An installed phisparse is only checked, never written,
unless --write-installed says so; --yaml and --package are refused there (they
would replace the library's ops).  With --out it generates a user's op
package (op_table.py, api.py, sparse_api.py) from --yaml (default: the
current folder); its import name comes from --package or from --out's path
below the current directory, and must be dotted Python names.
"""
import argparse
import os
import shlex
import sys

from ..core.resolve import is_name
from .emit import generate
from .loader import CodegenError
from .paths import YAML_LABEL, builtin_paths, builtin_yaml_dir, is_checkout
from .yamldir import load_yaml_dir


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


def _parser():
    parser = argparse.ArgumentParser(
        prog="python -m kernels.codegen", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=f"phisparse's own op YAML here: {builtin_yaml_dir()}")
    parser.add_argument("--yaml", default=None, help="directory holding a user's op YAML "
                        "files (with --out)")
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


def _plan(ns):
    """(defs, paths, table module, check) for the command line, or CodegenError."""
    if not ns.out:
        if ns.yaml is not None or ns.package is not None:
            raise CodegenError("--yaml and --package need --out: without --out the "
                               "generator rewrites phisparse's own modules from its own "
                               "op YAML; pass --out DIR to generate a user package")
        check = ns.check or not (is_checkout() or ns.write_installed)
        defs = load_yaml_dir(builtin_yaml_dir(), YAML_LABEL)
        return defs, builtin_paths(), "kernels._generated.op_table", check
    defs = load_yaml_dir(ns.yaml or ".")
    _check_builtin_names(defs)
    return defs, _user_paths(ns.out), _package(ns.out, ns.package) + ".op_table", ns.check


def main(argv=None):
    ns = _parser().parse_args(argv)
    try:
        defs, paths, table_module, check = _plan(ns)
    except CodegenError as exc:
        print(f"codegen: error: {exc}", file=sys.stderr)
        return 1
    files = list(dict.fromkeys(d.file for d in defs))
    stale = generate(defs, paths, table_module, ", ".join(files) or "no YAML", check)
    if ns.out and not check and not os.path.exists(os.path.join(ns.out, "__init__.py")):
        open(os.path.join(ns.out, "__init__.py"), "w").close()
    if check and stale:
        again = " ".join(shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:])
                         if not (len(a) > 3 and "--check".startswith(a)))
        hint = (f"run python -m kernels.codegen {again}".rstrip() if ns.check else
                "this phisparse is installed, not a checkout: nothing was written; "
                "pass --write-installed to rewrite it")
        print(f"codegen: stale generated files ({hint}):\n  " + "\n  ".join(stale),
              file=sys.stderr)
        return 1
    done = (f"checked {len(paths)} modules: fresh" if check else
            f"wrote {len(paths)} modules ({len(stale)} changed)")
    note = "" if ns.check or not check else " (installed copy: nothing written)"
    where = builtin_yaml_dir() if not ns.out else (ns.yaml or ".")
    print(f"codegen: {len(defs)} ops from {where}, {done}{note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
