"""`keras.Variable` (Keras 3's constructor), `tf.Variable` (TensorFlow's) and `tf.Module`, for the scripts
that make their own weights: a linear regression written with ``W = tf.Variable(...)`` and a
`GradientTape`, a ``tf.Module`` model (TensorFlow's basic training loops guide), or a layer that assigns
``self.w = keras.Variable(...)``. The variables are the framework's `Variable` (ops/graph.py):
arithmetic on them runs as `keras.ops`, and a tape differentiates with respect to them."""

from __future__ import annotations

import numpy as np

from flexflow_keras.ops import graph


class Variable(graph.Variable):
    """Keras 3's ``keras.Variable(initializer, shape=None, dtype=None, trainable=True, name=None)``.

    Args:
        initializer: the initial value (an array or a number), or an initializer (a name such as
            ``"glorot_uniform"``, or a callable ``(shape, dtype)``) together with `shape`.
        shape: needed with an initializer; checked against an initial value.
        dtype: default float32 for floating values, the value's own for integers and booleans.
        trainable: whether optimizers and `GradientTape` treat it as a weight.
        name: the variable's name.
    """

    def __init__(self, initializer, shape=None, dtype=None, trainable=True, autocast=True, aggregation="none",
                 synchronization="auto", name=None):
        from flexflow_keras import initializers

        if isinstance(initializer, str) or (callable(initializer) and not isinstance(initializer, np.ndarray)):
            if shape is None:
                raise ValueError(f"keras.Variable: an initializer ({initializer!r}) needs a shape, e.g. "
                                 f"keras.Variable(initializer='glorot_uniform', shape=(4, 2)).")
            dtype = str(np.dtype(dtype or "float32"))
            value = np.asarray(initializers.get(initializer)(tuple(shape), dtype))
        else:
            value = np.asarray(initializer.value if isinstance(initializer, graph.Variable) else initializer)
            if dtype is None:
                dtype = "float32" if value.dtype.kind == "f" else str(value.dtype)
            if shape is not None and tuple(shape) != value.shape:
                raise ValueError(f"keras.Variable: the initial value has shape {value.shape}, but shape={tuple(shape)} "
                                 f"was given.")
        super().__init__(name or "variable", value.shape, str(np.dtype(dtype)), initializer=value,
                         trainable=trainable)


def tf_variable(initial_value=None, trainable=None, validate_shape=True, caching_device=None, name=None,
                variable_def=None, dtype=None, import_scope=None, constraint=None, synchronization=None,
                aggregation=None, shape=None, experimental_enable_variable_lifting=True):
    """TensorFlow's ``tf.Variable(initial_value, ...)``: the value's own dtype (Python floats, in lists too,
    are float32 and ints int32; a NumPy float64 stays float64, as TensorFlow), or `dtype` when given."""
    if initial_value is None:
        raise ValueError("tf.Variable needs an initial_value.")
    if callable(initial_value):
        initial_value = initial_value()
    value = np.asarray(initial_value.value if isinstance(initial_value, graph.Variable) else initial_value)
    if dtype is None and not isinstance(initial_value, np.ndarray | np.generic | graph.Variable):
        # Python values (numbers, nested lists and tuples) as tf.constant makes them: floats float32, ints
        # int32; NumPy's keep their own (np.float64(2.0) is float64, though a Python float too)
        dtype = {"f": "float32", "i": "int32"}.get(value.dtype.kind)
    var = TFVariable(value, dtype=dtype or str(value.dtype), trainable=True if trainable is None else trainable,
                     name=name)
    var.constraint = constraint
    var.keras_tracked = False  # a layer attribute holding it is not one of the layer's weights (Keras 3)
    return var


