"""Shape rules of sparse ops: layout conversions and sparse reshape."""
import functools

from ..core.meta import Canonical
from ..funcs.shape import prod
from .reshape import resolve_reshape
from ..core.size import check_output_size

ORDERS = ("C", "F")


def check_csr_rank(op, what, shape):
    """Raise ValueError unless ``shape`` is 2-D or 3-D, the ranks CSR supports."""
    if len(shape) not in (2, 3):
        raise ValueError(f"{op}: {what} {list(shape)} has rank {len(shape)}; a CSR tensor "
                         "is 2-D [rows, cols] or batched 3-D [batch, rows, cols]")


@functools.lru_cache(maxsize=512)
def _sparse_dim_of(shape, sparse_dim, new_shape):
    k = len(shape) - sparse_dim
    lead = len(new_shape) - k
    kept = (lead >= 1 and new_shape[lead:] == shape[sparse_dim:]
            and prod(new_shape[:lead]) == prod(shape[:sparse_dim]))
    return lead if kept else len(new_shape)


def coo_reshape_sparse_dim(shape, sparse_dim, new_shape):
    """sparse_dim of a COO tensor of ``shape`` reshaped to ``new_shape``.

    The dense dims are kept when ``new_shape`` ends with them and the sparse
    dims before them hold as many elements as x's; otherwise they are folded
    into the sparse dims and the result has no dense dims.

    Examples
    --------
    >>> coo_reshape_sparse_dim((4, 6, 5), 2, (24, 5))
    1
    >>> coo_reshape_sparse_dim((4, 6, 5), 2, (12, 10))
    2
    """
    return _sparse_dim_of(tuple(shape), int(sparse_dim), tuple(new_shape))


def sparse_reshape_infer_meta(x, shape, order="C"):
    """Output meta of sparse reshape (dense reshape's rule plus order and layout checks),
    and the resolved shape as the kernel's canonical ``shape``."""
    if order not in ORDERS:
        raise ValueError(f"reshape: order {order!r} is not one of {list(ORDERS)}")
    new = resolve_reshape(x.shape, shape)
    if not new:
        raise ValueError(f"reshape: shape {list(shape)} gives a 0-d result, but a sparse "
                         "tensor needs at least one sparse dim")
    if x.layout == "sparse_csr":
        check_csr_rank("reshape", "the new shape", new)
    sparse_dim = (coo_reshape_sparse_dim(x.shape, x.sparse_dim, new)
                  if x.layout == "sparse_coo" else x.sparse_dim)
    return Canonical(x.with_(shape=new, sparse_dim=sparse_dim), {"shape": new})


def to_dense_infer_meta(x):
    """A dense tensor of x's shape and dtype."""
    return check_output_size("to_dense", x.with_(layout="dense", sparse_dim=None))


def to_sparse_coo_infer_meta(x, sparse_dim):
    """A COO tensor of x's shape with ``sparse_dim`` sparse dims.

    A dense x takes any sparse_dim in [1, ndim], a CSR x only its rank, and a
    COO x one at least its own (its leading dense dims are folded).
    """
    low = {"dense": 1, "sparse_csr": x.ndim}.get(x.layout, x.sparse_dim)
    if x.ndim == 0:
        raise ValueError("to_sparse_coo: a 0-d tensor has no dim to index; a sparse COO "
                         "tensor has at least one sparse dim (reshape x to [1] first)")
    if not low <= sparse_dim <= x.ndim:
        raise ValueError(f"to_sparse_coo: sparse_dim {sparse_dim} is out of range for a "
                         f"{x.layout} tensor of shape {list(x.shape)}; expected a value in "
                         f"[{low}, {x.ndim}]")
    return x.with_(layout="sparse_coo", sparse_dim=sparse_dim)


def to_sparse_csr_infer_meta(x):
    """A CSR tensor of x's shape, which must be 2-D or 3-D."""
    check_csr_rank("to_sparse_csr", "x's shape", x.shape)
    return x.with_(layout="sparse_csr", sparse_dim=None)
