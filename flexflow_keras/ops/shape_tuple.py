"""The shape of a symbolic tensor as user code reads it: a tuple with tf.TensorShape's conveniences.

Keras 3 on TensorFlow calls a layer's `call` on TensorFlow's symbolic tensors while it builds a functional
model, so public scripts read their shapes TensorFlow's way: ``x.get_shape().as_list()`` (keras.io's
Swin Transformer), ``x.shape.as_list()``, ``x.shape.rank``. `ShapeTuple` is the tuple the library uses
everywhere (it compares, hashes, indexes and concatenates as one), with those methods; a slice is a
`ShapeTuple` too, as a TensorShape's slice is a TensorShape.
"""

from __future__ import annotations

import math


class ShapeTuple(tuple):
    """A tensor's dims (None where unknown) with `as_list`, `rank`, `ndims`, `num_elements`, `is_fully_defined`."""

    __slots__ = ()

    def __getitem__(self, key):
        item = tuple.__getitem__(self, key)
        return ShapeTuple(item) if isinstance(key, slice) else item

    def as_list(self) -> list:
        """The dims as a list (TensorShape.as_list)."""
        return list(self)

    @property
    def rank(self) -> int:
        return len(self)

    @property
    def ndims(self) -> int:
        return len(self)

    @property
    def dims(self) -> list:
        return list(self)

    def num_elements(self) -> int | None:
        """The number of elements, None when a dim is unknown (TensorShape.num_elements)."""
        return None if any(d is None for d in self) else math.prod(int(d) for d in self)

    def is_fully_defined(self) -> bool:
        return all(d is not None for d in self)

    def __repr__(self) -> str:
        return tuple.__repr__(tuple(self))
