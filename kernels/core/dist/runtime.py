"""Running ops on global tensors: placement checks, signature choice, boxing, local kernel.

``run`` is what dispatch hands over to when an input is global: the op's
infer-meta runs on the logical metadata (so every rank raises the same error
before any communication), the cheapest signature is picked, inputs are boxed
to it, and the ordinary local dispatch runs on the shards with the physical
attributes.  Autograd records that local run as usual.
"""
import importlib

from .. import dispatch, registry
from ..dtypes import ALL
from ..meta import Canonical
from ..opspec import Arg, OpSpec
from . import boxing, comm, layouts, rules
from .failures import failing_rank, raise_shared, rebuilt, shared_error
from .sbp import Sbp, broadcast, check_sbp, shard_shape, shard_sizes, shard_start
from .tensor import GlobalTensor, box

MAX_RANK = 64
#: A shard's header (:func:`_header`): rank, dtype, sparse dims, layout, the dims padded
#: to MAX_RANK, then the sbp's kind and axis.
HEADER_INTS = 4 + MAX_RANK + 2


# ---------------------------------------------------------------- to_global
def to_global(x, placement=None, sbp=None):
    """``x`` as a global tensor (a collective over the placement).

    A local ``x`` (dense or sparse COO) is this rank's physical shard: its slice
    under split (sizes must follow ``numpy.array_split``), a whole copy under
    broadcast, an addend under partial_sum.  A global ``x`` is re-boxed to ``sbp``.
    ``placement`` must be a :class:`Placement` (from ``dense.placement()``) or None.
    """
    if placement is not None and not isinstance(placement, comm.Placement):
        raise TypeError(f"to_global: placement must be a dense.placement(...) or None, "
                        f"got {placement!r} ({type(placement).__name__})")
    if getattr(x, "is_global", False):
        if placement is not None and placement != x.placement:
            raise ValueError(f"to_global: moving a tensor from {x.placement!r} to "
                             f"{placement!r} is not supported")
        if sbp is None:
            return x
        sbp = check_sbp(sbp, x.ndim, "to_global")
        _check_layout_sbp(x.meta, sbp)
        return box(x, sbp)
    placement = comm.placement() if placement is None else placement
    if not placement.is_member:
        raise ValueError(f"to_global: this rank is not in {placement!r}; only its ranks "
                         "may build tensors on it")
    meta = x.meta
    sbp, failure = _checked(meta, sbp)
    logical = _logical_meta(meta, sbp, placement, failure)
    out = layouts.record(TO_GLOBAL, [x], type(x)._from_kernel(x._data(), meta),
                         {"sbp": sbp, "placement": placement})
    return GlobalTensor(out, sbp, placement, logical)


def _check_layout_sbp(meta, sbp, op="to_global"):
    if meta.layout not in ("dense", "sparse_coo"):
        raise TypeError(f"{op}: a {meta.layout} tensor cannot be global (global tensors "
                        "are dense or sparse COO); use to_sparse_coo(), or convert this "
                        "rank's shard after to_local()")
    if meta.layout == "sparse_coo" and sbp.is_split and sbp.axis >= meta.sparse_dim:
        raise ValueError(f"to_global: a sparse COO tensor can be split only along a sparse "
                         f"dim (< {meta.sparse_dim}), got {sbp!r}")
    if sbp.kind == "P" and meta.dtype.kind == "b":
        raise TypeError("to_global: a bool tensor cannot be partial_sum")


def _checked(meta, sbp):
    """(sbp, None) with the sbp checked against this rank's shard, or (sbp, the error):
    kept, so that every rank raises it (:func:`_logical_meta`), not this one alone."""
    try:
        if sbp is None:
            raise TypeError("to_global: a local tensor needs an sbp (dense.sbp.split(axis), "
                            "dense.sbp.broadcast or dense.sbp.partial_sum)")
        sbp = check_sbp(sbp, meta.ndim, "to_global")
        _check_layout_sbp(meta, sbp)
        if meta.ndim > MAX_RANK:
            raise ValueError(f"to_global: rank {meta.ndim} is above {MAX_RANK}")
    except (TypeError, ValueError) as exc:
        return sbp, exc
    return sbp, None


