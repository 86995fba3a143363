"""Small helpers over nested lists/tuples/dicts of tensors, used by layers and models.

A dict's leaves come in its insertion order here (models' named inputs and outputs rely on it); the public
`keras.tree` (flexflow_keras/tree.py) has Keras 3's semantics: sorted keys, namedtuples rebuilt.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def flatten(structure) -> list:
    """Leaves of `structure` in order (dicts by insertion order); None is a leaf."""
    if isinstance(structure, (list, tuple)):
        out: list = []
        for item in structure:
            out.extend(flatten(item))
        return out
    if isinstance(structure, dict):
        out = []
        for item in structure.values():
            out.extend(flatten(item))
        return out
    return [structure]


def map_structure(fn: Callable[[Any], Any], structure):
    """The same structure with `fn` applied to every leaf."""
    if isinstance(structure, list):
        return [map_structure(fn, s) for s in structure]
    if isinstance(structure, tuple):
        return tuple(map_structure(fn, s) for s in structure)
    if isinstance(structure, dict):
        return {k: map_structure(fn, v) for k, v in structure.items()}
    return fn(structure)


def pack_as(structure, flat: list):
    """Rebuild `structure` with the leaves taken from `flat` in order."""
    it = iter(flat)
    return map_structure(lambda _: next(it), structure)
