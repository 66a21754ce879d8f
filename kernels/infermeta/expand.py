"""Shape rules of expand and repeat (OneFlow/PyTorch semantics), and the
shape helpers repeat's backward ``invoke`` calls."""
from ..core.meta import Canonical
from ..funcs.shape import check_numel
from ..core.size import check_output_size


def resolve_expand(in_shape, shape, op="expand"):
    """The output shape of expanding ``in_shape`` to ``shape``.

    ``shape`` has at least ``len(in_shape)`` entries; the extra ones are new
    leading dims.  -1 keeps an existing dim; a size-1 dim may grow to any
    size (0 included); any other dim must equal its target.

    Parameters
    ----------
    in_shape : sequence of int
        The input's shape.
    shape : sequence of int
        The target sizes (``expand_size`` in OneFlow's expand/repeat article).
    op : str
        The op name for error messages.

    Returns
    -------
    tuple of int

    Raises
    ------
    ValueError
        Naming the dim, the target size and the existing size of every
        violation: too few dims, -1 on a new dim, a negative size other than
        -1, or a change of a dim whose size is not 1.

    Examples
    --------
    >>> resolve_expand((4, 1, 3, 5), [2, 1, -1, 4, 3, -1])
    (2, 1, 4, 4, 3, 5)
    >>> resolve_expand((), [2, 2])
    (2, 2)
    """
    shape, in_shape = [int(s) for s in shape], [int(s) for s in in_shape]
    new = len(shape) - len(in_shape)
    if new >= 0 and min(shape, default=0) >= 0 and all(
            e == 1 or e == t for e, t in zip(in_shape, shape[new:])):
        check_numel(shape, op)       # no -1 to keep and nothing to reject
        return tuple(shape)
    if new < 0:
        raise ValueError(f"{op}: shape {shape} has {len(shape)} dims, fewer than the "
                         f"{len(in_shape)} dims of x (shape {in_shape}); give a size, "
                         "or -1, for every dim of x")
    out = [_expanded_dim(op, shape, i, in_shape[i - new] if i >= new else None)
           for i in range(len(shape))]
    check_numel(out, op)
    return tuple(out)


def _expanded_dim(op, shape, i, existing):
    target = shape[i]
    if existing is None:
        if target < 0:
            raise ValueError(f"{op}: shape {shape}: dim {i} is a new leading dim, so its "
                             f"target size {target} must be >= 0 (it has no existing size "
                             "for -1 to keep)")
        return target
    if target == -1 or target == existing:
        return existing
    if target < 0:
        raise ValueError(f"{op}: shape {shape}: dim {i} has the negative target size "
                         f"{target} (existing size {existing}); only -1 (keep) is allowed")
    if existing != 1:
        raise ValueError(f"{op}: shape {shape}: dim {i} has target size {target} but "
                         f"existing size {existing}; only a dim of size 1 can be expanded")
    return target


def expand_infer_meta(x, shape):
    """Output meta of expand (x's dtype, layout and place with the expanded shape),
    and that shape, -1 resolved, as the kernel's canonical ``shape``."""
    out = resolve_expand(x.shape, shape)
    return Canonical(check_output_size("expand", x.with_(shape=out)), {"shape": out})


def resolve_repeat(in_shape, repeats, op="repeat"):
    """The output shape of tiling ``in_shape`` ``repeats`` times per dim.

    Parameters
    ----------
    in_shape : sequence of int
    repeats : sequence of int
        At least ``len(in_shape)`` counts >= 0; extra ones are new leading dims.
    op : str

    Returns
    -------
    tuple of int
        ``repeats[i] * in_shape[i - d]`` on x's dims, ``repeats[i]`` on the
        ``d`` new ones.

    Examples
    --------
    >>> resolve_repeat((4, 1, 3, 5), [2, 1, 2, 4, 1, 1])
    (2, 1, 8, 4, 3, 5)
    >>> resolve_repeat((3,), [0])
    (0,)
    """
    repeats, in_shape = [int(r) for r in repeats], [int(s) for s in in_shape]
    new = len(repeats) - len(in_shape)
    if new < 0:
        raise ValueError(f"{op}: repeats {repeats} has {len(repeats)} entries, fewer than "
                         f"the {len(in_shape)} dims of x (shape {in_shape})")
    for i, r in enumerate(repeats):
        if r < 0:
            raise ValueError(f"{op}: repeats {repeats}: dim {i} has the negative count {r}; "
                             "counts must be >= 0")
    out = tuple(r * s for r, s in zip(repeats, [1] * new + in_shape))
    check_numel(out, op)
    return out


def repeat_infer_meta(x, repeats):
    """Output meta of repeat: x's dtype, layout and place with the tiled shape."""
    return check_output_size("repeat", x.with_(shape=resolve_repeat(x.shape, repeats)))
