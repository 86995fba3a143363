"""`Sequential`: a linear stack of layers.

The input shape comes from an `Input`/`InputLayer` added first, from `input_shape=` (or `input_dim=`,
`batch_input_shape=`) on the first layer, from `build(input_shape)`, or, deferred, from the first data
the model sees (`model(x)`, or the training loop's `_op_graph(input_specs)`). Once the input shape is
known the layers are called on it symbolically and the model behaves as a functional model; adding or
popping a layer rebuilds it.
"""

from __future__ import annotations

import numpy as np

from flexflow_keras.layers import host_prefix
from flexflow_keras.layers import node as node_mod
from flexflow_keras.layers.base import Layer
from flexflow_keras.layers.eager import as_input, clone_graph
from flexflow_keras.layers.host_layer import HostLayer
from flexflow_keras.layers.input_layer import InputLayer
from flexflow_keras.layers.input_spec import InputSpec
from flexflow_keras.models import custom_training, layer_rerun, variable_dims
from flexflow_keras.models.functional import GraphIOMixin, check_specs
from flexflow_keras.models.keras2_methods import Keras2SequentialMethods
from flexflow_keras.models.model import Model
from flexflow_keras.ops.graph import STRING_DTYPES, KerasTensor, OpGraph
from flexflow_keras.utils import tree


