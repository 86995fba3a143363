"""Keras 2's layer module paths: `keras.layers.noise`, `.merge`, `.convolutional`, `.recurrent`, `.core`,
`.embeddings`, `.normalization`, `.pooling`, `.advanced_activations`, `.wrappers`, `.local`,
`.convolutional_recurrent`, `.cudnn_recurrent`, and `.experimental.preprocessing`.

Every name is looked up lazily in `flexflow_keras.layers` when it is first asked for, so layers added
there later appear under the old paths without touching this file. The paths that are also real
modules here (core, convolutional, normalization, pooling) install `module_getattr` as their module
`__getattr__`; the others are made on first import by a finder that comes after the normal ones, so a
real module of that name, should one be added, wins. A layer that flexflow_keras does not have raises an
ImportError naming it (from ``from keras.layers.noise import GaussianNoise`` too).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types

from flexflow_keras.errors import FlexFlowKerasError

PACKAGE = "flexflow_keras.layers"
EXPERIMENTAL_PREPROCESSING = f"{PACKAGE}.experimental.preprocessing"  # tf.keras 2.3-2.5's preprocessing layers
KERAS2_MODULES = ("advanced_activations", "convolutional", "convolutional_recurrent", "core", "cudnn_recurrent",
                  "embeddings", "local", "merge", "noise", "normalization", "pooling", "recurrent", "wrappers")


class MissingLayerError(FlexFlowKerasError, ImportError):
    """A Keras layer asked for under a Keras 2 module path that flexflow_keras does not provide."""


def module_getattr(module_name: str):
    """A module-level ``__getattr__`` for `module_name` that finds names in `flexflow_keras.layers`."""
    short = module_name[len(PACKAGE) + 1:] if module_name.startswith(PACKAGE + ".") else module_name

    def __getattr__(name: str):
        if name.startswith("__"):
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        layers = sys.modules.get(PACKAGE) or importlib.import_module(PACKAGE)
        value = layers.__dict__.get(name)
        if value is None and "__getattr__" in layers.__dict__:
            try:
                value = layers.__getattr__(name)
            except AttributeError:
                value = None
        if value is not None:
            return value
        if name[:1].isupper():
            raise MissingLayerError(
                f"{name} (imported from keras.layers.{short}) is not implemented by flexflow_keras yet: "
                f"flexflow_keras.layers has no {name}. The layers it has are listed in "
                f"flexflow_keras.layers.__all__.", name=module_name)
        raise AttributeError(f"module {module_name!r} has no attribute {name!r}")

    return __getattr__


class _Loader(importlib.abc.Loader):
    def create_module(self, spec):
        return None  # the default module object

    def exec_module(self, module: types.ModuleType) -> None:
        short = module.__name__.rsplit(".", 1)[-1]
        module.__doc__ = (f"Keras 2's `keras.layers.{short}` path: every layer name resolves lazily from "
                          f"flexflow_keras.layers.")
        module.__getattr__ = module_getattr(module.__name__)


class _Finder(importlib.abc.MetaPathFinder):
    """Finds `flexflow_keras.layers.<Keras 2 module>` when no real module of that name exists."""

    def find_spec(self, fullname, path=None, target=None):
        pkg, _, short = fullname.rpartition(".")
        if fullname != EXPERIMENTAL_PREPROCESSING and (pkg != PACKAGE or short not in KERAS2_MODULES):
            return None
        return importlib.machinery.ModuleSpec(fullname, _Loader(), origin="keras2-path")


_FINDER = _Finder()


def install() -> None:
    """Give the imported real modules among `KERAS2_MODULES` the lazy `__getattr__`, and put the finder
    for the others at the end of `sys.meta_path` (once)."""
    for short in KERAS2_MODULES:
        module = sys.modules.get(f"{PACKAGE}.{short}")
        if module is not None and "__getattr__" not in module.__dict__:
            module.__getattr__ = module_getattr(module.__name__)
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.append(_FINDER)


__all__ = ["KERAS2_MODULES", "MissingLayerError", "install", "module_getattr"]
