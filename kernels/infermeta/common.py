"""Rules that keep the input's metadata."""


def unchanged_infer_meta(x):
    """The output has x's shape, dtype, layout and place."""
    return x