class Sequential(Keras2SequentialMethods, GraphIOMixin, Model):
    """A model that applies its layers one after another.

    Args:
        layers: the layers, in order (an `Input` may come first).
        trainable: whether its weights are trained.
        name: the model's name (``sequential``, ``sequential_1``, ... by default).

    Example:
        >>> model = Sequential([Input(shape=(784,)), Dense(64, activation="relu"), Dense(10)])
        >>> model.add(Activation("softmax"))
    """

    _graph_network = True

    def __init__(self, layers=None, trainable=True, name=None, **kwargs):
        Layer.__init__(self, name=name, trainable=trainable, **kwargs)
        self._init_model_state()
        object.__setattr__(self, "_seq_layers", [])
        object.__setattr__(self, "_input_layer", None)
        object.__setattr__(self, "_implied_input", False)  # shape from build() or the first data, not an Input
        self._graph: OpGraph | None = None
        self._inputs: list[KerasTensor] = []
        self._outputs: list[KerasTensor] = []
        for layer in layers or []:
            self.add(layer, rebuild=False)
        self._maybe_rebuild()

    # --- editing ------------------------------------------------------------------------------------------
    def add(self, layer, rebuild: bool = True) -> None:
        """Append `layer` (or set the input, for an `Input` tensor or an `InputLayer`)."""
        if isinstance(layer, KerasTensor):
            hist = layer._keras_history
            if hist is not None and isinstance(hist.operation, InputLayer):
                layer = hist.operation
        if not isinstance(layer, Layer):
            raise ValueError(f"Only layers can be added to Sequential model '{self.name}'; received {layer!r} "
                             f"(of type {type(layer).__name__}).")
        if isinstance(layer, InputLayer):
            if self._input_layer is not None:
                raise ValueError(f"Sequential model '{self.name}' already has the input shape "
                                 f"{self._input_layer.batch_shape}; it cannot take another Input.")
            if self._seq_layers:
                raise ValueError(f"Sequential model '{self.name}': an Input can only be the first layer.")
            object.__setattr__(self, "_input_layer", layer)
            if rebuild:
                self._maybe_rebuild()
            return
        # the same layer may come again (shared: ``Sequential([dense, block, block])``), as Keras 3 allows
        if any(other.name == layer.name and other is not layer for other in self._seq_layers) or layer is self:
            raise ValueError(f"All layers added to Sequential model '{self.name}' need unique names; '{layer.name}' "
                             "is already the name of one of its layers. Pass a different name=.")
        if self._input_layer is None and not self._seq_layers and layer._batch_input_shape is not None:
            object.__setattr__(self, "_input_layer", InputLayer(batch_shape=tuple(layer._batch_input_shape)))
        self._seq_layers.append(layer)
        if layer not in self._layers:
            self._layers.append(layer)
        if rebuild:
            try:
                self._maybe_rebuild()
            except Exception:
                self._seq_layers.pop()
                self._untrack(layer)
                self._maybe_rebuild()
                raise

    def pop(self) -> Layer:
        """Remove and return the last layer."""
        if not self._seq_layers:
            raise TypeError(f"Sequential model '{self.name}' has no layers to pop.")
        layer = self._seq_layers.pop()
        self._untrack(layer)
        self._maybe_rebuild()
        return layer

    def _untrack(self, layer: Layer) -> None:
        """Stop tracking `layer` once the sequence no longer holds it (a shared layer may still be there)."""
        if layer in self._layers and not any(other is layer for other in self._seq_layers):
            self._layers.remove(layer)

    def _maybe_rebuild(self) -> None:
        self._traces.clear()
        self._last_trace = None
        self.__dict__.pop("_reshaped_graphs", None)  # graphs recorded for other lengths: of the old stack
        self.__dict__.pop("_specialized_graphs", None)
        if self._input_layer is None and len(self._seq_layers) > 1:
            self._take_first_model_input()
        if self._input_layer is not None and self._seq_layers:
            self._build_graph()
        else:
            self._graph, self._inputs, self._outputs = None, [], []
            self.built = False

    def _take_first_model_input(self) -> None:
        """Keras 3 builds a Sequential of two layers or more whose first layer is a model with a known input
        (a built Sequential, a functional model) on that input: TensorFlow's image classification tutorial
        puts a `data_augmentation` Sequential with an `input_shape=` first in its model. The Input takes the
        inner model's dtype (Keras gives float32 and casts inside), so integer ids stay integers."""
        first = self._seq_layers[0]
        if not isinstance(first, GraphIOMixin) or getattr(first, "_graph", True) is None:
            return
        inputs = first._inputs
        if len(inputs) != 1:
            return
        object.__setattr__(self, "_input_layer", InputLayer(batch_shape=tuple(inputs[0].shape), dtype=inputs[0].dtype))

    def _build_graph(self) -> None:
        x = self._input_layer._tensor
        node_mod.push_scope(self.name)
        try:
            for layer in self._seq_layers:
                x = layer(x)
                if not isinstance(x, KerasTensor):
                    raise ValueError(f"Layers in Sequential model '{self.name}' must have one output; layer "
                                     f"'{layer.name}' returned {type(x).__name__}. Use a functional Model.")
        finally:
            node_mod.pop_scope()
        self._inputs, self._outputs = [self._input_layer._tensor], [x]
        # leading TextVectorization / StringLookup run on the host, in front of the graph (layers/host_prefix.py)
        self._inputs, self._host_prefix = host_prefix.split_inputs(self.name, self._inputs, self._outputs)
        self._graph = OpGraph(self._inputs, self._outputs)
        self._set_input_spec(self._inputs)
        self.built = True

    def build(self, input_shape=None) -> None:
        """Set the input shape (batch dim included, e.g. ``(None, 784)``) and build every layer."""
        if self._input_layer is None:
            if input_shape is None:
                raise ValueError(f"Sequential model '{self.name}' has no input shape: pass build(input_shape), "
                                 "add an Input first, or give input_shape= to the first layer.")
            shape = tuple(input_shape[0]) if isinstance(input_shape, list) else tuple(input_shape)
            dtype = _build_dtype(self._seq_layers[0]) if self._seq_layers else None
            object.__setattr__(self, "_input_layer", InputLayer(batch_shape=(None,) + shape[1:], dtype=dtype))
            object.__setattr__(self, "_implied_input", True)
        self._maybe_rebuild()

    def _ensure_built(self, shape, dtype: str) -> None:
        if self._graph is not None:
            return
        if not self._seq_layers:
            raise ValueError(f"Sequential model '{self.name}' has no layers.")
        if self._input_layer is None:
            # Integer data keeps its dtype only for a first layer that takes ids (Embedding); text is for a
            # first host layer (TextVectorization), numbers too (IntegerLookup)
            if dtype in STRING_DTYPES or np.dtype(dtype).kind in "OSU":
                dtype = "string"
            elif np.dtype(dtype).kind in "iub" and not self._seq_layers[0]._accepts_int_inputs \
                    and not isinstance(self._seq_layers[0], HostLayer):
                dtype = self._dtype
            object.__setattr__(self, "_input_layer", InputLayer(batch_shape=(None,) + tuple(shape[1:]), dtype=dtype))
            object.__setattr__(self, "_implied_input", True)
        self._maybe_rebuild()

    # --- structure ----------------------------------------------------------------------------------------
    @property
    def layers(self) -> list[Layer]:
        return list(self._seq_layers)

    @layers.setter
    def layers(self, _):
        raise AttributeError("`Model.layers` is reserved and cannot be assigned; use add() and pop().")

    @property
    def input_shape(self):
        """The input shape, batch dim included; AttributeError until the input is known, as in Keras 3."""
        if self._graph is None:
            raise AttributeError(f"Sequential model '{self.name}' has no defined input shape yet.")
        return super().input_shape

    @property
    def output_shape(self):
        """The output shape, batch dim included; AttributeError until the input is known, as in Keras 3."""
        if self._graph is None:
            raise AttributeError(f"Sequential model '{self.name}' has no defined output shape yet.")
        return super().output_shape

    def _sublayers(self) -> list[Layer]:
        return list(self._seq_layers)

    @property
    def output_names(self) -> list[str]:
        return [self._seq_layers[-1].name] if self._outputs else []

    # Keras 3 gives a Sequential the layer accessors (its first call's tensors in the graph that called it), not
    # a Functional's: keras.Model(outer.inputs, seq.output) reaches that call. One never called as a layer keeps
    # its own graph's tensors (Keras 2; Keras 3 raises there).
    @property
    def input(self):
        """The symbolic input of this model's first call as a layer, else its own graph's input."""
        return Layer.input.fget(self) if self._inbound_nodes else GraphIOMixin.input.fget(self)

    @property
    def output(self):
        """The symbolic output of this model's first call as a layer, else its own graph's output."""
        return Layer.output.fget(self) if self._inbound_nodes else GraphIOMixin.output.fget(self)

    def _set_input_spec(self, inputs) -> None:
        if not self._implied_input:
            return super()._set_input_spec(inputs)
        # built from data or build(): Keras runs the layers on other lengths too (a sequence model trained at
        # one length predicts at another), so only the rank and the features are fixed
        shape = tuple(inputs[0].shape)
        ids = np.dtype(inputs[0].dtype).kind in "iu" if inputs[0].dtype != "string" else True
        fixed = {-1: shape[-1]} if shape[-1] is not None and not ids else None  # ids: the last axis is the length
        self.input_spec = [InputSpec(ndim=len(shape), axes=fixed)]

    def _reshaped(self, shapes) -> OpGraph | None:
        """The graph recorded again at other non-batch sizes (an implied input only; cached per shape)."""
        want = (None,) + tuple(shapes[0][1:])
        if not self._implied_input or tuple(self._inputs[0].shape) == want:
            return None
        if getattr(self, "_host_prefix", None) is not None:
            return None
        cache = self.__dict__.setdefault("_reshaped_graphs", {})
        if want not in cache:  # the layers called again on the new shape (ops may hold the old sizes)
            new = KerasTensor(want, self._inputs[0].dtype, name=self._inputs[0].name)
            x = new
            node_mod.push_scope(self.name)
            try:
                for layer in self._seq_layers:
                    x = layer(x)
            finally:
                node_mod.pop_scope()
            cache[want] = OpGraph([new], [x])
        return cache[want]

    def _op_graph(self, input_specs=None) -> OpGraph:
        if self._graph is None:
            if not input_specs:
                raise ValueError(f"Sequential model '{self.name}' has no input shape yet: add an Input first, pass "
                                 "input_shape= to the first layer, call model.build(input_shape), or pass data.")
            if len(input_specs) != 1:
                raise ValueError(f"Sequential model '{self.name}' takes one input, received specs for "
                                 f"{len(input_specs)}.")
            self._ensure_built(tuple(input_specs[0].shape), str(input_specs[0].dtype))
        elif input_specs is not None:
            other = self._reshaped([tuple(s.shape) for s in input_specs]) if len(input_specs) == 1 else None
            if other is not None:
                return self._current(other)
            check_specs(self, input_specs, self._inputs)
            concrete = variable_dims.specialized(self, self._graph, self._inputs, input_specs)
            if concrete is not None:  # Input(shape=(None, ...)): the graph at the data's sample shape
                return self._current(concrete)
        return self._current(self._graph)

    # --- calling ------------------------------------------------------------------------------------------
    def _ensure_host_prefix(self, sample) -> None:
        """Build on `sample` data (arrays, or a batch) when the first layer is a host layer and the model
        has no input yet: the host prefix must exist before the data is converted for the graph."""
        if self._graph is not None or not self._seq_layers or not isinstance(self._seq_layers[0], HostLayer):
            return
        x = np.asarray(tree.flatten(sample)[0])
        self._ensure_built(x.shape if x.ndim else (None,), str(x.dtype))

    def __call__(self, *args, **kwargs):
        if args and self._one_unbatched_image(args[0]):
            # Keras 3's image preprocessing layers take one (height, width, channels) image: keras.io's and
            # Hands-On ML's `ds.map(lambda X, y: (preprocess(X), y))` before batching
            return super().__call__(np.asarray(args[0])[None], *args[1:], **kwargs)[0]
        if args and not any(isinstance(t, KerasTensor) for t in tree.flatten(args[0])):
            self._ensure_host_prefix(args[0])
            prefix = getattr(self, "_host_prefix", None)
            if prefix is not None:
                args = (prefix(args[0]),) + args[1:]
        if self._graph is not None:  # built: Keras 3 runs its Functional, which adjusts the input rank
            args = self._rank_adjusted(args, getattr(self, "_host_prefix", None))
        return super().__call__(*args, **kwargs)

    def _one_unbatched_image(self, x) -> bool:
        """Whether an eager call's input is one image without its batch axis: rank 3 for a Sequential whose
        input is implied (no Input) and that holds an image preprocessing layer, which Keras 3 runs on
        one image (the model is then built for batches of such images)."""
        if isinstance(x, (KerasTensor, list, tuple, dict)) or not hasattr(x, "shape") or len(x.shape) != 3:
            return False
        if self._graph is None:
            if self._input_layer is not None or not any(
                    getattr(layer, "_takes_unbatched_images", False) for layer in self._seq_layers):
                return False
            x = np.asarray(x)
            keep = str(x.dtype) in STRING_DTYPES or x.dtype.kind in "iub"
            self._ensure_built((None,) + tuple(x.shape), str(x.dtype) if keep else self._dtype)
            object.__setattr__(self, "_unbatched_images", True)
            return True
        return getattr(self, "_unbatched_images", False) and len(self._inputs[0].shape) == 4

    def _maybe_build(self, inputs) -> None:
        x = tree.flatten(inputs)[0]
        if self._graph is None:
            dtype = str(np.asarray(x).dtype) if not isinstance(x, KerasTensor) else x.dtype
            keep = dtype in STRING_DTYPES or np.dtype(dtype).kind in "iubOSU"
            self._ensure_built(tuple(np.shape(x) if not isinstance(x, KerasTensor) else x.shape),
                               dtype if keep else self._dtype)
        self.built = True

    def call(self, inputs, training=None, mask=None):
        prefix = getattr(self, "_host_prefix", None)
        if prefix is not None and any(isinstance(t, KerasTensor) for t in tree.flatten(inputs)):
            return clone_graph(self._graph, prefix.symbolic(self._standardize_inputs(inputs, prefix.declared)))[0]
        flat = self._standardize_inputs(inputs, self._inputs)
        if isinstance(flat[0], KerasTensor):
            layer_rerun.attach_masks(flat, mask)
            if layer_rerun.needs_rerun(flat):  # Keras 3 runs the layers on a masked tensor (models/layer_rerun.py)
                x = flat[0]
                for layer in self._seq_layers:
                    x = layer(x)
                return x
            return variable_dims.clone_with_losses(self, self._graph, flat)[0]
        arr = as_input(flat[0], self._inputs[0].dtype)
        graph = self._reshaped([np.shape(arr)]) or self._graph
        return custom_training.run_eager(self, self._current(graph), [arr], custom_training.eager_mode(training))[0]

    def _convert_eager(self, inputs):
        return inputs

    def get_config(self) -> dict:
        from flexflow_keras.layers import serialize

        config = {"name": self.name, "trainable": self.trainable,
                  "layers": [serialize(layer) for layer in self._seq_layers]}
        if self._input_layer is not None:
            config["build_input_shape"] = self._input_layer.batch_shape
            config["input_dtype"] = self._input_layer.dtype
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        from flexflow_keras.layers import deserialize

        config = dict(config)
        layer_configs = config.pop("layers", [])
        shape = config.pop("build_input_shape", None)
        dtype = config.pop("input_dtype", None)
        model = cls(name=config.get("name"), trainable=config.get("trainable", True))
        if shape is not None:
            model.add(InputLayer(batch_shape=tuple(shape), dtype=dtype), rebuild=False)
        for lc in layer_configs:
            model.add(deserialize(lc, custom_objects=custom_objects), rebuild=False)
        model._maybe_rebuild()
        return model


def _build_dtype(first) -> str | None:
    """The Input dtype Keras 3's Sequential.build gives the model, its first layer's compute dtype: text for
    TextVectorization and StringLookup, int64 for IntegerLookup and Hashing; None (the float default) for
    the others. keras.io's multi_label_trainer_tfidf builds Sequential([TextVectorization, Dense, ...])."""
    from flexflow_keras.layers.hashing import Hashing
    from flexflow_keras.layers.index_lookup import IntegerLookup, StringLookup
    from flexflow_keras.layers.text_vectorization import TextVectorization

    if isinstance(first, (TextVectorization, StringLookup)):
        return "string"
    if isinstance(first, (IntegerLookup, Hashing)):
        return "int64"
    return None
