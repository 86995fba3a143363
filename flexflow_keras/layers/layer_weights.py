"""A layer's weights: creating them (`add_weight`), listing them (`weights`, `trainable_weights`, ...,
`trainable`, which applies to every sublayer), the `losses` their regularizers and `add_loss` give,
reading and setting their values (`get_weights`, `set_weights`, `count_params`) and the per-layer store
that `.weights.h5` and `.keras` files write (`save_own_variables`, `load_own_variables`). `Layer`
(layers/base.py) inherits them.
"""

from __future__ import annotations

import math

import numpy as np

from flexflow_keras import constraints, initializers, regularizers
from flexflow_keras.errors import ShapeError
from flexflow_keras.layers import node as node_mod
from flexflow_keras.ops import penalty, tape
from flexflow_keras.ops.eager_tensor import eager
from flexflow_keras.ops.graph import Variable
from flexflow_keras.utils import naming


class LayerWeights:
    """The weights part of `Layer` (see the module docstring)."""

    def add_weight(self, *args, **kwargs) -> Variable:
        """Create a weight owned by this layer (usually from `build`).

        Args:
            shape: tuple of ints.
            initializer: name, Initializer or callable; ``glorot_uniform`` for float weights, ``zeros``
                otherwise when None.
            dtype: the weight's dtype (the layer's by default).
            trainable: whether optimizers update it.
            regularizer: a penalty added to the loss (name or Regularizer).
            constraint: a projection applied after each update (name or Constraint).
            name: the weight's name (``kernel``, ``bias``, ...).

        Keras 2's positional order ``add_weight(name, shape, dtype, initializer, ...)`` is accepted too.
        """
        if args and isinstance(args[0], str):
            order = ["name", "shape", "dtype", "initializer", "regularizer", "trainable", "constraint"]
        else:
            order = ["shape", "initializer", "dtype", "trainable", "autocast", "regularizer", "constraint",
                     "aggregation", "name"]
        if len(args) > len(order):
            raise TypeError(f"add_weight() of layer '{self.name}' takes at most {len(order)} positional "
                            f"arguments, received {len(args)}.")
        for key, value in zip(order, args, strict=False):
            if key in kwargs:
                raise TypeError(f"add_weight() of layer '{self.name}' got two values for {key!r}.")
            kwargs[key] = value
        allowed = {"shape", "initializer", "dtype", "trainable", "autocast", "regularizer", "constraint",
                   "aggregation", "name", "overwrite_with_gradient", "use_resource", "synchronization"}
        unknown = sorted(set(kwargs) - allowed)
        if unknown:
            raise TypeError(f"add_weight() of layer '{self.name}' got unexpected arguments {unknown}.")
        if kwargs.get("overwrite_with_gradient"):
            raise ValueError(f"add_weight() of layer '{self.name}': overwrite_with_gradient=True (float8 scaling "
                             "factors) is not supported; leave it False.")
        if kwargs.get("aggregation") not in (None, "none", "mean", "sum", "only_first_replica"):
            raise ValueError(f"add_weight() of layer '{self.name}' expects aggregation in 'none', 'mean', 'sum', "
                             f"'only_first_replica', received {kwargs['aggregation']!r}.")
        # unnamed: Keras 3's process-wide auto name ('variable', 'variable_1', ...; clear_session restarts it)
        name = kwargs.get("name") or naming.auto_name("Variable")
        shape = kwargs.get("shape")
        shape = () if shape is None else ((shape,) if isinstance(shape, int) else tuple(shape))
        if any(s is None or int(s) < 0 for s in shape):
            raise ShapeError(f"Layer '{self.name}': weight '{name}' needs a fully known shape, received "
                             f"shape={shape}. Build the layer with a known input shape.")
        dtype = str(np.dtype(kwargs.get("dtype") or self._dtype))
        init = kwargs.get("initializer")
        if init is None:
            init = "glorot_uniform" if np.dtype(dtype).kind == "f" else "zeros"
        init = initializers.get(init)
        trainable = bool(kwargs.get("trainable", True))
        scope = node_mod.current_path()
        prefix = scope if scope.split("/")[-1:] == [self.name] else "/".join(p for p in (scope, self.name) if p)
        var = Variable(name, shape, dtype, initializer=init, trainable=trainable,
                       regularizer=regularizers.get(kwargs.get("regularizer")),
                       constraint=constraints.get(kwargs.get("constraint")), path=f"{prefix}/{name}")
        (self._trainable_variables if trainable else self._non_trainable_variables).append(var)
        if not self._trainable:
            var.trainable = False
        return var

    @property
    def trainable(self) -> bool:
        """Whether training updates this layer's weights; setting it applies to every sublayer."""
        return self._trainable

    @trainable.setter
    def trainable(self, value) -> None:
        value = bool(value)
        self._trainable = value
        for v in self._trainable_variables:
            v.trainable = value
        for layer in self._sublayers():
            layer.trainable = value

    @property
    def weights(self) -> list[Variable]:
        """Own trainable, then own non-trainable weights, then those of sublayers (deduplicated)."""
        out, seen = [], set()
        for w in self._trainable_variables + self._non_trainable_variables:
            if id(w) not in seen:
                seen.add(id(w))
                out.append(w)
        for layer in self._sublayers():
            for w in layer.weights:
                if id(w) not in seen:
                    seen.add(id(w))
                    out.append(w)
        return out

    @property
    def trainable_weights(self) -> list[Variable]:
        return [v for v in self.weights if v.trainable] if self.trainable else []

    @property
    def non_trainable_weights(self) -> list[Variable]:
        return [v for v in self.weights if not v.trainable] if self.trainable else self.weights

    variables = weights
    trainable_variables = trainable_weights
    non_trainable_variables = non_trainable_weights

    @property
    def losses(self) -> list:
        """Keras' `losses`: the values `add_loss` recorded in the latest eager calls (of this layer and its
        sublayers) and the current regularization penalties of the trainable weights. Inside a model's
        ``compute_loss`` override (symbolic), the added loss tensors of the graph being trained."""
        from flexflow_keras.models import custom_training

        symbolic = custom_training.current_symbolic_losses(self)
        if symbolic is not None:
            return symbolic
        if tape.recording():  # penalties the tape differentiates (a custom loop's `loss += sum(model.losses)`)
            return custom_training.eager_losses(self) + [penalty.penalty(v) for v in self.trainable_weights
                                                         if v.regularizer is not None]
        # 0-d tensors of the weight's dtype, as Keras 3's (scripts call .numpy() / .shape on them)
        return custom_training.eager_losses(self) + [eager(np.asarray(v.regularizer(v.value), dtype=v.dtype))
                                                     for v in self.trainable_weights if v.regularizer is not None]

    def get_weights(self) -> list[np.ndarray]:
        """Copies of the values of `weights`, in order."""
        return [v.numpy() for v in self.weights]

    def set_weights(self, weights) -> None:
        """Set every weight from a list of arrays in the order of `weights`.

        Raises:
            ValueError: when the count or a shape differs; the message names the weight and its layer.
        """
        own = self.weights
        weights = list(weights)
        kind = "model" if hasattr(self, "_op_graph") else "layer"
        if len(weights) != len(own):
            listing = ", ".join(f"{v.path} {v.shape}" for v in own[:8]) + (", ..." if len(own) > 8 else "")
            raise ValueError(f"set_weights() on {kind} '{self.name}' expects {len(own)} arrays "
                             f"[{listing}], received {len(weights)}.")
        for i, (var, value) in enumerate(zip(own, weights, strict=False)):
            arr = np.asarray(value)
            if arr.shape != var.shape:
                owner = self._owner_of(var)
                where = f" (of layer '{owner.name}')" if owner is not None and owner is not self else ""
                raise ValueError(f"set_weights() on {kind} '{self.name}': weight {i} is '{var.path}'{where} with "
                                 f"shape {var.shape}, received an array of shape {arr.shape}.")
        for var, value in zip(own, weights, strict=False):
            var.assign(np.asarray(value))

    def _owner_of(self, var: Variable) -> LayerWeights | None:
        """The layer (this one or a sublayer, recursively) that created `var`."""
        if any(v is var for v in self._trainable_variables + self._non_trainable_variables):
            return self
        for layer in self._sublayers():
            owner = layer._owner_of(var)
            if owner is not None:
                return owner
        return None

    def count_params(self) -> int:
        """Number of scalars in `weights` (the layer must be built)."""
        if not self.built:
            raise ValueError(f"You tried to call count_params() on layer '{self.name}', but the layer isn't "
                             "built. Build it with layer.build(input_shape) or call it on data first.")
        return int(sum(math.prod(v.shape) for v in self.weights))

    def save_own_variables(self, store) -> None:
        """Keras 3: put this layer's own weights into `store` (a dict), under "0", "1", ... in the order
        trainable then non-trainable; model.save() and save_weights() write them (an override decides
        what its layer's entry holds, models/weights_io.write_layer_vars)."""
        for i, v in enumerate(list(self._trainable_variables) + list(self._non_trainable_variables)):
            store[str(i)] = v.numpy()

    def load_own_variables(self, store) -> None:
        """Keras 3: assign this layer's own weights from `store`, as `save_own_variables` wrote them."""
        own = list(self._trainable_variables) + list(self._non_trainable_variables)
        if len(store) != len(own):
            raise ValueError(f"Layer '{self.name}' ({type(self).__name__}) has {len(own)} own weights, but the "
                             f"store to load holds {len(store)} ({sorted(store)}). Load a file saved from the "
                             f"same architecture.")
        for i, v in enumerate(own):
            v.assign(store[str(i)])
