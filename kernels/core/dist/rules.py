"""SBP signature tables: what the generator emits from a YAML ``sbp:`` field.

An op's table holds rules such as ``S(d), B -> S(d + k - bd - 1) if d > ax``:
one input pattern per Tensor argument (``S(var)``, ``B`` or ``P``), one output
sbp per output, and an optional condition.  At call time every rule is
expanded over the split axes its variables can take; each expansion whose
condition holds is a candidate :class:`Signature`.  ``B, ..., B -> B, ..., B``
is always a candidate: any op can run redundantly on whole copies.

A ``Tensor[]`` argument takes one pattern, which every element must have:
``S(i)`` splits each element along ``i`` (and matches only when the
elements have one size along ``i``, so every rank holds the same range of
each), ``B`` and ``P`` likewise.  Its name in an expression is the list of
the elements' MetaTensors (``xs[0].ndim``, ``len(xs)``).

Expressions see the op's Tensor arguments (logical MetaTensors), its
attributes (canonical where the infer-meta returns
:class:`kernels.core.meta.Canonical`, e.g. gather's non-negative ``axis``
and ``batch_dims``), ``out`` and the output names (the logical output
metas), the rule's variables and the helpers below.

An op whose local kernel needs attributes other than the logical ones names
a ``physical`` function (OneFlow's ``GetSbp`` and JAX's ``sharding_rule``
are plain functions beside the op too).  It gets a :class:`Shards` view of
the chosen signature and returns a dict: a YAML attribute's new value (the
shard's target shape, for expand and reshape), or a kernel-only attribute
that the registered forward and backward kernels both take (gather's
``offset`` and ``bound`` on a split gathered axis).
"""
import itertools
import numbers
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from ..xp import xp_of
from .sbp import Sbp, broadcast, partial_sum

HELPERS = ("axes_of", "norm_axis", "count_below", "cast_keeps_sums", "finite", "nonzero")
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


def cast_keeps_sums(src, dst):
    """Whether casting each addend from ``src`` to ``dst`` and summing gives the cast
    of the sum, the addends' sum being taken in ``src`` as the all-reduce takes it.

    True from a floating or complex dtype to one of the same precision (complex
    to real keeps the real part, which is linear; real to complex adds zero
    imaginary parts), and from an integer dtype to one as wide or narrower
    (wrapping is reduction modulo 2**bits).  Not to bool or from floating to
    integer (each addend would be truncated); not to a narrower float (addends
    of 1e39 and -1e39 overflow float32 to inf and -inf, whose sum is NaN, where
    their sum casts to 0); not to a wider float (float32 addends 3e38 and 3e38
    sum to inf, their float64 casts to 6e38, and any sum rounds differently);
    not from an integer to a wider or floating dtype (int8 addends 100 and 100
    sum to -56, their casts to 200).  :func:`candidates` applies it to every
    rule that keeps a partial_sum input partial_sum (:func:`sums_carry`)."""
    if src.kind in "fc" and dst.kind in "fc":
        return _component_bytes(dst) == _component_bytes(src)
    return src.kind in "iu" and dst.kind in "iu" and dst.itemsize <= src.itemsize


def _component_bytes(dtype):
    return dtype.itemsize // 2 if dtype.kind == "c" else dtype.itemsize


def finite(t):
    """Whether every value of the Tensor argument ``t`` is finite (no inf or NaN), or
    a number attribute ``t`` is (addmm's ``alpha`` and ``beta``).

    A data predicate: ``P, B -> P`` of multiply and matmul holds only then
    (an addend 0 times inf is NaN where the sum times inf is inf).  It reads
    ``t`` only where it is broadcast (every rank holds the same copy, so every
    rank answers alike without communicating); another sbp answers False, and
    so does a condition evaluated without the tensors (:func:`candidates`).
    """
    if isinstance(t, numbers.Number):
        return bool(np.isfinite(t))
    return _all_values(t, lambda xp, v: xp.isfinite(v))


def nonzero(t):
    """Whether the Tensor argument ``t`` holds no zero (``P, B -> P`` of divide: an
    addend 0 over 0 is NaN where the sum over 0 is inf); read as :func:`finite`
    reads, and False for a sparse ``t``, whose unstored entries are zeros."""
    return getattr(t, "layout", None) == "dense" and _all_values(t, lambda xp, v: v != 0)


def _all_values(t, test):
    """``test`` of every logical value of broadcast ``t``.  A sparse tensor that may
    store a coordinate twice has logical values that are sums of its stored ones: they
    pass only if the sum of every stored magnitude is finite too, which bounds each of
    them (float32 duplicates 3e38 and 3e38 are finite, their sum is not); answering
    False where that bound overflows is safe, as the rule then does not apply."""
    g = getattr(t, "tensor", None)
    if g is None or g.sbp.kind != "B":
        return False
    local = g._local
    data = local._data()
    values = data if local.layout == "dense" else data.values
    xp = xp_of(values)
    if not bool(test(xp, values).all()):
        return False
    if local.layout == "dense" or getattr(data, "coalesced", False) \
            or getattr(data, "unique", False) or values.dtype.kind not in "fc":
        return True
    with np.errstate(over="ignore"):
        return bool(xp.isfinite(xp.abs(values).sum()))


class Operand:
    """A Tensor argument as rule conditions see it: its logical metadata's attributes
    (``x.shape``), and the global tensor itself (``tensor``) for :func:`finite` and
    :func:`nonzero`."""

    def __init__(self, tensor):
        self.tensor = tensor

    def __getattr__(self, name):
        return getattr(self.tensor.meta, name)


