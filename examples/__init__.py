"""Example kernels a space names by path (``examples.scale:scale``), run from the
repository root."""
