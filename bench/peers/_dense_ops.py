"""Issue 19's elementwise ops and reductions as IMPLS entries, one table per peer.

A dense peer names, for each op of :data:`bench.workloads.UNARY`, ``BINARY``,
``REDUCE`` and ``where``, the call its users would write (``torch.amax`` for
``max``, ``1 / (1 + exp(-x))`` for numpy's ``sigmoid``); :func:`impls` turns
those tables into factories that convert the inputs untimed and time the call.
Every peer times the same inputs: float32, in [0.5, 1.5).
"""
from ..measure import Case


def impls(convert, unary, binary, reduce, where, label, bind=None):
    """``{op: {label(op): factory}}`` for every op a table names.

    Parameters
    ----------
    convert : callable
        ``convert(array, backend)``: the peer's tensor of a numpy input.
    unary, binary : dict
        op name -> ``f(x)``, ``f(x, y)``.
    reduce : dict
        op name -> ``g(axis)`` (an int, or None for every axis), which returns the
        ``f(x)`` to time: a ``functools.partial`` where one does, so that no peer pays
        a Python layer the others do not.
    where : callable or None
        ``where(cond, x, y)``.
    label : callable
        op name -> the impl label shown in the tables.
    bind : callable, optional
        ``bind(entry, backend)``: the function to time, made untimed from a table
        entry (numpy's entries take the backend's array namespace); default: the
        entry itself.
    """
    bind = bind or (lambda f, be: f)
    out = {op: {label(op): _factory(convert, bind, f, ("x",))} for op, f in unary.items()}
    out.update({op: {label(op): _factory(convert, bind, f, ("x", "y"))}
                for op, f in binary.items()})
    out.update({op: {label(op): _reduction(convert, bind, f)} for op, f in reduce.items()})
    if where is not None:
        out["where"] = {label("where"): _factory(convert, bind, where, ("cond", "x", "y"))}
    return out


def _factory(convert, bind, entry, names):
    """A factory timing ``f(*inputs)`` on the inputs ``names``, converted untimed."""
    def factory(inp, be):
        f, args = bind(entry, be), [convert(inp[k], be) for k in names]
        if len(args) == 1:
            x, = args
            return Case(lambda: f(x))
        return Case(lambda: f(*args))
    return factory


def _reduction(convert, bind, entry):
    def factory(inp, be):
        f, x = bind(entry, be)(inp["axis"]), convert(inp["x"], be)
        return Case(lambda: f(x))
    return factory


#: clip's bounds in every peer: inside the inputs' range, so both bounds bite.
CLIP = (0.75, 1.25)