def _header(meta, sbp):
    """This rank's shard and sbp as ints (the split dim masked: it may differ by rank)."""
    head = [meta.ndim, ALL.index(meta.dtype), -1 if meta.sparse_dim is None
            else meta.sparse_dim, ("dense", "sparse_coo").index(meta.layout)]
    shape = list(meta.shape)
    if sbp.is_split:
        shape[sbp.axis] = -2
    return head + shape + [-1] * (MAX_RANK - meta.ndim) + ["BPS".index(sbp.kind),
                                                           sbp.axis if sbp.is_split else -1]


def _logical_meta(meta, sbp, placement, failure=None):
    """The logical meta, after checking every rank's shard and sbp (a collective).

    O(1) data per rank: every rank's header (shard and sbp) and whether its own
    checks failed go through one max-reduction of it and its negation, so all
    ranks agree before anything depends on the sbp; then the sizes along a
    split axis are summed and checked.  Only a failure gathers or broadcasts
    more, to name it; every rank raises the same error.
    """
    group = placement.group
    head = [0] * HEADER_INTS if failure is not None else _header(meta, sbp)
    failed = group.rank if failure is not None else -1
    both = comm.allreduce_ints(group, head + [-v for v in head] + [failed], "max")
    if both[-1] >= 0:
        _raise_everywhere(group, int(both[-1]), failure)
    n = len(head)
    if (both[:n] != -both[n:2 * n]).any():
        _diagnose(meta, sbp, placement)
    if not sbp.is_split:
        return meta
    total = int(comm.allreduce_ints(group, [meta.shape[sbp.axis]], "sum")[0])
    bad = int(meta.shape[sbp.axis] != shard_sizes(total, placement.size)[placement.rank])
    if comm.allreduce_ints(group, [bad], "max")[0]:
        _diagnose(meta, sbp, placement)
    shape = list(meta.shape)
    shape[sbp.axis] = total
    return meta.with_(shape=tuple(shape))


def _raise_everywhere(group, rank, failure):
    """Raise, on every rank, the error that ``rank``'s own checks found."""
    if group.size == 1:
        raise failure
    kind, text = group.mpi.bcast((type(failure), str(failure)) if group.rank == rank
                                 else None, root=rank)
    raise kind(f"{text} (on rank {rank} of the placement)")


def _diagnose(meta, sbp, placement):
    """Raise the ValueError that names every rank's shard (the error path only)."""
    rows = comm.allgather_ints(placement.group, _header(meta, sbp))
    kinds = {tuple(r[:4]) for r in rows}
    if len(kinds) > 1:
        raise ValueError(f"to_global: ranks hold shards of different rank, dtype or "
                         f"layout: {[_describe(r) for r in rows]}")
    sbps = [_sbp_name(r[-2:]) for r in rows]
    if len(set(sbps)) > 1:
        raise ValueError(f"to_global: every rank must give the same sbp, got {sbps} "
                         "(rank by rank)")
    shapes = [tuple(int(s) for s in r[4:4 + meta.ndim]) for r in rows]
    if sbp.is_split:                       # the masked split dim: compare the real sizes
        sizes = comm.allgather_ints(placement.group, [meta.shape[sbp.axis]])
        shapes = [s[:sbp.axis] + (int(z[0]),) + s[sbp.axis + 1:] for s, z in zip(shapes, sizes)]
    held = [list(s) for s in shapes]
    if not sbp.is_split:
        raise ValueError(f"to_global: under {sbp!r} every rank must hold the whole "
                         f"shape, but the ranks hold {held}")
    ax = sbp.axis
    if len({s[:ax] + s[ax + 1:] for s in shapes}) > 1:
        raise ValueError(f"to_global: under {sbp!r} the ranks' shards must have the same "
                         f"dims off axis {ax}, but the ranks hold {held}")
    sizes = [s[ax] for s in shapes]
    raise ValueError(f"to_global: under {sbp!r} the ranks' shards {held} must have "
                     f"sizes {shard_sizes(sum(sizes), placement.size)} along axis {ax} "
                     f"(numpy.array_split of {sum(sizes)} over {placement.size} ranks), "
                     f"got {sizes}")


