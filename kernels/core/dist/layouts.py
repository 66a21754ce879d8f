"""Shard data per layout (a dense array or COO indices/values) and recorded boxing.

Boxing a global tensor records a grad node on its local shard when that shard
needs a gradient; the node's backward boxes the physical gradient the other
way, between the dual sbps (the adjoint of each collective).  A sparse
gradient comes back with another pattern (its nonzeros moved between ranks),
so a sparse shard takes its value at each of the shard's own entries.
"""
from .. import autograd
from ..opspec import Arg, OpSpec
from ..tensor import layout_class
from . import boxing
from .sbp import shard_shape


def local_tensor(data, meta):
    """A local tensor of ``meta``'s layout holding ``data``."""
    return layout_class(meta.layout)._from_kernel(data, meta)


def box_local(t, shape, src, dst, placement):
    """The local tensor ``t`` (a shard of logical ``shape``) boxed ``src`` -> ``dst``."""
    group = placement.group
    if src == dst:
        return t
    if t.layout == "dense":
        return local_tensor(boxing.box_dense(t._data(), shape, src, dst, group), t.meta)
    indices, values = coo_parts(t)
    indices, values = boxing.box_coo(indices, values, shape, src, dst, group)
    local_shape = _shard_shape(shape, dst, placement)
    local_step = dst.kind == "P" or (src.kind, dst.kind) == ("B", "S")
    kept = local_step and src.kind != "P"            # local steps keep the C order
    return coo_make(indices, values, local_shape, t, kept and t._data().coalesced)


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
    out._grad_fn, out._out_index, out._stop_gradient = node, 0, False
    return out


def _box_backward(node, out_grad):
    """Box the gradient back between the dual sbps; a sparse input takes the
    boxed gradient's value at each of its own entries (duplicates summed)."""
    a, x = node.attrs, node.inputs[0]
    if out_grad.layout != "dense":
        out_grad = _one_per_coordinate(out_grad)
    back = box_local(out_grad, a["shape"], a["dst"].dual(), a["src"].dual(), a["placement"])
    return {"x": x._root_grad(back)}     # a sparse x: the value at each of its entries


def _one_per_coordinate(g):
    """A sparse gradient with one entry per coordinate.

    A sparse tensor's gradient holds, at each entry, the gradient at the
    entry's coordinate, so duplicate entries carry the same value; boxing
    sums duplicates (that is how COO adds partial sums), so each coordinate
    must travel once.
    """
    from ...sparse.convert import coalesce_parts
    data = g._data()
    perm, starts, _ = coalesce_parts(data, "backward")
    if perm is None:
        return g
    keep = perm[starts]
    return coo_make(data.indices[:, keep], data.values[keep], data.shape, g, True)


BOXING = OpSpec(name="boxing", namespace="dist", args=(Arg("x", "Tensor"),),
                outputs=("out",), backward_fn=_box_backward)
