"""`keras`, `tensorflow.keras` and `tf.keras` as flexflow_keras, for `python -m flexflow_keras SCRIPT.py`.

`install()` puts a finder first on `sys.meta_path`: ``import keras.layers`` (or ``tensorflow.keras.layers``)
imports ``flexflow_keras.layers`` and registers that same module object under the asked name, so
`isinstance` checks and module state are shared. ``import tensorflow`` gives a stand-in module whose
``keras`` attribute is flexflow_keras, ``tf.GradientTape`` the eager tape of ops/tape.py (in a traced
``train_step`` it records nothing: the step's gradient is the graph's), and TensorFlow's activation functions (``tf.nn.relu``, ``tf.sigmoid``,
``tf.math.tanh``, ...: scripts pass them as ``activation=``) are Keras' own; the setup calls and the
math functions of `tf_compat` (``tf.random.set_seed``, ``tf.function``, ``tf.reduce_mean``, ...) run as
their Keras equivalents; any other call and any other ``tensorflow.*`` module raise
`RawTensorFlowError` naming the call: raw TensorFlow is not supported, only its Keras API. A
``keras.<path>`` flexflow_keras does not have is a ModuleNotFoundError naming both names. Packages built on
TensorFlow itself (tensorflow_datasets, tensorflow_hub, tensorflow_text, keras_nlp, keras_hub,
tensorflow_addons) are a `TensorFlowPackageError` (a ModuleNotFoundError) saying what to use instead.
"""

from __future__ import annotations

import functools
import importlib
import importlib.abc
import importlib.machinery
import inspect
import sys
import types

from flexflow_keras import tf_compat, tf_data
from flexflow_keras.errors import FlexFlowKerasError
from flexflow_keras.raw_tf_hints import keras_spelling

_KERAS_PREFIXES = ("tensorflow.python.keras", "tensorflow.keras", "keras")
# Raw TensorFlow calls with a Keras spelling to suggest.
_HINTS = {
    "nn.ctc_loss": "keras.ops.ctc_loss, whose logits are batch-major (batch, frames, classes), or "
                   "keras.backend.ctc_batch_cost on probabilities",
    "data.Dataset": "Dataset.from_tensor_slices(...) runs; otherwise NumPy arrays, a generator of (x, y) batches, "
                    "or keras.utils.PyDataset",
    "config": "the -ll:gpu / -ll:cpu command-line flags for devices",
    "constant": "numpy arrays or keras.ops functions",
    "convert_to_tensor": "numpy arrays or keras.ops.convert_to_tensor",
    "gradients": "a GradientTape in eager code or in a custom train_step; a model's graph cannot hold "
                 "gradients of its own tensors",
    "saved_model": "model.save('name.keras') and keras.saving.load_model('name.keras'); a SavedModel is "
                   "TensorFlow's graph format: load the .keras file in tf.keras and export it there",
}


class RawTensorFlowError(FlexFlowKerasError, AttributeError):
    """A script under `python -m flexflow_keras` used TensorFlow itself rather than its Keras API."""


class TensorFlowPackageError(FlexFlowKerasError, ModuleNotFoundError):
    """A script under `python -m flexflow_keras` imported a package built on TensorFlow itself (or on Keras 3's
    backend internals), which the runner cannot serve: a ModuleNotFoundError, so ``try: import ... except
    ImportError`` fallbacks still run."""


# Packages that run on TensorFlow itself (or Keras 3's internals), with what a script can use instead.
_TF_PACKAGES = {
    "tensorflow_datasets": "it builds and reads its datasets with TensorFlow itself (tf.data pipelines, tf.io "
                           "files, its SubwordTextEncoder). Load the data without it: keras.datasets (imdb, "
                           "reuters, mnist, ...), keras.utils.text_dataset_from_directory / "
                           "image_dataset_from_directory on the downloaded files, or NumPy arrays and lists of "
                           "strings through tf.data.Dataset.from_tensor_slices; tokenize with "
                           "keras.layers.TextVectorization",
    "tensorflow_hub": "its modules are TensorFlow SavedModels run by TensorFlow. Use keras.applications (with "
                      "weights from a local .h5 / .weights.h5 file) or a model saved as .keras",
    "tensorflow_text": "its tokenizers and ops are TensorFlow kernels. Use keras.layers.TextVectorization "
                       "(standardize, split, ngrams) or the tf.strings functions the runner maps",
    "keras_nlp": "it builds on Keras 3's backend internals (keras.src) and TensorFlow text ops. Use "
                 "keras.layers.TextVectorization for tokenizing and keras layers for the model",
    "keras_hub": "it builds on Keras 3's backend internals (keras.src) and TensorFlow text ops. Use "
                 "keras.layers.TextVectorization for tokenizing and keras layers for the model",
    "tensorflow_addons": "its layers and ops are TensorFlow kernels. Use the Keras 3 layers, losses and "
                         "optimizers that replaced them",
}


