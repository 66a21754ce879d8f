"""Closed-form gradients shared by the array-library peers (numpy, cupy)."""


def sum_to_shape(g, shape):
    """Sum ``g`` over the leading and broadcast dims so it has ``shape``."""
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(shape)
                                      if n == 1 and g.shape[lead + i] != 1)
    return g.sum(axis=axes).reshape(shape)


def tile_grad(g, shape, repeats):
    """The gradient of ``tile(x, repeats)`` for ``len(repeats) == x.ndim``."""
    split = [d for r, n in zip(repeats, shape) for d in (r, n)]
    return g.reshape(split).sum(axis=tuple(range(0, 2 * len(shape), 2)))


def split_axis(shape, axis):
    """(outer, n, inner) sizes around ``axis``."""
    outer = 1
    for n in shape[:axis]:
        outer *= n
    inner = 1
    for n in shape[axis + 1:]:
        inner *= n
    return outer, shape[axis], inner
