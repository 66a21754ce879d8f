"""Shard data per layout (a dense array or COO indices/values) and recorded boxing.

Boxing a global tensor records a grad node on its local shard when that shard
needs a gradient; the node's backward boxes the physical gradient the other
way, between the dual sbps (the adjoint of each collective).  A sparse
gradient is positional (one value per stored entry, duplicates included), so
a COO shard's backward is the adjoint of the boxing's entry map instead: each
output entry's gradient goes back to the input entry it came from, summed
over the ranks that held a copy (see :func:`.boxing.coo_adjoint`).
"""
from ...sparse.convert import coalesced_with_group
from .. import autograd
from ..opspec import Arg, OpSpec
from ..tensor import layout_class, set_attribute
from ..xp import xp_of
from . import boxing, comm
from .sbp import shard_shape


def local_tensor(data, meta):
    """A local tensor of ``meta``'s layout holding ``data``."""
    return layout_class(meta.layout)._from_kernel(data, meta)


def box_local(t, shape, src, dst, placement):
    """The local tensor ``t`` (a shard of logical ``shape``) boxed ``src`` -> ``dst``,
    and for COO the steps of its entry map (:func:`.boxing.coo_adjoint`; dense: ())."""
    group = placement.group
    if src == dst:
        return t, ()
    if t.layout == "dense":
        out = local_tensor(boxing.box_dense(t._data(), shape, src, dst, group), t.meta), ()
    else:
        indices, values = coo_parts(t)
        indices, values, steps = boxing.box_coo(indices, values, shape, src, dst, group)
        local_shape = _shard_shape(shape, dst, placement)
        local_step = dst.kind == "P" or (src.kind, dst.kind) == ("B", "S")
        kept = local_step and src.kind != "P"            # local steps keep the C order
        out = coo_make(indices, values, local_shape, t, kept and t._data().coalesced)
        if src.kind == "P" and dst.kind != "P" and _every_shard_unique(t, group):
            out, merge = _merged(out)
            steps += (("merge", merge),)
        out = out, steps
    zero = (src.kind == "B" and dst.kind == "P" and group.size > 1 and group.rank != 0) or \
        (autograd.is_zero_addend(t) and _is_local(src, dst))
    if zero:                             # all zeros on this rank: see autograd.ZERO_ADDEND
        autograd.mark_zero_addend(out[0])
    return out


def _every_shard_unique(t, group):
    """True if the COO shard ``t`` is known to store each coordinate once (coalesced, or
    an op's result such as a matmul's: ``CooData.unique``) on every rank of ``group`` (of
    two or more ranks; every rank must call it)."""
    if group.size == 1:
        return False
    d = t._data()
    return bool(comm.allreduce_ints(group, [int(bool(d.coalesced or d.unique))], "min")[0])


def _merged(t):
    """Local COO ``t`` with the entries that share a coordinate summed, sorted (coalesced),
    and each input entry's position in it (None: nothing moved).

    Boxing a partial_sum tensor to broadcast or split brings the ranks' entries
    together.  Where every rank's shard is known to store each coordinate once
    (coalesced: what sum, add, subtract, multiply and divide give on their
    partial_sum rules; or unsorted, as matmul and transpose give), the tensor is
    made coalesced, its addends of one coordinate summed, as one process stores
    that op's result: a value-wise op after it then sees each coordinate once (the
    square of a sum, not a sum of squares).  Other shards (a tensor's entries dealt
    out to the ranks) keep every entry, duplicates included: gradients stay
    positional."""
    data, group = coalesced_with_group(t._data(), "boxing")
    return coo_make(data.indices, data.values, data.shape, t, True), group


def _is_local(src, dst):
    """True if boxing ``src`` -> ``dst`` runs no collective (a slice, or zeros around a
    shard): it maps a zero addend to zeros."""
    return src.kind == "B" or (src.is_split and dst.kind == "P")