def _package_message(fullname: str) -> str:
    top = fullname.split(".")[0]
    return (f"import {fullname}: {top} cannot run under `python -m flexflow_keras`: {_TF_PACKAGES[top]}; or run "
            f"the script with TensorFlow itself.")


class TensorFlowArgumentError(RawTensorFlowError, TypeError):
    """A mapped TensorFlow function called with arguments its stand-in does not take (a missing or unknown
    one): a TypeError, as TensorFlow raises for a call its own function does not take."""


def _raw_tf_message(call: str) -> str:
    hint = next((h for k, h in _HINTS.items() if call == f"tf.{k}" or call.startswith(f"tf.{k}.")), None)
    hint = hint or keras_spelling(call)
    return (f"{call}: raw TensorFlow is not supported under `python -m flexflow_keras`; only tf.keras (and "
            f"`keras`) are mapped onto flexflow_keras. Replace the call with its Keras equivalent"
            f"{f' ({hint})' if hint else ''}, or run the script with TensorFlow itself.")


_KERAS_SHORTCUTS = ("optimizers", "losses", "metrics", "initializers", "activations", "regularizers",
                    "constraints")
_DTYPES = ("bfloat16", "bool", "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
           "uint16", "uint32", "uint64", "string", "complex64", "complex128")


def _kept(module, name: str, value):
    """`value` stored as `module.name`, so a path is one object (``tf.random is tf.random``), as TensorFlow's
    modules are, and what a script assigns to it stays (``tf.random.normal = fake`` in a test)."""
    module.__dict__[name] = value
    return value


class _RawTF(types.ModuleType):
    """A path under the stand-in `tensorflow` (tf.random, tf.random.set_seed, ...): it names itself, and
    calling it (or a path below it) raises `RawTensorFlowError` with the whole call."""

    def __init__(self, path: str):
        super().__init__(path)
        self._path = path

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        path = f"{self._path}.{name}"
        if path in tf_compat.CONSTANTS:
            return tf_compat.CONSTANTS[path]
        return _kept(self, name, _RawTFType(path, tf_data.TYPES[path]) if path in tf_data.TYPES else _RawTF(path))

    def __call__(self, *args, **kwargs):
        fn = tf_compat.mapped_call(self._path)
        if fn is None:
            raise RawTensorFlowError(_raw_tf_message(self._path))
        try:
            inspect.signature(fn).bind(*args, **kwargs)
        except TypeError as e:  # an argument TensorFlow's function takes and the Keras one does not
            spelled = keras_spelling(self._path) or f"{fn.__module__}.{fn.__name__}"
            raise TensorFlowArgumentError(
                f"{self._path}() {e}: under `python -m flexflow_keras` it runs as {spelled}, taking "
                f"{inspect.signature(fn)}. Pass the arguments that takes; for an argument only TensorFlow's "
                f"{self._path} has, call {spelled} with its own arguments or run the script with TensorFlow "
                f"itself.") from None
        except ValueError:  # no signature to check (a builtin): the call says what is wrong
            pass
        return fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<raw TensorFlow {self._path}: not supported under python -m flexflow_keras>"


class _RawTFType(_RawTF):
    """A TensorFlow class whose instances are ours (`tf.data.Dataset`: the datasets tf_data.py builds):
    `isinstance` and `issubclass` answer for those classes; its attributes and calls stay raw paths
    (`tf.data.Dataset.from_tensor_slices` is mapped, the rest refused)."""

    def __init__(self, path: str, classes):
        super().__init__(path)
        self._classes = classes

    def __instancecheck__(self, obj) -> bool:
        return isinstance(obj, self._classes())

    def __subclasscheck__(self, cls) -> bool:
        return isinstance(cls, type) and issubclass(cls, self._classes())


# TensorFlow's activation functions that are Keras' (same math, same positional arguments): scripts pass
# them as a layer's ``activation=`` or call them in a layer's ``call``
_TF_ACTIVATIONS = {
    "nn": ("relu", "relu6", "elu", "selu", "gelu", "silu", "swish", "sigmoid", "tanh", "softmax", "softplus",
           "softsign", "log_softmax", "leaky_relu"),
    "math": ("sigmoid", "tanh", "softplus", "softsign", "softmax", "log_softmax"),
    "": ("sigmoid", "tanh"),
}