@dataclass(frozen=True)
class SbpRule:
    """One rule: input patterns ('B', 'P' or ('S', var)), outputs, condition."""

    ins: tuple
    out: object
    cond: object = None
    text: str = ""


@dataclass(frozen=True)
class SbpTable:
    """An op's rules and its ``physical`` function (None: the logical attributes serve)."""

    rules: tuple
    physical: object = None


class Shards(SimpleNamespace):
    """What a ``physical`` function sees, by attribute name.

    The op's Tensor arguments (logical MetaTensors), attributes and outputs
    (``out`` is the first) by name, and for each Tensor argument ``t``:
    ``t_local`` (this rank's physical MetaTensor), ``t_sbp``, ``t_axis``
    (its split axis, else None) and ``t_slice`` (``(start, stop)`` of its
    shard along that axis, else None); ``out_local`` is this rank's output
    shard's metadata.
    """


@dataclass(frozen=True)
class Signature:
    """Concrete sbps of every input and output."""

    ins: tuple
    outs: tuple
    rule: str = "B -> B"


def environment(spec, metas, attrs, out_metas, cls=SimpleNamespace):
    """The namespace rule expressions (and ``physical`` functions) read."""
    env = cls(**{a.name: m for a, m in zip(spec.tensor_args, metas)})
    env.__dict__.update({a.name: v for a, v in zip(spec.attr_args, attrs)})
    env.__dict__.update(zip(spec.outputs, out_metas))
    env.out = out_metas[0]
    return env


def candidates(spec, metas, attrs, out_metas, tensors=None):
    """Every signature the op's table allows for these logical inputs.

    ``tensors`` (the global inputs) let conditions read data through
    :func:`finite` and :func:`nonzero`; without them those answer False.  They
    are read only where an input is partial_sum: the rules they guard keep P,
    and boxing another sbp into P is never cheaper than a rule without it, so
    an S x B multiply does not scan its broadcast operand.
    """
    table = spec.sbp
    found = [Signature((broadcast,) * len(metas), (broadcast,) * len(out_metas))]
    if table is None:
        return found
    env = environment(spec, metas, attrs, out_metas)
    if tensors is not None and any(getattr(getattr(t, "sbp", None), "kind", None) == "P"
                                   for t in tensors):
        env.__dict__.update({a.name: Operand(t) for a, t in zip(spec.tensor_args, tensors)
                             if not isinstance(t, list)})
    for rule in table.rules:
        found.extend(_expand(rule, metas, out_metas, env))
    return found


def _expand(rule, metas, out_metas, env):
    names = list(dict.fromkeys(p[1] for p in rule.ins if isinstance(p, tuple)))
    limit = {v: min(m.ndim for p, ms in zip(rule.ins, metas) if p == ("S", v)
                    for m in elements(ms)) for v in names}
    for values in itertools.product(*(range(limit[v]) for v in names)):
        scope = SimpleNamespace(**vars(env), **dict(zip(names, values)))
        if rule.cond is not None and not rule.cond(scope):
            continue
        ins = tuple(_pattern(p, dict(zip(names, values))) for p in rule.ins)
        outs = tuple(rule.out(scope))
        if all(_fits(s, m) for s, m in zip(ins + outs, tuple(metas) + tuple(out_metas))) \
                and sums_carry(ins, outs, metas, out_metas):
            yield Signature(ins, outs, rule.text)


def sums_carry(ins, outs, metas, out_metas):
    """Whether every partial_sum output can be the sum of the local results: each
    partial_sum input's dtype casts to each partial_sum output's by
    :func:`cast_keeps_sums`.  A local kernel works on an addend in the output's
    dtype (int8 addends promoted to int16 by a multiply, a float32 sum with
    ``dtype='float64'``), where one process first adds the addends in their own."""
    sources = [m.dtype for s, ms in zip(ins, metas) if s.kind == "P" for m in elements(ms)]
    targets = [m.dtype for s, m in zip(outs, out_metas) if s.kind == "P"]
    return all(cast_keeps_sums(a, b) for a in sources for b in targets)


def _pattern(p, values):
    if isinstance(p, tuple):
        return Sbp("S", values[p[1]])
    return Sbp(p)


def elements(item):
    """The items of one argument: a ``Tensor[]`` list's elements, or the one."""
    return item if isinstance(item, list) else (item,)


def _fits(sbp, meta):
    """``sbp`` suits every element of an argument (:func:`_fits_one`), and a split
    list's elements have one size along the split axis (aligned shards)."""
    each = elements(meta)
    if not all(_fits_one(sbp, m) for m in each):
        return False
    return not sbp.is_split or len({m.shape[sbp.axis] for m in each}) == 1


def _fits_one(sbp, meta):
    """A split axis must exist, and be a sparse dim of a COO tensor (COO shards are
    cut by coordinates); a partial sum needs a dtype that sums (not bool)."""
    if sbp.is_split:
        bound = meta.sparse_dim if meta.layout == "sparse_coo" else meta.ndim
        return 0 <= sbp.axis < bound
    return sbp.kind != "P" or meta.dtype.kind != "b"


__all__ = ["SbpRule", "SbpTable", "Shards", "Signature", "candidates", "environment",
           "elements", "sums_carry", "S", "B", "P"] + list(HELPERS)