def _shard_shape(shape, sbp, placement):
    return shard_shape(shape, sbp, placement.size, placement.rank)


def coo_parts(t):
    """(indices, values) arrays of a local COO tensor."""
    data = t._data()
    return data.indices, data.values


def coo_make(indices, values, shape, like, coalesced=False):
    """A local COO tensor like ``like`` with new indices, values and shape."""
    data = type(like._data())(indices, values, tuple(shape), coalesced)
    return local_tensor(data, like.meta.with_(shape=tuple(shape)))


# ---------------------------------------------------------------- autograd
def record(spec, inputs, out, attrs):
    """Make ``out`` (a fresh local tensor) the output of a grad node over ``inputs``."""
    if all(t.stop_gradient for t in inputs) or not autograd.grad_enabled():
        return out
    node = autograd.GradNode(spec, tuple(inputs), {}, attrs)
    set_attribute(out, "_grad_fn", node)          # tensors refuse plain assignment
    set_attribute(out, "_out_index", 0)
    set_attribute(out, "_stop_gradient", False)
    return out


def _box_backward(node, out_grad):
    """A dense gradient boxes back between the dual sbps (a sparse x then takes
    its value at each of its entries); a sparse one goes back entry for entry
    through the adjoint of the forward's entry map."""
    a, x = node.attrs, node.inputs[0]
    if out_grad is None:                   # every rank alike: the graph decides it
        return {"x": None}
    if out_grad.layout == "dense":
        back = _dense_back(out_grad, a["shape"], a["src"], a["dst"], a["placement"])
        g = x._root_grad(back)               # a sparse x: the value at each of its entries
        if autograd.is_zero_addend(back) and g is not back:
            autograd.mark_zero_addend(g)
        return {"x": g}
    values = out_grad._data().values
    group = a["placement"].group
    got = boxing.coo_adjoint(values, a["steps"], group)
    got = x._with_values(got.astype(x._data().values.dtype, copy=False))
    if a["src"].kind == "B" and group.size > 1:
        return {"x": _broadcast_addend(got, a["dst"].kind == "S", group)}
    return {"x": got}


def summed_by_position(g, group):
    """Sparse ``g`` whose every rank holds the same entries in the same order (a broadcast
    leaf's gradient addends), with the ranks' values summed position by position: one
    entry per entry, as one process stores it."""
    return g._with_values(comm.allreduce_like(group, g._data().values))


def _broadcast_addend(g, sliced, group):
    """A broadcast COO x's gradient as partial_sum addends: rank 0 holds it whole, the
    other ranks marked zeros (see :func:`_dense_back`).  Boxing to split gave each rank
    the gradient of the entries in its slice and zeros elsewhere, so the ranks' sum is
    the whole gradient; to anything else rank 0 kept every entry already."""
    values = g._data().values
    if sliced:
        values = comm.allreduce_like(group, values)
    if group.rank == 0:
        return g._with_values(values)
    return autograd.mark_zero_addend(g._with_values(xp_of(values).zeros_like(values)))


def _dense_back(g, shape, src, dst, placement):
    """A boxing step's dense gradient ``g``, boxed from the dual of ``dst`` back to the dual
    of ``src``.  A broadcast tensor sliced to split gathers its gradient whole first, so
    that its partial_sum addends are rank 0's whole gradient and marked zeros
    (:func:`box_local`): addends zero only off each rank's slice would meet an infinite
    derivative downstream (sqrt at 0) as 0 * inf = nan, where one process gives inf."""
    if src.kind == "B" and dst.is_split:
        g, _ = box_local(g, shape, dst.dual(), src, placement)
        return box_local(g, shape, src, src.dual(), placement)[0]
    return box_local(g, shape, dst.dual(), src.dual(), placement)[0]


BOXING = OpSpec(name="boxing", namespace="dist", args=(Arg("x", "Tensor"),),
                outputs=("out",), backward_fn=_box_backward, collective=True)
