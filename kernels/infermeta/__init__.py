"""Shape rules: one function per rule, named ``*_infer_meta``.

Each takes MetaTensors and attributes and returns the output MetaTensor(s),
raising ValueError/TypeError with the op's name before any data is touched.
Helper functions here may also be called from a backward's ``invoke``.  The
SBP ``physical`` functions (named in a YAML ``sbp:`` field, see
:mod:`kernels.core.dist.rules`) live here too: they are shape rules of a
shard.
"""
from .common import shard_out_shape, unchanged_infer_meta
from ..core.size import check_output_size
from .elementwise import (binary_grad_infer_meta, binary_infer_meta, broadcast_shape,
                          unary_infer_meta, where_grad_infer_meta, where_infer_meta)
from .creation import (arange_infer_meta, cast_infer_meta, full_infer_meta,
                       full_like_infer_meta, like_infer_meta, ones_infer_meta, zeros_infer_meta)
from .manip import (concat_infer_meta, flatten_infer_meta, inverse_perm, list_grad_infer_meta,
                    squeeze_infer_meta, squeeze_sbp_physical, stack_infer_meta,
                    transpose_infer_meta, unsqueeze_infer_meta)
from .matmul import matmul_infer_meta
from .slice import (basic_index_infer_meta, index_select_infer_meta, slice_infer_meta, strided_slice_infer_meta)
from .gather import (batch_gather_infer_meta, batch_gather_sbp_physical, gather_infer_meta,
                     gather_sbp_physical)
from .expand import expand_infer_meta, repeat_infer_meta, resolve_expand, resolve_repeat
from .reduce import (argmax_infer_meta, argmin_infer_meta, max_infer_meta, mean_infer_meta,
                     min_infer_meta, prod_infer_meta, sum_infer_meta, sum_keepdim_shape)
from .reshape import reshape_infer_meta, resolve_reshape
from .structure import (each_unchanged_infer_meta, sparse_concat_infer_meta,
                        sparse_index_select_infer_meta, sparse_slice_infer_meta,
                        sparse_stack_infer_meta, sparse_transpose_infer_meta)
from .sparse_values import (mask_as_infer_meta, require_sparse, sparse_cast_infer_meta,
                            sparse_unary_infer_meta, values_infer_meta, with_values_infer_meta)
from .sparse_binary import (sparse_add_infer_meta, sparse_divide_infer_meta,
                            sparse_multiply_infer_meta, sparse_subtract_infer_meta)
from .sparse_reduce import sparse_softmax_infer_meta, sparse_sum_infer_meta, sum_plan
from .sparse import (coo_reshape_sparse_dim, sparse_reshape_infer_meta, to_dense_infer_meta,
                     to_sparse_coo_infer_meta, to_sparse_csr_infer_meta)

__all__ = ["unchanged_infer_meta", "sum_infer_meta", "sum_keepdim_shape",
           "reshape_infer_meta", "resolve_reshape",
           "expand_infer_meta", "repeat_infer_meta", "resolve_expand", "resolve_repeat"]
__all__ += ["sparse_reshape_infer_meta", "coo_reshape_sparse_dim", "to_dense_infer_meta",
            "to_sparse_coo_infer_meta", "to_sparse_csr_infer_meta"]
__all__ += ["gather_infer_meta", "batch_gather_infer_meta"]
__all__ += ["sparse_transpose_infer_meta", "sparse_slice_infer_meta",
            "sparse_index_select_infer_meta", "sparse_concat_infer_meta",
            "sparse_stack_infer_meta", "each_unchanged_infer_meta"]
__all__ += ["mask_as_infer_meta", "values_infer_meta", "with_values_infer_meta", "require_sparse",
            "sparse_unary_infer_meta", "sparse_cast_infer_meta"]
__all__ += ["sparse_add_infer_meta", "sparse_subtract_infer_meta", "sparse_multiply_infer_meta",
            "sparse_divide_infer_meta"]
__all__ += ["sparse_sum_infer_meta", "sparse_softmax_infer_meta", "sum_plan"]
__all__ += ["unary_infer_meta", "binary_infer_meta", "binary_grad_infer_meta",
            "broadcast_shape"]
__all__ += ["where_infer_meta", "where_grad_infer_meta", "matmul_infer_meta",
            "transpose_infer_meta", "inverse_perm", "squeeze_infer_meta",
            "squeeze_sbp_physical", "unsqueeze_infer_meta", "flatten_infer_meta", "concat_infer_meta", "stack_infer_meta",
            "list_grad_infer_meta", "slice_infer_meta", "strided_slice_infer_meta",
            "basic_index_infer_meta",
            "index_select_infer_meta", "mean_infer_meta", "max_infer_meta", "min_infer_meta",
            "prod_infer_meta", "argmax_infer_meta", "argmin_infer_meta", "zeros_infer_meta",
            "ones_infer_meta", "full_infer_meta", "arange_infer_meta", "like_infer_meta",
            "full_like_infer_meta", "cast_infer_meta"]
__all__ += ["shard_out_shape", "gather_sbp_physical", "batch_gather_sbp_physical"]
__all__ += ["check_output_size"]