def _sbp_name(code):
    """The sbp a header's last two ints encode (:func:`_header`), as its repr."""
    kind = "BPS"[int(code[0])]
    return repr(Sbp(kind, int(code[1]) if kind == "S" else None))


def _describe(row):
    layout = ("dense", "sparse_coo")[int(row[3])]
    dims = f" with {int(row[2])} sparse dims" if int(row[2]) >= 0 else ""
    return f"{layout} {ALL[int(row[1])].name} of rank {int(row[0])}{dims}"


def _to_global_backward(node, out_grad):
    """A local leaf under broadcast gets the whole gradient: all-reduce its addends."""
    sbp, placement = node.attrs["sbp"], node.attrs["placement"]
    if sbp.kind != "B" or out_grad is None:       # None: no gradient (masked_matmul's mask)
        return {"x": out_grad}
    if out_grad.layout == "dense":
        return {"x": layouts.local_tensor(comm.allreduce_like(placement.group,
                                                              out_grad._data()), out_grad.meta)}
    return {"x": layouts.summed_by_position(out_grad, placement.group)}


TO_GLOBAL = OpSpec(name="to_global", namespace="dist", args=(Arg("x", "Tensor"),),
                   outputs=("out",), backward_fn=_to_global_backward, collective=True)


# ---------------------------------------------------------------- ops
def run(spec, ins, attrs):
    """Run ``spec`` with at least one global input; return global outputs.

    A ``Tensor[]`` argument is a list of global tensors (local ones taken as
    broadcast) on one placement; its signature entry is one sbp that each
    element is boxed to.
    """
    placement = _placement(spec, ins)
    ins = [_each(lambda t: t if getattr(t, "is_global", False)
                 else _as_broadcast(spec, a, t, placement), item)
           for a, item in zip(spec.tensor_args, ins)]
    metas = [_each(lambda t: t.meta, item) for item in ins]
    out_metas = dispatch.infer(spec, metas, attrs)
    for m in out_metas:
        _check_layout_sbp(m, broadcast, spec.name)
        _check_known_shape(m, spec.name)
    canonical = canonical_attrs(spec, metas, attrs)
    sig = choose(spec, ins, metas, canonical, out_metas)
    boxed = [_each(lambda t: box(t, s), item) for item, s in zip(ins, sig.ins)]
    local_attrs, extra = physical_attrs(spec, sig, boxed, metas, canonical, out_metas,
                                        placement, attrs)
    shards = [_each(lambda t: t._local, item) for item in boxed]
    failure = None
    try:
        if extra:
            result = _run_with_kernel_attrs(spec, shards, local_attrs, extra)
        else:
            result = dispatch.run(spec, shards, local_attrs)
    except Exception as exc:            # noqa: BLE001 (every rank raises it, below)
        failure = exc
    _agree_on_failure(spec, failure, boxed, sig, placement)
    results = result if isinstance(result, tuple) else (result,)
    outs = tuple(_wrap(spec, r, s, placement, m) for r, s, m in zip(results, sig.outs, out_metas))
    return outs[0] if len(outs) == 1 else outs


def _check_known_shape(meta, op):
    """TypeError for a result whose shape only the data knows (``values``: [nnz, ...]):
    a global tensor needs its logical shape on every rank before any work."""
    if any(d < 0 for d in meta.shape):
        raise TypeError(f"{op}: its result's shape {list(meta.shape)} depends on the data "
                        "(-1 is the number of stored entries), which a global tensor cannot "
                        "have; use g.to_local() for this rank's shard")


