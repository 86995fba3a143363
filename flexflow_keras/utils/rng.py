"""The framework's random state: one NumPy generator that unseeded initializers and layers draw from.

`set_random_seed(s)` seeds Python's `random`, NumPy's global state and this generator, so a script that
calls it builds the same initial weights and dropout seeds on every run.
"""

from __future__ import annotations

import random

import numpy as np

_generator = np.random.default_rng()


def set_random_seed(seed: int) -> None:
    """Seed Python, NumPy and flexflow_keras' own generator (initializers, dropout seeds).

    Args:
        seed: a non-negative integer.

    Example:
        >>> from flexflow_keras import utils
        >>> utils.set_random_seed(1337)
    """
    global _generator
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"set_random_seed expects a non-negative integer seed, received seed={seed!r} "
                         f"(of type {type(seed).__name__}).")
    seed = int(seed)
    random.seed(seed)
    np.random.seed(seed % (2 ** 32))
    _generator = np.random.default_rng(seed)


def generator() -> np.random.Generator:
    """The shared generator (re-created by `set_random_seed`)."""
    return _generator


def make_seed() -> int:
    """A fresh 31-bit seed drawn from the shared generator (for layers given no seed)."""
    return int(_generator.integers(0, 2 ** 31 - 1))
