"""SBP signature tables: what the generator emits from a YAML ``sbp:`` field.

An op's table holds rules such as ``S(d), B -> S(d + k - bd - 1) if d > ax``:
one input pattern per Tensor argument (``S(var)``, ``B`` or ``P``), one output
sbp per output, and an optional condition.  At call time every rule is
expanded over the split axes its variables can take; each expansion whose
condition holds is a candidate :class:`Signature`.  ``B, ..., B -> B, ..., B``
is always a candidate: any op can run redundantly on whole copies.

Expressions see the op's Tensor arguments (logical MetaTensors), its
attributes (as dispatch converted them), ``out`` (the logical output meta),
the table's ``let`` names, the rule's variables, the helpers below, and in
``physical`` also ``<tensor>_local`` (this rank's physical MetaTensor),
``<tensor>_sbp``, ``<tensor>_axis`` (its split axis, else None),
``<tensor>_slice`` (``(start, stop)`` of its shard along that axis, else
``(0, size)`` of axis 0) and ``out_local`` (the physical output meta).
"""
import itertools
from dataclasses import dataclass
from types import SimpleNamespace

from .sbp import Sbp, broadcast, partial_sum

HELPERS = ("axes_of", "norm_axis", "count_below")
B = broadcast
P = partial_sum


def S(axis):
    """split(axis) as a rule writes it (an axis out of range never matches)."""
    return Sbp("S", int(axis))


def axes_of(axis, ndim):
    """The reduced axes of ``axis`` (None or []: all, as Paddle), normalised to [0, ndim)."""
    if axis is None or len(axis) == 0:
        return tuple(range(ndim))
    return tuple(a % ndim for a in axis)


def norm_axis(axis, ndim):
    """``axis`` in [-ndim, ndim] mapped to [0, ndim] (ndim itself is kept)."""
    return axis + ndim if axis < 0 else axis


def count_below(axes, i):
    """How many of ``axes`` are below ``i``."""
    return sum(a < i for a in axes)


@dataclass(frozen=True)
class SbpRule:
    """One rule: input patterns ('B', 'P' or ('S', var)), outputs, condition."""

    ins: tuple
    out: object
    cond: object = None
    text: str = ""


@dataclass(frozen=True)
class LocalKernel:
    """A kernel mode the YAML does not list (gather's offset/zero-fill), by dotted name.

    ``forward(*tensor data, *attrs, **args)`` computes the shard;
    ``backward(first input's shape, *other tensor data, out_grad, *attrs, **args)``
    returns the first input's gradient.
    """

    forward: str
    backward: str | None
    args: tuple = ()


@dataclass(frozen=True)
class SbpTable:
    """An op's rules, ``let`` bindings, physical attributes and local kernel mode.

    ``let``, ``physical`` and ``local.args`` are tuples of (name, function of env).
    """

    rules: tuple
    let: tuple = ()
    physical: tuple = ()
    local: LocalKernel | None = None


@dataclass(frozen=True)
class Signature:
    """Concrete sbps of every input and output."""

    ins: tuple
    outs: tuple
    rule: str = "B -> B"


def environment(spec, metas, attrs, out_metas, table):
    """The namespace rule expressions are evaluated in."""
    env = SimpleNamespace(**{a.name: m for a, m in zip(spec.tensor_args, metas)})
    env.__dict__.update({a.name: v for a, v in zip(spec.attr_args, attrs)})
    env.__dict__.update(zip(spec.outputs, out_metas))
    env.out = out_metas[0]
    if table is not None:
        for name, fn in table.let:
            setattr(env, name, fn(env))
    return env


def candidates(spec, metas, attrs, out_metas):
    """Every signature the op's table allows for these logical inputs."""
    table = spec.extra.get("sbp")
    found = [Signature((broadcast,) * len(metas), (broadcast,) * len(out_metas))]
    if table is None:
        return found
    env = environment(spec, metas, attrs, out_metas, table)
    for rule in table.rules:
        found.extend(_expand(rule, metas, out_metas, env))
    return found


def _expand(rule, metas, out_metas, env):
    names = list(dict.fromkeys(p[1] for p in rule.ins if isinstance(p, tuple)))
    limit = {v: min(m.ndim for p, m in zip(rule.ins, metas) if p == ("S", v)) for v in names}
    for values in itertools.product(*(range(limit[v]) for v in names)):
        scope = SimpleNamespace(**vars(env), **dict(zip(names, values)))
        if rule.cond is not None and not rule.cond(scope):
            continue
        ins = tuple(_pattern(p, dict(zip(names, values))) for p in rule.ins)
        outs = tuple(rule.out(scope))
        if all(_fits(s, m) for s, m in zip(ins + outs, tuple(metas) + tuple(out_metas))):
            yield Signature(ins, outs, rule.text)


def _pattern(p, values):
    if isinstance(p, tuple):
        return Sbp("S", values[p[1]])
    return Sbp(p)


def _fits(sbp, meta):
    """A split axis must exist; a partial sum needs a dtype that sums (not bool)."""
    if sbp.is_split:
        return 0 <= sbp.axis < meta.ndim
    return sbp.kind != "P" or meta.dtype.kind != "b"


__all__ = ["SbpRule", "SbpTable", "LocalKernel", "Signature", "candidates", "environment",
           "S", "B", "P"] + list(HELPERS)
