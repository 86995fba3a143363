"""Keras 3's automatic config: a layer subclass that does not override `get_config` is saved with the
arguments it was constructed with, when they are all plain values (str, int, float, bool, None, and
lists / tuples / dicts of them), as Keras' ``Operation.__new__`` records them and its default
``get_config`` returns them. keras.io's mixture_of_experts recipe defines ``Conv2DMoE(filters,
kernel_size, n_experts, ...)`` without ``get_config`` and saves the model; tf.keras saves and reloads it.
"""

from __future__ import annotations

import inspect

from flexflow_keras.utils import tree

_PLAIN = (str, int, float, bool, type(None))


def capture(cls, args: tuple, kwargs: dict) -> dict | None:
    """The constructor arguments of ``cls(*args, **kwargs)`` by name, or None unless all are plain values."""
    try:
        names = inspect.getfullargspec(cls.__init__).args
    except TypeError:
        return None
    config = dict(kwargs)
    config.update(zip(names[1:len(args) + 1], args, strict=False))
    try:
        if not all(isinstance(v, _PLAIN) for v in tree.flatten(config)):
            return None
    except TypeError:
        return None
    return config


def default_config(layer, base: dict) -> dict:
    """`base` (the layer's name, trainable, dtype) joined with its recorded constructor arguments, when its
    class keeps the default `get_config`; `base` unchanged otherwise. As Keras, ``name`` is dropped when
    the constructor neither takes it nor ``**kwargs``."""
    auto = layer.__dict__.get("_ff_auto_config")
    if auto is None or type(layer).__module__.startswith("flexflow_keras."):  # ours write their configs
        return base
    config = {**base, **auto}
    spec = inspect.getfullargspec(type(layer).__init__)
    if spec.varkw is None and "name" not in spec.args[1:] and "name" not in spec.kwonlyargs:
        config.pop("name", None)
    return config


def has_auto_config(layer) -> bool:
    """Whether `layer` was constructed with plain arguments that its default `get_config` returns."""
    return layer.__dict__.get("_ff_auto_config") is not None
