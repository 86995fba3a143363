"""`keras.tree`: functions over nested structures, with Keras 3's semantics.

A structure is a leaf or a node. Nodes are lists, tuples, namedtuples, `collections.deque` and dicts
(`OrderedDict` and `defaultdict` too); everything else is a leaf: None, strings, arrays, tensors, sets.
Leaves come out in Keras 3's order: sequences by position, a dict by its sorted keys (insertion order when
the keys cannot be sorted), an `OrderedDict` in its own order. A rebuilt dict keeps the original's key order
and type. Two structures match when their nodes have the same type (any two dicts with the same keys match;
a list does not match a tuple, nor a namedtuple another namedtuple class) and the same length or keys.

The framework's own helpers (flexflow_keras/utils/tree.py) keep a dict's insertion order, which its models'
named inputs and outputs rely on; this module is the public one, as scripts call ``keras.tree``.
Under ``python -m flexflow_keras`` `tf.nest.flatten`, `map_structure`, `pack_sequence_as` and `is_nested`
are these functions (tf_nest.py).

Example:
    >>> keras.tree.flatten({"b": 1, "a": [2, (3, None)]})
    [2, 3, None, 1]
"""

from __future__ import annotations

import collections
import warnings

__all__ = ["MAP_TO_NONE", "assert_same_paths", "assert_same_structure", "flatten", "flatten_with_path",
           "is_nested", "lists_to_tuples", "map_shape_structure", "map_structure", "map_structure_up_to",
           "pack_sequence_as", "traverse"]


class MAP_TO_NONE:  # noqa: N801 - Keras' name; the class itself is the marker, as in Keras
    """What a `traverse` function returns to put None in place of a sub-structure."""


def is_nested(structure) -> bool:
    """Whether `structure` is a node (a list, tuple, namedtuple, deque or dict), not a leaf."""
    return isinstance(structure, (list, tuple, dict, collections.deque))


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def _keys(node) -> list:
    """A node's keys in leaf order (positions for a sequence)."""
    if not isinstance(node, dict):
        return list(range(len(node)))
    if type(node) is collections.OrderedDict:
        return list(node)
    try:
        return sorted(node)
    except TypeError:  # keys that do not compare (1 and "a"): their own order, as Keras'
        return list(node)


def _children(node, like=None) -> list:
    """A node's children in leaf order; with `like`, in `like`'s order (a dict matched by key)."""
    like = node if like is None else like
    return [node[k] for k in _keys(like)] if isinstance(like, dict) else list(node)


def _rebuild(node, values: list):
    """A node like `node` (its type, a dict's key order) holding `values`, given in leaf order."""
    if isinstance(node, dict):
        by_key = dict(zip(_keys(node), values, strict=True))
        items = [(k, by_key[k]) for k in node]
        if isinstance(node, collections.defaultdict):
            return type(node)(node.default_factory, items)
        return type(node)(items)
    if _is_namedtuple(node):
        return type(node)(*values)
    if isinstance(node, collections.deque):
        return collections.deque(values, maxlen=node.maxlen)
    return list(values) if isinstance(node, list) else tuple(values)


def _type_name(node) -> str:
    if isinstance(node, dict):
        return "dict"
    return f"namedtuple {type(node).__name__}" if _is_namedtuple(node) else type(node).__name__


def _same_node(a, b, path: tuple, who: str) -> None:
    """Raise ValueError unless nodes `a` and `b` match (see the module docstring)."""
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            raise ValueError(f"{who}: the dicts at {_where(path)} have different keys: {sorted(a, key=repr)} "
                             f"and {sorted(b, key=repr)}. Give both structures the same keys.")
        return
    if type(a) is not type(b):
        raise ValueError(f"{who}: the structures differ at {_where(path)}: a {_type_name(a)} and a "
                         f"{_type_name(b)} ({b!r}). Nodes must be of the same type (keras.tree.lists_to_tuples "
                         f"makes lists tuples; keras.tree.assert_same_paths compares only the paths).")
    if len(a) != len(b):
        raise ValueError(f"{who}: the {_type_name(a)}s at {_where(path)} have lengths {len(a)} and {len(b)}.")


