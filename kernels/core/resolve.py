"""Functions named in the op YAML, found by name at run time.

A bare name (``reshape_infer_meta``) lives in :mod:`kernels.infermeta`; a
dotted one (``mypkg.rules.my_infer_meta``) names its module.  The generated
op table and the generator both resolve names here, so running an op never
imports the generator (or PyYAML).
"""
import importlib

DEFAULT_MODULE = "kernels.infermeta"


def resolve_function(dotted, default_module=DEFAULT_MODULE):
    """The function ``dotted`` names, or None if its module or attribute is missing.

    Examples
    --------
    >>> resolve_function("resolve_reshape")((2, 3), [-1])
    (6,)
    >>> resolve_function("no.such.module.fn") is None
    True
    """
    module, _, attr = dotted.rpartition(".")
    try:
        mod = importlib.import_module(module or default_module)
    except ImportError:
        return None
    return getattr(mod, attr, None)
