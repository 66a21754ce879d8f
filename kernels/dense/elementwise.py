"""Dense kernels of the elementwise family: one forward and one backward per table entry.

Each entry of :data:`kernels.funcs.elementwise.UNARY` and ``BINARY`` is
registered as kernel ``<name>`` (and ``<name>_grad`` when differentiable),
xp-generic for 'gpu' and the backward; the CPU forward is numpy's ufunc or the
entry's function with numpy bound, so dispatch calls it with no Python layer
of ours in between.  A binary backward sums the broadcast
gradient back to each input's shape in one place, :func:`sum_to_shape`, and
computes only the gradients its ``grad_mask`` asks for (``optional_grads``).
"""

import functools

import numpy as np

from ..core.dtypes import ALL, BOOL, INTS
from ..core.registry import register_kernel
from ..core.xp import xp_of
from ..funcs.elementwise import BINARY, BOTH, UNARY, check_int_power
from ..funcs.sum_to_shape import grad_in_dtype, sum_to_shape

BACKENDS = ("cpu", "gpu")


def _as_grad(g, x):
    """g summed to x's shape, in x's dtype (the real part for a real x)."""
    return grad_in_dtype(sum_to_shape(xp_of(g).asarray(g), x.shape), x.dtype)


def _unary_kernels(entry):
    def forward(x, *params):
        return entry.fn(xp_of(x), x, *params)

    def backward(x, out, out_grad, *params):
        return _as_grad(entry.grad(xp_of(out_grad), x, out, out_grad, *params), x)
    return forward, backward


def _binary_kernels(entry):
    def forward(x, y):
        return entry.fn(xp_of(x), x, y)

    def backward(x, y, out, out_grad, grad_mask=BOTH):
        """Only the gradients ``grad_mask`` asks for: an unneeded one is neither
        computed nor summed to its input's shape."""
        gx, gy = entry.grad(xp_of(out_grad), x, y, out, out_grad, grad_mask)
        return (None if gx is None else _as_grad(gx, x),
                None if gy is None else _as_grad(gy, y))
    return forward, backward


def _cpu_forward(entry):
    """The CPU forward of an entry with no Python layer of its own: the numpy callable of
    its function's ``cpu`` attribute where it has one (numpy's ufunc itself for a
    plain-ufunc entry), else the entry's function with numpy bound."""
    cpu = getattr(entry.fn, "cpu", None)
    if cpu is not None:
        return cpu
    fn = functools.partial(entry.fn, np)
    fn.__module__, fn.__doc__ = __name__, f"Elementwise {entry.name} on numpy."
    return fn


def _register(table, make):
    """Register each entry's kernels: the GPU forward finds its namespace from its input,
    the CPU forward is :func:`_cpu_forward`'s (dispatch calls it straight)."""
    for entry in table.values():
        forward, backward = make(entry)
        forward.__name__, backward.__name__ = entry.name, entry.name + "_grad"
        forward.__doc__ = f"Elementwise {entry.name} (kernels.funcs.elementwise)."
        register_kernel(entry.name, backends=("cpu",), dtypes=ALL)(_cpu_forward(entry))
        register_kernel(entry.name, backends=("gpu",), dtypes=ALL)(forward)
        if entry.grad is not None:
            backward.__doc__ = f"Gradient of {entry.name} (kernels.funcs.elementwise)."
            register_kernel(entry.name + "_grad", backends=BACKENDS, dtypes=ALL)(backward)


# dense.pow is the binary op; the unary pow(x, factor) of the table is sparse-only
# (its kernels are pow_coo / pow_csr), so it is not registered here under the same name.
_register({k: v for k, v in UNARY.items() if k not in BINARY}, _unary_kernels)
_register(BINARY, _binary_kernels)


@register_kernel("pow", backends=BACKENDS, dtypes=BOOL + INTS, override=True)
def int_pow(x, y):
    """numpy's power for an integer or bool base, after a check that names the op where numpy's
    ValueError does not: integers to negative integer powers are not allowed."""
    check_int_power(x, y)
    return xp_of(x).power(x, y)
