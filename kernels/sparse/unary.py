"""Sparse value-wise ops: the elementwise family's unary table applied to stored values.

As in Paddle, a value-wise op acts on each stored entry and keeps the
indices (or crows and cols) entry for entry: implicit zeros stay zero even
where f(0) != 0, and f is applied to each duplicate separately.  Every entry
of :data:`kernels.funcs.elementwise.UNARY` is registered as kernels
``<name>_coo`` and ``<name>_csr`` (and ``_grad`` ones when it has a
derivative), one pass over the values, xp-generic for 'cpu' and 'gpu'.  The
YAML declares each op with ``family : unary`` in ``sparse_ops.yaml``.
"""
from ..core.dtypes import ALL
from ..core.registry import register_kernel
from ..core.xp import xp_of
from ..funcs.elementwise import UNARY
from ..funcs.sum_to_shape import grad_in_dtype

LAYOUTS = (("_coo", "sparse_coo"), ("_csr", "sparse_csr"))
BACKENDS = ("cpu", "gpu")


def _kernels(entry):
    def forward(x, *params):
        return x._replace(values=entry.fn(xp_of(x.values), x.values, *params))

    def backward(x, out, out_grad, *params):
        g = entry.grad(xp_of(out_grad.values), x.values, out.values, out_grad.values, *params)
        return x._replace(values=grad_in_dtype(g, x.values.dtype))
    return forward, backward


def _register():
    for entry in UNARY.values():
        for sfx, layout in LAYOUTS:
            forward, backward = _kernels(entry)
            forward.__name__ = entry.name + sfx
            forward.__doc__ = f"{entry.name} of each stored value (kernels.funcs.elementwise)."
            register_kernel(entry.name + sfx, layout, BACKENDS, ALL)(forward)
            if entry.grad is not None:
                backward.__name__ = entry.name + sfx + "_grad"
                backward.__doc__ = f"Gradient of value-wise {entry.name}, on x's pattern."
                register_kernel(entry.name + sfx + "_grad", layout, BACKENDS, ALL)(backward)


_register()