def _where(path: tuple) -> str:
    return "the top" if not path else "path " + repr(path)


def _is_leaf(x, none_is_leaf: bool = True) -> bool:
    return not is_nested(x) and (none_is_leaf or x is not None)


def flatten(structure) -> list:
    """The leaves of `structure`, in order (a leaf alone gives a list of one)."""
    if not is_nested(structure):
        return [structure]
    return [leaf for child in _children(structure) for leaf in flatten(child)]


def flatten_with_path(structure) -> list:
    """``(path, leaf)`` pairs in leaf order; a path is the tuple of keys and positions down to the leaf."""
    if not is_nested(structure):
        return [((), structure)]
    return [((key,) + path, leaf) for key, child in zip(_keys(structure), _children(structure), strict=True)
            for path, leaf in flatten_with_path(child)]


def pack_sequence_as(structure, flat_sequence):
    """`structure` with its leaves replaced, in order, by those of `flat_sequence`.

    Raises:
        ValueError: when `flat_sequence` does not hold exactly as many items as `structure` has leaves.
    """
    flat = list(flat_sequence)
    wanted = len(flatten(structure))
    if len(flat) != wanted:
        raise ValueError(f"keras.tree.pack_sequence_as: the structure has {wanted} leaves, and flat_sequence "
                         f"holds {len(flat)} items; give one item per leaf (keras.tree.flatten(structure) lists "
                         f"them).")
    it = iter(flat)

    def pack(node):
        return _rebuild(node, [pack(c) for c in _children(node)]) if is_nested(node) else next(it)
    return pack(structure)


def assert_same_structure(a, b, check_types=None) -> None:
    """Raise ValueError unless `a` and `b` have the same nodes (types and keys) and leaf positions.

    `check_types` is accepted and ignored, as Keras 3 deprecated it (it warns).
    """
    if check_types is not None:
        warnings.warn("keras.tree.assert_same_structure: check_types is deprecated and has no effect (as in Keras "
                      "3); for a looser check use keras.tree.assert_same_paths.", DeprecationWarning, stacklevel=2)
    _assert_same(a, b, (), True, "keras.tree.assert_same_structure")


def _assert_same(a, b, path: tuple, none_is_leaf: bool, who: str) -> None:
    if a is None and b is None:
        return
    if _is_leaf(a, none_is_leaf):
        if not _is_leaf(b, none_is_leaf):
            raise ValueError(f"{who}: the structures differ at {_where(path)}: a leaf ({a!r}) and a "
                             f"{_type_name(b)} ({b!r}).")
        return
    if a is None or not is_nested(b):
        raise ValueError(f"{who}: the structures differ at {_where(path)}: a {_type_name(a)} and a leaf ({b!r}).")
    _same_node(a, b, path, who)
    for key, ca, cb in zip(_keys(a), _children(a), _children(b, a), strict=True):
        _assert_same(ca, cb, path + (key,), none_is_leaf, who)


def assert_same_paths(a, b) -> None:
    """Raise ValueError unless `a` and `b` have the same leaf paths (node types may differ: a list and a
    tuple of the same length have the same paths)."""
    pa, pb = {p for p, _ in flatten_with_path(a)}, {p for p, _ in flatten_with_path(b)}
    if pa != pb:
        raise ValueError(f"keras.tree.assert_same_paths: `a` and `b` don't have the same paths. Paths in `a` "
                         f"missing in `b`: {sorted(pa - pb, key=repr)}; paths in `b` missing in `a`: "
                         f"{sorted(pb - pa, key=repr)}.")


