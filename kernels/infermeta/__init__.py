"""Shape rules: one function per rule, named ``*_infer_meta``.

Each takes MetaTensors and attributes and returns the output MetaTensor(s),
raising ValueError/TypeError with the op's name before any data is touched.
Helper functions here may also be called from a backward's ``invoke``.
"""
from .common import unchanged_infer_meta
from .reduce import sum_infer_meta, sum_keepdim_shape
from .reshape import reshape_infer_meta, resolve_reshape

__all__ = ["unchanged_infer_meta", "sum_infer_meta", "sum_keepdim_shape",
           "reshape_infer_meta", "resolve_reshape"]
