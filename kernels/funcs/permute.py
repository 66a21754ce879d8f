"""Axis permutations (transpose's ``perm``), resolved once for every layout."""
import operator

from .shape import normalize_axis


def resolve_perm(perm, ndim, op="transpose"):
    """``perm`` as a tuple of axes in [0, ndim), checked to be a permutation.

    Negative axes count from the end, as in Paddle's transpose.

    Raises
    ------
    ValueError
        ``perm`` has a length other than ``ndim``, an axis out of range, or
        a repeated axis.

    Examples
    --------
    >>> resolve_perm([-1, 0, 1], 3)
    (2, 0, 1)
    """
    try:
        axes = [operator.index(p) for p in perm]
    except TypeError:
        raise TypeError(f"{op}: perm must be a list of ints, got {list(perm)!r}") from None
    if len(axes) != ndim:
        raise ValueError(f"{op}: perm {axes} has {len(axes)} entries, but x has rank "
                         f"{ndim}; expected a permutation of range({ndim})")
    norm = tuple(normalize_axis(p, ndim, op, "perm") for p in axes)
    if len(set(norm)) != ndim:
        raise ValueError(f"{op}: perm {axes} repeats an axis; expected a permutation of "
                         f"range({ndim})")
    return norm


def moved_axis(perm, i):
    """Where input axis ``i`` lands: the output axis ``j`` with ``perm[j] == i``.

    Output axis ``j`` holds input axis ``perm[j]``, so a split along input
    axis ``i`` becomes a split along this ``j`` (OneFlow's transpose SBP).

    Examples
    --------
    >>> moved_axis((2, 0, 1), 0)
    1
    >>> moved_axis((-1, 0, 1), 2)
    0
    """
    n = len(perm)
    return [p % n for p in perm].index(i)
