"""Rules that keep the input's metadata."""


def unchanged_infer_meta(x):
    """The output has x's shape, dtype, layout and place."""
    return x


def shard_out_shape(s):
    """SBP physical attributes of an op whose ``shape`` is its output's shape
    (reshape, expand): this rank's output shard's shape.

    ``s`` is a :class:`kernels.core.dist.rules.Shards`.  A split kept by the
    op's rules has the same extent in x's shard and in the output's.
    """
    return {"shape": s.out_local.shape}
