"""Kernels the benchmarks bring as a user would: short kernels (``sweeper.kernel``) loaded by
``module:name`` from the repository root."""