@functools.cache  # one wrapper per name: tf.nn.relu is tf.nn.relu
def _tf_activation(namespace: str, name: str):
    if name not in _TF_ACTIVATIONS.get(namespace, ()):
        return None
    from flexflow_keras import activations

    fn = getattr(activations, name)

    def call(x, *args, name=None, **kwargs):  # TensorFlow's keyword arguments, in Keras' words
        if "alpha" in kwargs:  # tf.nn.leaky_relu(features, alpha=0.2)
            kwargs["negative_slope"] = kwargs.pop("alpha")
        if "axis" in kwargs and kwargs["axis"] is None:  # tf.nn.softmax(logits, axis=None): the last axis
            kwargs["axis"] = -1
        if kwargs.pop("beta", 1.0) != 1.0:
            raise RawTensorFlowError(_raw_tf_message(f"tf.nn.{fn.__name__} with beta != 1"))
        if isinstance(x, list | tuple):  # TensorFlow converts a list of tensors to one, stacked on a new axis 0
            from flexflow_keras import ops

            x = ops.stack(list(x), axis=0)
        out = fn(x, *args, **kwargs)
        if "_keras_logits" in getattr(out, "__dict__", {}) and not _graph_context():
            # TensorFlow's own tf.nn.softmax / sigmoid leave no logits on an eager tensor (Keras' activations
            # do): a crossentropy of it clips the probabilities. In a graph (tf.function, fit's steps) Keras
            # finds the Softmax / Sigmoid op's input instead, as the carried logits give.
            del out._keras_logits
        return out

    call.__name__ = call.__qualname__ = fn.__name__
    call._keras_activation = fn  # activations.get: activation=tf.nn.relu is Keras' relu (fused, serialized)
    if fn.__name__ in ("softmax", "sigmoid"):
        # A layer's activation=tf.nn.softmax / tf.nn.sigmoid stays TensorFlow's (as in tf.keras, whose
        # activations.get keeps a foreign function): eagerly its output carries no logits, so a custom loop's
        # crossentropy clips as TensorFlow's does (a sigmoid then runs after the Dense, not fused into it).
        # It is saved under Keras' name (activations.serialize).
        call._keras_activation = call
        call._keras_name = fn.__name__
    return call


def _graph_context() -> bool:
    """Whether TensorFlow would run the current code as a graph: a tf.function, or a model's fit, evaluate or
    predict step (Keras traces them)."""
    from flexflow_keras import tf_setup
    from flexflow_keras.models import call_mode

    return tf_setup.in_function() or call_mode.fitting() or call_mode.inference()


class _RawTFNamespace(_RawTF):
    """``tf.nn`` / ``tf.math``: their activation functions are Keras' (`_TF_ACTIVATIONS`), the rest raw."""

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        found = _tf_activation(self._path.rsplit(".", 1)[-1], name)
        return found if found is not None else _kept(self, name, _RawTF(f"{self._path}.{name}"))


class _TensorFlow(types.ModuleType):
    """The `tensorflow` module a script sees: `.keras` is flexflow_keras, dtypes are their names
    (`tf.float32` is ``"float32"``, which Keras accepts), everything else a `_RawTF` path."""

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        if name == "keras":
            return importlib.import_module("flexflow_keras")
        if name in _KERAS_SHORTCUTS:  # TensorFlow 2's tf.optimizers, tf.losses, ... are tf.keras' modules
            return importlib.import_module(f"flexflow_keras.{name}")
        if name in _DTYPES:
            return name
        if name == "GradientTape":
            from flexflow_keras.ops.tape import GradientTape

            return GradientTape
        if name == "Module" and self.__name__ == "tensorflow":
            from flexflow_keras.variables import Module

            return Module
        path = f"{self.__name__.replace('tensorflow', 'tf', 1)}.{name}"
        if self.__name__ == "tensorflow":
            if name in _TF_ACTIVATIONS and name:
                return _kept(self, name, _RawTFNamespace(path))
            found = _tf_activation("", name)
            if found is not None:
                return found
        if path in tf_compat.CONSTANTS:
            return tf_compat.CONSTANTS[path]
        return _kept(self, name, _RawTF(path))


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, target: str | None):
        self.target = target

    def create_module(self, spec):
        if self.target is None:  # the stand-in tensorflow (or tensorflow.python)
            module = _TensorFlow(spec.name)
            module.__path__ = []  # a package, so `import tensorflow.keras` is asked of the finder
            # a TensorFlow 2 version (scripts check `tf.__version__ >= 2` with packaging), whose local label
            # says what it is: 2.16 is the first TensorFlow with Keras 3, whose API this maps onto
            module.__version__ = f"2.16.0+flexflow.keras.{_version()}"
            return module
        try:
            return importlib.import_module(self.target)
        except ModuleNotFoundError as e:
            if e.name != self.target:
                raise
            raise ModuleNotFoundError(f"No module named {spec.name!r}: `python -m flexflow_keras` maps it to "
                                      f"{self.target!r}, which flexflow_keras does not have.",
                                      name=spec.name) from None

    def exec_module(self, module) -> None:
        return None  # already initialised (or the stand-in)