def _agree_on_failure(spec, failure, boxed, sig, placement):
    """Make an error on one rank's shard (a bad index value, a floating-point trap
    under ``np.seterr``) an error on every rank (a collective).

    Shape errors come from the logical metadata, so every rank raises them
    alike; a bad index *value* shows on the rank that holds it only.  One
    small all-reduce tells every rank the lowest failing rank and whether any
    rank succeeded.  Where every rank failed, each raises its own error as it
    is.  Otherwise all raise that rank's error (its class, or the nearest
    built-in one where it cannot be rebuilt here), with the global window its
    shards cover (a local position p along a split axis is global lo + p); on
    the failing ranks it is chained to their own error and its traceback.
    """
    bad, anyone_ok = failing_rank(placement.group, failure)
    if bad is None:
        return
    if not anyone_ok:
        raise failure
    kind, text = shared_error(placement.group, bad, failure)
    where = []
    for a, item, s in zip(spec.tensor_args, boxed, sig.ins):
        if s.is_split:
            n = rules.elements(item)[0].meta.shape[s.axis]    # a list's: one size
            lo = shard_start(n, placement.size, bad)
            hi = lo + shard_sizes(n, placement.size)[bad]
            what = "each of " if isinstance(item, list) else ""
            where.append(f"{what}'{a.name}' holds [{lo}, {hi}) of axis {s.axis}")
    shards = f" (its shard of {', '.join(where)})" if where else ""
    raise_shared(rebuilt(kind, f"{spec.name}: on rank {bad} of the placement{shards}: {text}"),
           failure)


def _as_broadcast(spec, arg, t, placement):
    """A local input mixed with global ones: taken as broadcast (the same on every rank)."""
    if t.layout not in ("dense", "sparse_coo"):
        raise TypeError(f"{spec.name}: the local argument '{arg.name}' is a {t.layout} "
                        f"tensor, which cannot meet global ones (global tensors are dense or "
                        f"sparse COO); convert it with to_sparse_coo() first")
    try:
        return to_global(t, placement, broadcast)
    except ValueError as err:
        raise ValueError(f"{spec.name}: the local argument '{arg.name}' is taken as "
                         f"broadcast, so every rank must pass the same shape: {err}") from None


def _each(fn, item):
    """``fn`` of one argument's tensor, or of each element of a ``Tensor[]`` list."""
    return [fn(t) for t in item] if isinstance(item, list) else fn(item)


def _placement(spec, ins):
    found = {t.placement for item in ins for t in rules.elements(item)
             if getattr(t, "is_global", False)}
    if len(found) > 1:
        raise ValueError(f"{spec.name}: global inputs are on different placements "
                         f"{sorted(map(repr, found))}")
    return found.pop()


def choose(spec, ins, metas, attrs, out_metas):
    """The candidate signature that needs the least boxing (first one on a tie)."""
    best, best_cost = None, None
    for sig in rules.candidates(spec, metas, attrs, out_metas, ins):
        c = sum(boxing.cost(t.sbp, s, _nbytes(t), t.layout != "dense")
                for item, s in zip(ins, sig.ins) for t in rules.elements(item))
        if best is None or c < best_cost:
            best, best_cost = sig, c
    return best


def _nbytes(t):
    """The logical bytes of a global input: the same on every rank, so every rank
    picks the same signature (a sparse tensor's count is its logical nnz, one
    collective the first time and cached, since tensors are immutable)."""
    m = t.meta
    if m.layout == "dense":
        return m.size * m.dtype.itemsize
    dense_part = 1
    for d in m.shape[m.sparse_dim:]:
        dense_part *= d
    return t.nnz() * (m.sparse_dim * 8 + dense_part * m.dtype.itemsize)


def physical_attrs(spec, sig, boxed, metas, attrs, out_metas, placement, given):
    """The attributes the local op gets, and its kernel-only attributes.

    The op's ``physical`` function (see :mod:`.rules`) sees the chosen
    signature's shards and the canonical ``attrs``, and returns a dict:
    entries naming a YAML attribute replace its value; the others are
    kernel-only attributes.  The attributes it leaves are the caller's
    (``given``): the local op resolves them again on the shards, and a
    resolved value need not resolve to itself (sparse reshape's shape [6, 0]
    from [6, -1] would copy x's dim 1 again).
    """
    table = spec.sbp
    if table is None or table.physical is None:
        return given, {}
    env = rules.environment(spec, metas, attrs, out_metas, rules.Shards)
    for a, t, s in zip(spec.tensor_args, boxed, sig.ins):      # no Tensor[] (codegen)
        setattr(env, a.name + "_local", t._local.meta)
        setattr(env, a.name + "_sbp", s)
        setattr(env, a.name + "_axis", s.axis)
        setattr(env, a.name + "_slice", _slice(t.meta.shape, s, placement))
    env.out_local = out_metas[0].with_(shape=shard_shape(out_metas[0].shape, sig.outs[0],
                                                         placement.size, placement.rank))
    extra = dict(table.physical(env))
    names = [a.name for a in spec.attr_args]
    local = [extra.pop(n) if n in extra else v for n, v in zip(names, given)]
    return local, extra


