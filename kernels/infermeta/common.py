"""Rules that keep the input's metadata."""


def unchanged_infer_meta(x):
    """The output has x's shape, dtype, layout and place."""
    return x


def shard_out_shape(s):
    """SBP physical attributes of an op whose ``shape`` is its output's shape
    (reshape, expand): this rank's output shard's shape, with a -1 kept where
    the logical ``shape`` has one (reshape's canonical shape keeps a -1 that
    resolved to 0, where a 0 would copy x's dim).

    ``s`` is a :class:`kernels.core.dist.rules.Shards`.  A split kept by the
    op's rules has the same extent in x's shard and in the output's.
    """
    return {"shape": tuple(-1 if a == -1 else n for a, n in zip(s.shape, s.out_local.shape))}
