"""An opt-in check of every kernel's output against its op's infer-meta, for extenders.

With ``PHISPARSE_CHECK_KERNELS=1`` in the environment (read at import), each
kernel dispatch binds is wrapped so that its outputs are compared with the
output metadata the shape rule gave: a dense output must be an array of that
shape and dtype; a COO one a ``CooData`` whose values have that dtype, one
row per entry of its index matrix and the dense dims of that shape; a CSR one a
``CsrData`` of that shape whose row pointers end at its number of values.  A
mismatch is a TypeError naming the op and the kernel, where without the check
it makes a tensor whose metadata and data disagree.  Off (the default), the
dispatcher runs the kernels as they are and pays nothing.
"""
import functools
import numbers
import os

import numpy as np

ENABLED = os.environ.get("PHISPARSE_CHECK_KERNELS", "").strip().lower() not in (
    "", "0", "false", "no", "off")


def checked(spec, kernel, out_metas):
    """``kernel`` wrapped to check its outputs against ``out_metas`` (see the module)."""
    @functools.wraps(kernel)
    def run(*args, **kwargs):
        result = kernel(*args, **kwargs)
        results = result if len(out_metas) > 1 else (result,)
        for r, m in zip(results, out_metas):
            if r is None:                       # an output grad_mask did not ask for
                continue
            for part, meta in (zip(r, m) if isinstance(m, list) else ((r, m),)):
                if part is not None:                # a gradient grad_mask did not ask for
                    _check(spec, kernel, part, meta)
        return result
    return run


def _check(spec, kernel, out, meta):
    why = _dense(out, meta) if meta.layout == "dense" else _sparse(out, meta)
    if why:
        name = getattr(kernel, "__qualname__", repr(kernel))
        raise TypeError(f"{spec.name}: kernel {name} returned {why} (its infer-meta says "
                        f"{meta.layout} of shape {list(meta.shape)} and dtype "
                        f"{meta.dtype.name}; PHISPARSE_CHECK_KERNELS is on)")


def _same_shape(got, want):
    return len(got) == len(want) and all(w < 0 or g == w for g, w in zip(got, want))


def _dense(out, meta):
    if isinstance(out, numbers.Number):         # a scalar result is made a 0-d array
        out = np.asarray(out)
    if not hasattr(out, "shape") or not hasattr(out, "dtype"):
        return f"a {type(out).__name__}, not an array"
    if out.dtype != meta.dtype or not _same_shape(tuple(out.shape), meta.shape):
        return f"an array of shape {list(out.shape)} and dtype {out.dtype}"
    return None


def _sparse(out, meta):
    fields = getattr(out, "_fields", ())
    want = ("indices", "values") if meta.layout == "sparse_coo" else ("crows", "cols", "values")
    if not all(f in fields for f in want):
        return f"a {type(out).__name__}, not the {meta.layout} buffers ({', '.join(want)})"
    values = out.values
    if values.dtype != meta.dtype or not _same_shape(tuple(out.shape), meta.shape):
        return (f"{meta.layout} buffers of shape {list(out.shape)} with values of dtype "
                f"{values.dtype}")
    if meta.layout == "sparse_coo":
        sd = out.indices.shape[0]
        if meta.sparse_dim is not None and sd != meta.sparse_dim:
            return f"an index matrix of {sd} rows for sparse_dim {meta.sparse_dim}"
        if out.indices.shape[1] != values.shape[0] or \
                tuple(values.shape[1:]) != tuple(out.shape[sd:]):
            return (f"an index matrix of shape {list(out.indices.shape)} with values of "
                    f"shape {list(values.shape)}")
        return None
    batch = out.shape[0] if len(out.shape) == 3 else 1
    if out.crows.shape[0] != batch * (out.shape[-2] + 1):
        return f"{out.crows.shape[0]} row pointers for shape {list(out.shape)}"
    ends = out.crows.reshape(batch, -1)[:, -1]
    if out.cols.shape[0] != values.shape[0] or int(ends.sum()) != values.shape[0]:
        return (f"CSR buffers with {out.cols.shape[0]} cols, {values.shape[0]} values and "
                f"row pointers ending at {int(ends.sum())} entries")
    return None