def _run_with_kernel_attrs(spec, shards, attrs, extra):
    """Run the op's registered kernel on the shards with kernel-only attributes.

    The recorded node's backward runs the backward op's registered kernel
    with the same kernel-only attributes (gather's offset and bound), so a
    shard's gradient sees the slice its forward saw.
    """
    metas = [t.meta for t in shards]
    out_meta = dispatch.infer(spec, metas, attrs)[0]
    attrs = canonical_attrs(spec, metas, attrs)
    data = _kernel(spec, metas)(*(t._data() for t in shards), *attrs, **extra)
    out = layouts.local_tensor(data, out_meta)
    if spec.backward is None or all(t.stop_gradient for t in shards):
        return out
    grad_spec = dispatch.get_op(spec.namespace, spec.backward)
    names = [a.name for a in spec.attr_args]
    values = dict(zip(names, attrs))

    def backward_fn(node, out_grad):
        if out_grad is None:
            return {}
        known = {**dict(zip((a.name for a in spec.tensor_args), node.inputs)), **values,
                 f"{spec.outputs[0]}_grad": out_grad}
        ins = [known[a.name] for a in grad_spec.tensor_args]
        metas = [t.meta for t in ins]
        grad_attrs = [known[a.name] for a in grad_spec.attr_args]
        grad_attrs = canonical_attrs(grad_spec, metas, grad_attrs)
        grad = _kernel(grad_spec, metas)(*(t._data() for t in ins), *grad_attrs, **extra)
        first = grad_spec.outputs[0].removesuffix("_grad")
        return {first: layouts.local_tensor(grad, known[first].meta)}

    node_spec = OpSpec(name=spec.name, namespace="dist", args=spec.tensor_args,
                       outputs=spec.outputs, backward_fn=backward_fn)
    return layouts.record(node_spec, shards, out, {})


def canonical_attrs(spec, metas, attrs):
    """``attrs`` with the infer-meta's canonical values in place, as dispatch hands
    them to kernels; the SBP rules and ``physical`` functions see these too."""
    result = spec.infer_meta(*metas, *attrs)
    if type(result) is not Canonical:
        return attrs
    return [result.attrs.get(a.name, v) for a, v in zip(spec.attr_args, attrs)]


def _kernel(spec, metas):
    """The registered kernel of ``spec`` for these input metas (its module loaded)."""
    importlib.import_module(spec.module)
    sig = dispatch.select_kernel_sig(spec, metas)
    by_name = dict(zip((a.name for a in spec.tensor_args), metas))
    lay = by_name.get(spec.layout_arg, metas[0])
    dt = by_name.get(spec.data_type_arg, metas[0])
    return registry.lookup(sig.func, lay.place, lay.layout, dt.dtype, op=spec.name)


def _slice(shape, sbp, placement):
    if not sbp.is_split:
        return None
    lo = shard_start(shape[sbp.axis], placement.size, placement.rank)
    return lo, lo + shard_sizes(shape[sbp.axis], placement.size)[placement.rank]


def _wrap(spec, local, sbp, placement, meta):
    want = shard_shape(meta.shape, sbp, placement.size, placement.rank)
    if tuple(local.meta.shape) != want:
        raise RuntimeError(f"{spec.name}: under {sbp!r} the local kernel made a shard of "
                           f"shape {list(local.meta.shape)}, expected {list(want)}; the "
                           "op's sbp rules or physical attributes are wrong")
    return GlobalTensor(local, sbp, placement, meta.with_(layout=local.layout))


__all__ = ["to_global", "run", "choose", "physical_attrs", "canonical_attrs"]
