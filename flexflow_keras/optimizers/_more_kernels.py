"""The update kernel of an optimizer family from kernels/optimizers_more.py, for a backend."""

from __future__ import annotations


def update_kernel(backend: str, family: str):
    """`<family>_update_cpu` or `<family>_update_cuda`."""
    from kernels import optimizers_more

    return getattr(optimizers_more, f"{family}_update_{'cpu' if backend == 'cpu' else 'cuda'}")
