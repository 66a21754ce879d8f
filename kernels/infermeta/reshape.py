"""reshape's shape rule (Paddle's ValidateShape), shared by dense and sparse reshape."""
from ..core.meta import Canonical
from ..funcs.shape import INT64_LIMIT, check_numel, prod
from ..core.size import check_output_size


def resolve_reshape(in_shape, shape, op="reshape"):
    """Resolve Paddle's 0 (copy x's dim) and -1 (infer) in ``shape``.

    Parameters
    ----------
    in_shape : sequence of int
        The input's shape.
    shape : sequence of int
        The requested shape.
    op : str
        The op name for error messages.

    Returns
    -------
    tuple of int
        The output shape.

    Examples
    --------
    >>> resolve_reshape((2, 4, 6), [-1, 0, 3, 2])
    (2, 4, 3, 2)
    >>> resolve_reshape((0, 3), [3, -1])
    (3, 0)
    """
    size = prod(in_shape)
    if min(shape, default=1) > 0 and prod(shape) == size < INT64_LIMIT:
        return tuple(shape)          # no 0 to copy, no -1 to infer: nothing to resolve
    shape = list(shape)
    unknown = [i for i, s in enumerate(shape) if s == -1]
    if len(unknown) > 1:
        raise ValueError(f"{op}: shape {shape} has more than one -1; at most one "
                         "dimension can be inferred")
    out = []
    for i, s in enumerate(shape):
        if s < -1:
            raise ValueError(f"{op}: shape {shape} has the negative value {s} at index {i}; "
                             "only -1 (infer) is allowed")
        if s == 0:
            if i >= len(in_shape):
                raise ValueError(f"{op}: shape {shape} has 0 at index {i}, but x has rank "
                                 f"{len(in_shape)}; 0 copies x's dim, so its index must be "
                                 f"below {len(in_shape)}")
            s = in_shape[i]
        out.append(s)
    if unknown:
        known = prod(s for s in out if s != -1)
        if known == 0:
            raise ValueError(f"{op}: shape {shape} is ambiguous for x of shape "
                             f"{list(in_shape)}: the dims other than -1 multiply to 0")
        if size % known:
            raise ValueError(f"{op}: cannot reshape x of shape {list(in_shape)} ({size} "
                             f"elements) to {shape}: {size} is not divisible by {known}")
        out[unknown[0]] = size // known
    check_numel(out, op)
    if prod(out) != size:
        raise ValueError(f"{op}: cannot reshape x of shape {list(in_shape)} ({size} "
                         f"elements) to {shape} ({prod(out)} elements)")
    return tuple(out)


def reshape_infer_meta(x, shape):
    """Output meta of reshape (x's dtype, layout and place with the resolved shape),
    and that shape as the kernel's canonical ``shape``."""
    new = resolve_reshape(x.shape, shape)
    return Canonical(check_output_size("reshape", x.with_(shape=new)),
                     {"shape": _as_given_again(shape, new)})


def _as_given_again(shape, new):
    """``new``, with a -1 left where it resolved to 0: a literal 0 there would copy
    x's dim when the shape is resolved again (a global tensor's shards are)."""
    return tuple(-1 if s == -1 and n == 0 else n for s, n in zip(shape, new))