def _version() -> str:
    """Our own version (install() replaces flexflow_keras.__version__ by a Keras one under the runner)."""
    import flexflow_keras

    return _OWN_VERSION or flexflow_keras.__version__


_OWN_VERSION: str | None = None


def target_of(fullname: str) -> str | None | bool:
    """The flexflow_keras module for `fullname`, None for the stand-in tensorflow (and its `python`
    package, which older tf.keras scripts import `tensorflow.python.keras` through), False when not ours."""
    for prefix in _KERAS_PREFIXES:
        if fullname == prefix or fullname.startswith(prefix + "."):
            return "flexflow_keras" + fullname[len(prefix):]
    if fullname in ("tensorflow", "tensorflow.python"):
        return None
    return False


def _tf_namespace(fullname: str):
    """`import tensorflow.data as tf_data` (keras.io's Keras 3 examples): the stand-in's `tf.data`, the
    namespace `tf.data.X` calls go through (mapped or refused as attributes are), or None."""
    import tensorflow  # the stand-in (the finder maps it)

    found = tensorflow
    for part in fullname.split(".")[1:]:
        found = getattr(found, part, None)
        if not isinstance(found, types.ModuleType):
            return None
    return found


class _NamespaceLoader(importlib.abc.Loader):
    def __init__(self, namespace):
        self.namespace = namespace

    def create_module(self, spec):
        return self.namespace

    def exec_module(self, module) -> None:
        return None


class _AliasFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        mapped = target_of(fullname)
        if fullname.split(".")[0] in _TF_PACKAGES:
            raise TensorFlowPackageError(_package_message(fullname), name=fullname)
        if mapped is False:
            if fullname.startswith("tensorflow."):
                # TensorFlow's internals (`tensorflow.python.types.core`, `tensorflow.python.framework.ops`)
                namespace = None if fullname.startswith("tensorflow.python.") else _tf_namespace(fullname)
                if namespace is None:
                    raise RawTensorFlowError(_raw_tf_message("import " + fullname))
                # a refused path is a package, so `import tensorflow.experimental.numpy as tnp` can reach
                # the namespace below it
                return importlib.machinery.ModuleSpec(fullname, _NamespaceLoader(namespace),
                                                      is_package=isinstance(namespace, _RawTF))
            return None
        # The loader hands back the flexflow_keras module itself, whose own __path__ (if a package) then
        # serves the submodule imports that follow.
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(mapped))


def installed() -> bool:
    """Whether `install` has run: imports of keras / tensorflow go to flexflow_keras (`python -m
    flexflow_keras`)."""
    return any(isinstance(f, _AliasFinder) for f in sys.meta_path)


def install() -> None:
    """Map keras / tensorflow.keras / tf.keras onto flexflow_keras for imports from now on."""
    if any(isinstance(f, _AliasFinder) for f in sys.meta_path):
        return
    for name in [n for n in sys.modules if target_of(n) is not False]:
        del sys.modules[name]  # a real keras/tensorflow imported before us would shadow the mapping
    sys.meta_path.insert(0, _AliasFinder())
    # the script imports us as keras: `keras.__version__` / `keras.version()` give the Keras API we follow
    # (saved files say the same), ours as the local label, so `Version(keras.__version__).major >= 3` holds
    global _OWN_VERSION
    import flexflow_keras
    from flexflow_keras.saving.keras_file import KERAS_VERSION

    _OWN_VERSION = flexflow_keras.__version__
    flexflow_keras.__version__ = f"{KERAS_VERSION}+flexflow.{_OWN_VERSION}"


__all__ = ["RawTensorFlowError", "TensorFlowPackageError", "install", "installed", "target_of"]
