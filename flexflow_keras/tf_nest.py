"""`tf.nest` under `python -m flexflow_keras` (tf_compat.py's `mapped_call` looks here): `flatten`,
`map_structure`, `pack_sequence_as` and `is_nested` are keras.tree's (flexflow_keras/tree.py), which mean
the same: a dict's leaves by sorted key, None a leaf, namedtuples and deques nested.

TensorFlow's arguments: `check_types=False` lets a list match a tuple (the paths are compared, the result
has the first structure's types); `expand_composites=True` (splitting sparse and ragged tensors into their
parts) is refused. Where they differ: tf.nest orders an `OrderedDict` by sorted key too, keras.tree by its
own order; a mismatch is keras.tree's ValueError, where tf.nest raises TypeError for differing types.
"""

from __future__ import annotations

from flexflow_keras import tree
from flexflow_keras.errors import ArgumentError


def _no_composites(who: str, expand_composites) -> None:
    if expand_composites:
        raise ArgumentError(f"tf.nest.{who}(expand_composites=True) splits sparse and ragged tensors into their "
                            f"parts, which flexflow_keras does not do; pass expand_composites=False (the default) "
                            f"or convert them to dense tensors first.")


def flatten(structure, expand_composites=False) -> list:
    _no_composites("flatten", expand_composites)
    return tree.flatten(structure)


def pack_sequence_as(structure, flat_sequence, expand_composites=False):
    _no_composites("pack_sequence_as", expand_composites)
    return tree.pack_sequence_as(structure, flat_sequence)


def is_nested(seq) -> bool:
    return tree.is_nested(seq)


def map_structure(func, *structure, check_types=True, expand_composites=False):
    _no_composites("map_structure", expand_composites)
    if check_types or len(structure) < 2:
        return tree.map_structure(func, *structure)
    for other in structure[1:]:  # a list may match a tuple: the paths must be the same
        tree.assert_same_paths(structure[0], other)
    leaves = zip(*(tree.flatten(s) for s in structure), strict=True)
    return tree.pack_sequence_as(structure[0], [func(*group) for group in leaves])


CALLS = {f"tf.nest.{fn.__name__}": fn for fn in (flatten, pack_sequence_as, is_nested, map_structure)}
