"""Dense where(condition, x, y) with backward: each branch's gradient where it was chosen."""
from ..core.dtypes import ALL
from ..core.registry import register_kernel
from ..core.xp import xp_of
from .elementwise import _as_grad

BACKENDS = ("cpu", "gpu")


@register_kernel("where", backends=BACKENDS, dtypes=ALL)
def where(condition, x, y):
    """numpy.where: x where condition holds, else y, broadcast together."""
    return xp_of(x).where(condition, x, y)


@register_kernel("where_grad", backends=BACKENDS, dtypes=ALL)
def where_grad(condition, x, y, out_grad, grad_mask=(True, True)):
    """out_grad where condition holds to x, elsewhere to y, each summed to its shape
    (only those ``grad_mask`` asks for: ``where(c, x, 0.0)`` pays for x's alone)."""
    xp = xp_of(out_grad)
    zero = xp.zeros((), out_grad.dtype)
    return (_as_grad(xp.where(condition, out_grad, zero), x) if grad_mask[0] else None,
            _as_grad(xp.where(condition, zero, out_grad), y) if grad_mask[1] else None)
