"""Functions named in the op YAML, found by name at run time.

A bare name (``reshape_infer_meta``) lives in :mod:`kernels.infermeta`; a
dotted one (``mypkg.rules.my_infer_meta``) names its module.  The generated
op table and the generator both resolve names here, so running an op never
imports the generator (or PyYAML).
"""
import importlib
import keyword
import re

DEFAULT_MODULE = "kernels.infermeta"
#: Roots of the dotted functions the YAML may call (``invoke``, ``infer_meta``,
#: ``sbp``): phisparse's own package; a user package's ops add their own root.
ROOTS = ("kernels",)
#: A name the YAML may give (op, argument, output, kernel, module part): ASCII,
#: starting with a letter (a leading '_' could shadow the generated modules' own
#: names such as ``_d``, or reach a private one), and not a Python keyword.
_NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")


def is_name(text):
    """True if ``text`` is a name the YAML may use (see ``_NAME_RE``)."""
    return isinstance(text, str) and bool(_NAME_RE.match(text)) and not keyword.iskeyword(text)


def resolve_function(dotted, default_module=DEFAULT_MODULE, roots=ROOTS):
    """The public function ``dotted`` names in a package of ``roots``, or None.

    The YAML is untrusted text: no module outside ``roots`` is imported and
    every part of the name must be public, so ``builtins.exec`` or
    ``os.system`` stay inert, and so does a function another module merely
    imported (its ``__module__`` must lie in ``roots`` too).

    Examples
    --------
    >>> resolve_function("resolve_reshape")((2, 3), [-1])
    (6,)
    >>> resolve_function("no.such.module.fn") is None
    True
    >>> resolve_function("builtins.exec") is None
    True
    """
    if not all(is_name(p) for p in dotted.split(".")):
        return None
    module, _, attr = dotted.rpartition(".")
    module = module or default_module
    if module.split(".")[0] not in roots:
        return None
    try:
        mod = importlib.import_module(module)
    except ImportError:
        return None
    fn = getattr(mod, attr, None)
    origin = getattr(fn, "__module__", None) or ""
    return fn if callable(fn) and origin.split(".")[0] in roots else None


def resolver(roots):
    """The run-time ``_resolve`` of a generated op table: resolve_function or a clear error."""
    def resolve(dotted):
        fn = resolve_function(dotted, roots=roots)
        if fn is None:
            raise RuntimeError(f"codegen: function '{dotted}' is not a public function of "
                               f"the packages {list(roots)}")
        return fn
    return resolve
