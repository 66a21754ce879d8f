"""Core runtime: tensor base, metadata, registry, dispatch and autograd."""
