"""The generated dense API functions and their OpSpecs, found on first use.

The generated API imports :mod:`dense.tensor`, so the tensor's methods and
``__getitem__`` look its functions up when first called, once each.
"""
import functools

from kernels.core import dispatch


@functools.lru_cache(maxsize=None)
def api_op(name):
    """The generated API function ``name``."""
    from . import _generated_api as api
    return getattr(api, name)


@functools.lru_cache(maxsize=None)
def op_spec(name):
    """The OpSpec of dense op ``name``, for callers that run it through dispatch directly."""
    api_op(name)                            # the op table is loaded with the API
    return dispatch.get_op("dense", name)
