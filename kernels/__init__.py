"""Operator kernels: plain functions on arrays, a CPU and a CUDA (Numba) variant each."""

__flexflow_component__ = "kernels"