class TFVariable(Variable):
    """What `tf.Variable` makes: its assignments return the variable (TensorFlow's, where Keras 3's return the
    value), a slice of it assigns into it (``v[0, 1].assign(42)``, ``v[:, 2].assign([0., 1.])``), and it has
    TensorFlow's `scatter_nd_update` and `scatter_update` (of a `tf.IndexedSlices`). Item assignment
    (``v[1] = ...``) stays a TypeError, as in TensorFlow."""

    def assign(self, value, use_locking=False, name=None, read_value=True):
        super().assign(value)
        return self

    def assign_add(self, delta, use_locking=False, name=None, read_value=True):
        super().assign_add(delta)
        return self

    def assign_sub(self, delta, use_locking=False, name=None, read_value=True):
        super().assign_sub(delta)
        return self

    def __getitem__(self, key):
        out = super().__getitem__(key)
        if isinstance(out, np.ndarray):  # a value (not a symbolic slice): it can assign into this variable
            out.assign = lambda value, *a, **k: self._assign_at(key, value)
        return out

    def _assign_at(self, key, value):
        new = self.numpy()
        new[key] = np.asarray(value, dtype=self.dtype)
        return self.assign(new)

    def scatter_nd_update(self, indices, updates, use_locking=False, name=None):
        """Set the elements (or slices) at the index vectors `indices` (``[[0, 0], [1, 2]]``) to `updates`."""
        idx = np.asarray(indices)
        return self._assign_at(tuple(np.moveaxis(idx, -1, 0)), updates)

    def scatter_update(self, sparse_delta, use_locking=False, name=None):
        """Set the rows `sparse_delta.indices` to `sparse_delta.values` (a `tf.IndexedSlices`)."""
        if not isinstance(sparse_delta, IndexedSlices):
            raise TypeError(f"tf.Variable.scatter_update expects a tf.IndexedSlices, received "
                            f"{type(sparse_delta).__name__}; pass tf.IndexedSlices(values=..., indices=...).")
        return self._assign_at(np.asarray(sparse_delta.indices), sparse_delta.values)


class IndexedSlices:
    """`tf.IndexedSlices(values, indices, dense_shape=None)`: rows of a tensor by index, as
    `tf.Variable.scatter_update` takes them."""

    def __init__(self, values, indices, dense_shape=None):
        self.values = np.asarray(values)
        self.indices = np.asarray(indices)
        self.dense_shape = None if dense_shape is None else np.asarray(dense_shape)

    def __repr__(self) -> str:
        return f"IndexedSlices(indices={self.indices.tolist()}, values={self.values.tolist()})"


class Module:
    """TensorFlow's ``tf.Module``: a named container whose `variables` are the Variables held by its
    attributes (directly, in lists, tuples and dicts, in sub-modules and in Keras layers), in attribute
    name order as TensorFlow lists them."""

    def __init__(self, name=None):
        import re

        self._module_name = name or re.sub(r"(?<!^)(?=[A-Z])", "_", type(self).__name__).lower()

    @property
    def name(self) -> str:
        return self._module_name

    @property
    def variables(self) -> list:
        """Every Variable this module holds, once each."""
        found: dict = {}
        self._collect(self, found, set())
        return list(found.values())

    @property
    def trainable_variables(self) -> list:
        return [v for v in self.variables if v.trainable]

    @property
    def submodules(self) -> list:
        return [v for _, v in sorted(vars(self).items()) if isinstance(v, Module)]

    @property
    def name_scope(self):
        import contextlib

        return contextlib.nullcontext()

    @staticmethod
    def with_name_scope(method):
        """TensorFlow's decorator: names ops after the module; names play no part here."""
        return method

    @classmethod
    def _collect(cls, value, found: dict, seen: set) -> None:
        if id(value) in seen:
            return
        seen.add(id(value))
        if isinstance(value, graph.Variable):
            found.setdefault(id(value), value)
        elif isinstance(value, Module):
            for k, v in sorted(vars(value).items()):
                if k != "_module_name":
                    cls._collect(v, found, seen)
        elif hasattr(value, "weights") and hasattr(value, "trainable_weights"):  # a Keras layer or model
            for w in value.weights:
                found.setdefault(id(w), w)
        elif isinstance(value, list | tuple):
            for v in value:
                cls._collect(v, found, seen)
        elif isinstance(value, dict):
            for _, v in sorted(value.items(), key=lambda kv: str(kv[0])):
                cls._collect(v, found, seen)