def map_structure(func, *structures, none_is_leaf=True):
    """`func` applied to the leaves of `structures` at each position, in the structure of the first.

    Args:
        func: called with one leaf from each structure.
        *structures: one or more structures of the same nodes (see `assert_same_structure`).
        none_is_leaf: False keeps None as None without calling `func` on it.

    Example:
        >>> keras.tree.map_structure(lambda a, b: a + b, [1, (2, 3)], [10, (20, 30)])
        [11, (22, 33)]
    """
    if not structures:
        raise ValueError("keras.tree.map_structure needs at least one structure after func; received none.")
    for other in structures[1:]:
        _assert_same(structures[0], other, (), none_is_leaf, "keras.tree.map_structure")

    def apply(nodes):
        first = nodes[0]
        if first is None and not none_is_leaf:
            return None
        if not is_nested(first):
            return func(*nodes)
        return _rebuild(first, [apply(group) for group in zip(*(_children(n, first) for n in nodes), strict=True)])
    return apply(structures)


def map_structure_up_to(shallow_structure, func, *structures):
    """`func` applied to the sub-structures of `structures` found at the leaves of `shallow_structure`
    (whose nodes each structure must have, down to those leaves)."""
    if not structures:
        raise ValueError("keras.tree.map_structure_up_to needs at least one structure after func; received none.")

    def apply(shallow, nodes, path):
        if not is_nested(shallow):
            return func(*nodes)
        for node in nodes:
            if not is_nested(node):
                raise ValueError(f"keras.tree.map_structure_up_to: the structure has a leaf ({node!r}) at "
                                 f"{_where(path)}, where shallow_structure has a {_type_name(shallow)}.")
            _same_node(shallow, node, path, "keras.tree.map_structure_up_to")
        keys = _keys(shallow)
        groups = zip(*(_children(n, shallow) for n in nodes), strict=True)
        values = [apply(s, g, path + (k,)) for k, s, g in zip(keys, _children(shallow), groups, strict=True)]
        return _rebuild(shallow, values)
    return apply(shallow_structure, structures, ())


def lists_to_tuples(structure):
    """`structure` with every list made a tuple (dicts, namedtuples and deques kept, their contents converted)."""
    if not is_nested(structure):
        return structure
    values = [lists_to_tuples(c) for c in _children(structure)]
    return tuple(values) if isinstance(structure, list) else _rebuild(structure, values)


def _is_shape(x) -> bool:
    return isinstance(x, (list, tuple)) and not _is_namedtuple(x) and all(
        isinstance(d, int) or d is None for d in x)


def map_shape_structure(func, structure):
    """`func` applied to each shape in `structure`: a shape (a tuple or list of ints and None) is a leaf."""
    if _is_shape(structure) or not is_nested(structure):
        return func(structure)
    return _rebuild(structure, [map_shape_structure(func, c) for c in _children(structure)])


def traverse(func, structure, top_down=True):
    """Visit every sub-structure of `structure` (itself included) with `func`.

    Top down, a sub-structure for which `func` returns None is entered, anything else replaces it. Bottom
    up, `func` sees each sub-structure after its children were visited, and None keeps it as it is now.
    Either way `MAP_TO_NONE` puts None in its place.

    Example:
        >>> keras.tree.traverse(lambda x: x * 2 if isinstance(x, int) else None, [1, [2, 3]])
        [2, [4, 6]]
    """
    if not callable(func):
        raise TypeError(f"keras.tree.traverse expects a callable func, received {type(func).__name__}.")

    def down(node):
        out = func(node)
        if out is None:
            return _rebuild(node, [down(c) for c in _children(node)]) if is_nested(node) else node
        return None if out is MAP_TO_NONE else out

    def up(node):
        if is_nested(node):
            node = _rebuild(node, [up(c) for c in _children(node)])
        out = func(node)
        return node if out is None else None if out is MAP_TO_NONE else out
    return down(structure) if top_down else up(structure)
