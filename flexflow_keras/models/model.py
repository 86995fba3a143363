"""`Model`: a layer with a training loop (`Trainer`), plus what the training loop needs from it.

`Model(inputs, outputs)` returns a functional model (models/functional.py); `Sequential` is in
models/sequential.py; a subclass of `Model` that defines `call()` is traced symbolically on first use
with the data's shapes.

The seam with the training loop (models/training.py) is `_op_graph`:

    model._op_graph(input_specs=None) -> OpGraph

returns the forward operator graph between the model's input tensors and its output tensors (in the
order of `input_names` / `output_names`). Functional and built Sequential models have one graph and
`input_specs` is only checked against it. Subclassed models and Sequential models without an input
shape need `input_specs` (a list of TensorSpec, batch dim None, one per input) the first time; the graph
is traced then and cached per specs, so the same specs return the same OpGraph object, until a layer's
state changes what its op records (setting a BatchNormalization's `trainable` gives a graph whose op
uses the moving statistics; setting it back gives the first graph again). Adding or popping Sequential
layers gives a new graph. Besides it, the loop uses `inputs`, `outputs`, `input_names`, `output_names`,
`weights`, `trainable_weights`, `non_trainable_weights` and `name`, and the state `_init_model_state`
sets (`compiled`, `optimizer`, `stop_training`, `history`, `_engine`, `_engine_key`).
"""

from __future__ import annotations

import logging

from flexflow_keras.errors import GraphError, ShapeError
from flexflow_keras.layers import auto_config, call_memo
from flexflow_keras.layers import node as node_mod
from flexflow_keras.layers.base import Layer
from flexflow_keras.layers.input_spec import InputSpec
from flexflow_keras.models import call_mode
from flexflow_keras.models.keras2_methods import Keras2TrainingMethods
from flexflow_keras.models.model_metrics import ModelMetrics
from flexflow_keras.ops.graph import (
    INFERENCE_IDENTITY,
    KerasTensor,
    OpGraph,
    TensorSpec,
    same_graph,
    user_shape,
)
from flexflow_keras.utils import tree

try:
    from flexflow_keras.models.training import Trainer
except ModuleNotFoundError as exc:  # the training loop is developed separately; models work without it
    if exc.name != "flexflow_keras.models.training":
        raise

    class Trainer:  # type: ignore[no-redef]
        """Stand-in used only when models/training.py is absent: training calls say so."""

        def _missing(self, *args, **kwargs):
            raise RuntimeError("The training loop (flexflow_keras/models/training.py) is not installed, so "
                               "compile/fit/evaluate/predict are unavailable.")

        compile = fit = evaluate = predict = train_on_batch = test_on_batch = predict_on_batch = _missing

log = logging.getLogger("flexflow_keras")


def _functional_args(args, kwargs) -> bool:
    return len(args) == 2 or (len(args) == 1 and "outputs" in kwargs) or ("inputs" in kwargs
                                                                         and "outputs" in kwargs)


class Model(ModelMetrics, Keras2TrainingMethods, Trainer, Layer):
    """A group of layers with training and inference features.

    Build one functionally, ``Model(inputs, outputs)``, or subclass it and define `call()`:

    Example:
        >>> inputs = Input(shape=(784,))
        >>> outputs = Dense(10, activation="softmax")(Dense(64, activation="relu")(inputs))
        >>> model = Model(inputs, outputs)

        >>> class MLP(Model):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.hidden = Dense(64, activation="relu")
        ...         self.out = Dense(10)
        ...     def call(self, x, training=False):
        ...         return self.out(self.hidden(x))
    """

    _graph_network = False  # True for Sequential and functional models
    _accepts_int_inputs = True  # a model passes integer data on; its layers convert what they need

    def __new__(cls, *args, **kwargs):
        from flexflow_keras.execution.context import check_before_work

        check_before_work()  # a mistyped flag stops the script here, before it trains
        if cls is Model and _functional_args(args, kwargs):
            from flexflow_keras.models.functional import Functional

            return object.__new__(Functional)
        instance = object.__new__(cls)
        # a subclass's constructor arguments, for its default get_config (Keras 3's automatic config)
        instance.__dict__["_ff_auto_config"] = auto_config.capture(cls, args, kwargs)
        return instance

    def __init__(self, *args, **kwargs):
        from flexflow_keras.models.functional import Functional, functional_subclass

        if _functional_args(args, kwargs) and not isinstance(self, Functional):
            # A Model subclass whose __init__ calls super().__init__(inputs, outputs).
            object.__setattr__(self, "__class__", functional_subclass(type(self)))
            Functional.__init__(self, *args, **kwargs)
            return
        if args:
            raise TypeError(f"Model() takes inputs and outputs, or only keyword arguments; received "
                            f"{len(args)} positional argument(s).")
        Layer.__init__(self, **kwargs)
        self._init_model_state()

    def _init_model_state(self) -> None:
        # State the training loop (Trainer) reads before compile() sets it.
        self.compiled = False
        self.optimizer = None
        self.stop_training = False
        self.history = None
        self._engine = None
        self._engine_key = None
        if "__init__" in Trainer.__dict__:  # the training loop may add state of its own
            Trainer.__init__(self)
        # Traces of a subclassed model: specs -> (inputs, outputs structure, OpGraph).
        self._traces: dict[tuple, tuple[list[KerasTensor], object, OpGraph]] = {}
        self._last_trace: tuple[list[KerasTensor], object, OpGraph] | None = None
        self._refreshed: dict = {}  # graphs updated for layers' current state (see _current)

    # --- structure ----------------------------------------------------------------------------------------
    @property
    def layers(self) -> list[Layer]:
        """The model's layers (for a subclassed model: the layers assigned to its attributes, in order)."""
        return list(self._layers)

    @layers.setter
    def layers(self, _):
        raise AttributeError("`Model.layers` is reserved and cannot be assigned; use another attribute name.")

    def get_layer(self, name: str | None = None, index: int | None = None) -> Layer:
        """A layer by name or by index in `layers`.

        Raises:
            ValueError: for an unknown name (listing the existing ones) or an index out of range.
        """
        if name is not None and index is not None:
            raise ValueError(f"get_layer() takes a layer name or an index, not both; received name={name!r}, "
                             f"index={index!r}.")
        layers = self.layers
        if index is not None:
            if not -len(layers) <= index < len(layers):
                raise ValueError(f"get_layer(index={index}): model '{self.name}' has only {len(layers)} layers.")
            return layers[index]
        if name is not None:
            for layer in layers:
                if layer.name == name:
                    return layer
            raise ValueError(f"No such layer: {name}. Existing layers are: {[layer.name for layer in layers]}.")
        raise ValueError("get_layer() needs a layer name or an index, e.g. get_layer('dense') or get_layer(index=0).")

    @property
    def inputs(self) -> list[KerasTensor]:
        """The symbolic input tensors (a subclassed model: those of its last trace)."""
        return list(self._last_trace[0]) if self._last_trace else []

    @property
    def outputs(self) -> list[KerasTensor]:
        return tree.flatten(self._last_trace[1]) if self._last_trace else []

    @property
    def input_names(self) -> list[str]:
        return [t.name for t in self.inputs]

    @property
    def output_names(self) -> list[str]:
        if not self._last_trace:
            return []
        structure = self._last_trace[1]
        if isinstance(structure, dict):
            return list(structure)
        n = len(tree.flatten(structure))
        return ["output"] if n == 1 else [f"output_{i}" for i in range(n)]

    @property
    def input_shape(self):
        shapes = [user_shape(t) for t in self.inputs]
        return shapes[0] if len(shapes) == 1 else shapes

    @property
    def output_shape(self):
        shapes = [user_shape(t) for t in self.outputs]
        return shapes[0] if len(shapes) == 1 else shapes

    def _pack_outputs(self, flat: list):
        """Arrays of the graph's outputs in the structure call() returns, as Keras 3's predict gives them (a
        dict of outputs as a dict, nested lists as nested lists); one output is one array."""
        structure = self._last_trace[1] if self._last_trace else None
        if structure is None or len(tree.flatten(structure)) != len(flat):
            return flat[0] if len(flat) == 1 else flat
        return tree.pack_as(structure, flat)

    # --- the seam with the training loop ------------------------------------------------------------------
    def _op_graph(self, input_specs=None) -> OpGraph:
        """The forward OpGraph (see the module docstring for the contract); in evaluate and predict the
        training=False graph of a call() that records other ops with it (models/call_mode.py)."""
        if input_specs is None:
            if self._last_trace is None:
                raise ValueError(f"Model '{self.name}' has not been built yet, so its input shapes are unknown. "
                                 "Call it on data, call model.build(input_shape), or pass data to fit().")
            return self._current(self._inference_of(self._last_trace[2]))
        key = tuple(TensorSpec((None,) + tuple(s.shape[1:]), str(s.dtype)) for s in input_specs)
        if key not in self._traces:
            self._traces[key] = self._trace(key)
        self._last_trace = self._traces[key]
        return self._current(self._inference_of(self._last_trace[2]))

    def _inference_of(self, graph: OpGraph) -> OpGraph:
        """`graph`, or in evaluate and predict the training=False graph recorded beside it (`_trace`,
        models/call_mode.py)."""
        pair = self.__dict__.get("_inference_graphs", {}).get(id(graph))
        return pair[1] if call_mode.inference() and pair is not None and pair[0] is graph else graph

    def _swap_inference_engine(self, entering: bool) -> None:
        """Entering evaluate or predict, an engine built on a training=True graph that has a training=False
        one beside it is handed back (its shape variants would run the training graph); leaving them, one
        built on a training=False graph is. Their optimizer slots are kept for the next engine
        (`_trained_slots`), so Adam's moments go on across fit, predict, fit."""
        pairs = self.__dict__.get("_inference_graphs")
        key = self._engine_key
        if not pairs or key is None:
            return
        on_inference = key[0] in {id(p[1]) for p in pairs.values()}
        if on_inference != entering:
            self.__dict__["_ff_kept_slots"] = self._trained_slots()
            self._detach_engine()

    def _trained_slots(self):
        kept = self.__dict__.pop("_ff_kept_slots", None)  # those an inference engine held (above)
        return kept if kept is not None else super()._trained_slots()

    def _current(self, graph: OpGraph) -> OpGraph:
        """`graph` with every op matching its layer's current state (e.g. a BatchNormalization frozen
        after the graph was recorded uses its moving statistics); the same state, the same object."""
        from flexflow_keras.layers.eager import refresh_graph

        return refresh_graph(graph, self._refreshed)

    def _trace(self, specs: tuple[TensorSpec, ...]):
        """(inputs, outputs, graph) of call() on inputs of `specs`. A call() that takes `training` is traced
        with training=True, as Keras' train_step calls it, so a Python branch on it (``if training: x =
        self.dropout(x)``) is in the graph fit trains; evaluate and predict run the same graph with its
        layers in inference mode (Dropout off, BatchNorm on its moving statistics), which is what Keras
        computes unless the branch holds something else (a softmax only at inference): call() is traced
        with training=False too, and a graph with other ops (beyond Dropout and the noise layers, which
        pass their input through at inference) is kept for evaluate, predict and fit's validation."""
        forward = self
        if type(self).call is Layer.call:
            forward = self._wrapped_forward()
        takes_training = "training" in getattr(forward, "_call_params", ())
        # Keras' train_step calls self(x, training=True) only where call() takes `training`, else self(x),
        # whose layers then run in inference; a custom train_step is taken to call self(x, training=True)
        from flexflow_keras.models.step_hooks import overrides

        trace = self._record(forward, specs, True if takes_training or overrides(self, "train_step") else None)
        inference = self._record(forward, specs, False) if takes_training else None
        if inference is not None and not same_graph(trace[2], inference[2], INFERENCE_IDENTITY):
            # evaluate and predict run the training=False graph, as Keras calls call(x, training=False) there
            self.__dict__.setdefault("_inference_graphs", {})[id(trace[2])] = (trace[2], inference[2])
            log.debug("Model '%s': call() records other ops with training=False than with training=True; fit "
                      "trains the training=True graph, and evaluate, predict and fit's validation run the "
                      "training=False one, as Keras does.", self.name)
        return trace

    def _record(self, forward, specs, training):
        from flexflow_keras.layers.input_layer import Input

        structure = self.__dict__.get("_input_structure")  # the data's: a dict or list of inputs (models/training_data.py)
        keys = structure[1] if structure and structure[0] == "dict" and len(structure[1]) == len(specs) else None
        names = list(keys) if keys else ([f"{self.name}_input"] if len(specs) == 1 else
                                         [f"{self.name}_input_{i}" for i in range(len(specs))])
        inputs = [Input(batch_shape=s.shape, dtype=s.dtype, name=n) for s, n in zip(specs, names, strict=False)]
        kwargs = {} if training is None else {"training": training}
        given = dict(zip(keys, inputs, strict=True)) if keys else (inputs[0] if len(inputs) == 1 else list(inputs))
        # the layers' `training` resolved as Keras 3 does, their ops fixed in inference where it is not True
        with call_memo.recording() as memo, node_mod.keras_training(fixes=training is not False):
            outputs = forward(given, **kwargs)
        self.__dict__.setdefault("_call_memos", {})[tuple(t.uid for t in inputs)] = memo
        graph = OpGraph(inputs, tree.flatten(outputs))
        return inputs, outputs, graph

    def _wrapped_forward(self):
        """The forward of a subclassed model without call(): the one model it wraps when its own train_step
        predicts through it (Keras 2's trainer pattern: ``self.model = model``, ``y_pred = self.model(x)``
        in train_step; Keras 3 trains such a model); anything else is a GraphError saying to add call()."""
        wrapped = [(n, v) for n, v in vars(self).items() if isinstance(v, Layer) and not n.startswith("_")]
        models = [(n, v) for n, v in wrapped if isinstance(v, Model)]
        steps = any("train_step" in vars(c) for c in type(self).__mro__ if c is not Model and issubclass(c, Model))
        if steps and len(models) == 1:
            name, model = models[0]
            log.info("Model '%s' has no call(): it trains, evaluates and predicts through self.%s ('%s'), the "
                     "model its train_step wraps", self.name, name, model.name)
            return model
        attr = (models or wrapped or [("model", None)])[0][0]
        why = f" (its train_step wraps {len(models)} models: which one predicts is not clear)" if steps and models else ""
        raise GraphError(f"Model '{self.name}' ({type(self).__name__}) has no call() method: flexflow_keras builds "
                         f"the graph it trains, evaluates and predicts with from call(){why}. Add `def call(self, "
                         f"inputs, training=False): return self.{attr}(inputs, training=training)` or whatever "
                         f"computes the outputs.")

    def _maybe_build(self, inputs) -> None:
        if self.built:
            return
        if type(self).build is not Model.build:  # the subclass defines its own build()
            Layer._maybe_build(self, inputs)
        if self._build_input_shape is None:  # the first call's shapes: the build_config Keras 3 saves
            self._build_input_shape = tree.map_structure(lambda x: tuple(x.shape) if hasattr(x, "shape") else None,
                                                         inputs)
        self.built = True

    def build(self, input_shape=None) -> None:
        """Trace the model for inputs of `input_shape` (a shape tuple, or a list of them). Reached from a
        subclass's own build() (``super().build(input_shape)``, keras.io's Perceiver, whose build() makes its
        sub-models), it only marks the model built, as Keras 3's Layer.build: tracing there called the model,
        whose unfinished build ran again, without end (RecursionError). The graph is traced when it is
        called or trained."""
        from flexflow_keras import backend

        if type(self).build is not Model.build:
            self.built = True
            return
        if input_shape is None:
            raise ValueError(f"Model '{self.name}'.build() needs an input shape, e.g. build((None, 784)).")
        shapes = input_shape if isinstance(input_shape, list) else [input_shape]
        self._op_graph([TensorSpec(tuple(s), backend.floatx()) for s in shapes])

    def _summary_layers(self):
        """(layers to list, whether the table is sequential-like, ids of the relevant nodes or None)."""
        return self.layers, True, None

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """The total loss on symbolic tensors: compiled losses (batch means) plus added losses. Override it
        to define the training loss (Keras 3's hook); flexflow_keras calls it on symbolic x, y and y_pred
        when it builds the training graph, so compose keras.ops.

        Args:
            x, y, y_pred: the inputs, labels and predictions. sample_weight: None, or (in an override's
                step graph, when fit/evaluate have sample or class weights) the symbolic weights, per
                sample or per timestep; each loss is ``sum(loss * w) / elements``. training: whether
                this is a training step.
        """
        from flexflow_keras.models.custom_training import default_compute_loss

        return default_compute_loss(self, x, y, y_pred, sample_weight)

    def compiled_loss(self, y, y_pred, sample_weight=None, regularization_losses=None):
        """Keras 2's spelling, kept by Keras 3's TensorFlow backend: ``compute_loss(None, y, y_pred,
        sample_weight)``. `regularization_losses` (Keras 2's ``self.losses``) is accepted and not added
        again: compute_loss already includes the added losses, and weight penalties apply in the update."""
        del regularization_losses
        return self.compute_loss(x=None, y=y, y_pred=y_pred, sample_weight=sample_weight)

    @property
    def compiled_metrics(self):
        """Keras 2's metric container of a custom train_step (``self.compiled_metrics.update_state(y,
        y_pred)``). The compiled metrics are computed by the step graph itself, so its update_state does
        nothing more in a traced train_step (which ends at its loss); called with arrays, from a
        `compute_metrics` override, it updates them."""
        return _CompiledMetrics(self)

    def train_step(self, data):
        """Keras 3's default step on symbolic `data` (x, y[, sample_weight]): predictions and
        `compute_loss`. fit() traces an override of it up to its compute_loss call (see
        models/step_hooks.py), so ``super().train_step(data)`` works inside one.

        Args:
            data: a tuple (x, y) or (x, y, sample_weight) of symbolic tensors.
        """
        from flexflow_keras.models.step_hooks import default_step

        return default_step(self, data, True)

    def test_step(self, data):
        """As `train_step`, in inference mode (evaluate).

        Args:
            data: a tuple (x, y) or (x, y, sample_weight) of symbolic tensors.
        """
        from flexflow_keras.models.step_hooks import default_step

        return default_step(self, data, False)

    # --- inspection and persistence -----------------------------------------------------------------------
    def summary(self, line_length=None, positions=None, print_fn=None, expand_nested=False,
                show_trainable=False, layer_range=None) -> None:
        """Print Keras' summary table: layers, output shapes, parameter counts (and connections).

        Args:
            line_length: total width (default: 88, or 108 with connections, capped by the terminal).
            positions: column boundaries as fractions of the line.
            print_fn: called once with the whole text instead of printing to stdout.
            expand_nested: also list the layers of nested models.
            show_trainable: add a column saying whether each layer is trainable.
            layer_range: two layer names (or regexes) bounding the rows shown.
        """
        from flexflow_keras.models.summary import print_summary

        print_summary(self, line_length, positions, print_fn, expand_nested, show_trainable, layer_range)

    def save_weights(self, filepath, overwrite=True, **kwargs) -> None:
        """Save every weight to `filepath` (``.weights.h5``, Keras 3's layout, or ``.npz``).

        Args:
            filepath: a path ending in ``.weights.h5`` or ``.npz``.
            overwrite: replace an existing file.
        """
        from flexflow_keras.execution.distributed import on_rank0
        from flexflow_keras.models.weights_io import save_weights

        on_rank0(save_weights, self, filepath, overwrite=overwrite)  # under MPI rank 0 writes

    def save(self, filepath, overwrite=True, zipped=None, **kwargs) -> None:
        """Save the whole model (config, weights, compile state and optimizer slots) to a ``.keras``
        file, Keras 3's format; written to a temporary file and renamed, so a crash keeps the old file.

        Args:
            filepath: a path ending in ``.keras``.
            overwrite: replace an existing file.
            zipped: accepted for Keras compatibility (only zipped files are written).
        """
        from flexflow_keras.execution.distributed import on_rank0
        from flexflow_keras.saving import save_model

        on_rank0(save_model, self, filepath, overwrite=overwrite, zipped=zipped, **kwargs)  # MPI: rank 0 writes

    def export(self, filepath, format="tf_saved_model", verbose=None, **kwargs) -> None:  # noqa: A002
        """Keras 3's serving export (a TensorFlow SavedModel, ONNX or OpenVINO artifact): not written by
        flexflow_keras, which has no TensorFlow graph to serialize; raises a SavingError saying how to get one."""
        from flexflow_keras.saving.errors import SavingError

        raise SavingError(f"Model '{self.name}'.export({str(filepath)!r}, format={format!r}): flexflow_keras cannot "
                          f"write a {format} artifact (it runs no TensorFlow graph to serialize). Save the model "
                          f"with model.save('name.keras'), then in TensorFlow's Keras 3 call "
                          f"keras.saving.load_model('name.keras').export(...) (the .keras file crosses); to keep "
                          f"serving here, load it with keras.saving.load_model and call predict().")

    def load_weights(self, filepath, skip_mismatch=False, **kwargs) -> None:
        """Load weights saved by `save_weights` (or by tf.keras' ``save_weights``).

        Args:
            filepath: a ``.weights.h5`` or ``.npz`` file.
            skip_mismatch: skip (and log) layers whose weights do not match instead of raising.
        """
        from flexflow_keras.models.weights_io import load_weights

        load_weights(self, filepath, skip_mismatch=skip_mismatch)

    def _input_hint(self, index, shape, spec):
        want = spec.shape[1:] if spec.shape else None
        got = shape[1:]
        if want and all(w is not None for w in want) and all(g is not None for g in got):
            import math

            if math.prod(want) == math.prod(got):
                return f" Reshape the data with x.reshape(-1, {', '.join(str(w) for w in want)})?"
        return ""

    def _set_input_spec(self, inputs) -> None:
        self.input_spec = [InputSpec(shape=t.shape) for t in inputs]

    def _standardize_inputs(self, inputs, expected: list[KerasTensor]) -> list:
        """The call's inputs as a flat list ordered like `expected` (dicts by the keys of the dict of Inputs
        the model was built on, as Keras 3, else by input name)."""
        if isinstance(inputs, dict):
            struct = self.__dict__.get("_input_struct")  # Model(inputs={"latent_array": Input(...), ...})
            if isinstance(struct, dict) and all(k in inputs for k in struct):
                by_uid = {getattr(t, "uid", None): inputs[k] for k, t in struct.items()}
                if all(t.uid in by_uid for t in expected):
                    return [by_uid[t.uid] for t in expected]
            names = [t.name for t in expected]
            missing = [n for n in names if n not in inputs]
            if missing:
                raise ValueError(f"Model '{self.name}' was called with a dict missing inputs {missing}; its "
                                 f"inputs are {names}.")
            return [inputs[n] for n in names]
        flat = tree.flatten(inputs)
        if len(flat) != len(expected):
            raise ShapeError(f"Model '{self.name}' expects {len(expected)} input(s) "
                             f"{[t.name for t in expected]}, received {len(flat)}.")
        return flat

    def get_config(self) -> dict:
        """Name and trainable; for a subclass that keeps this default, also the plain constructor arguments
        it was built with (Keras 3's automatic config, layers/auto_config.py)."""
        return auto_config.default_config(self, {"name": self.name, "trainable": self.trainable})

    def to_json(self, **kwargs) -> str:
        """The architecture as Keras 3's JSON; `keras.models.model_from_json` rebuilds it."""
        from flexflow_keras.models.cloning import to_json

        return to_json(self, **kwargs)

    @classmethod
    def from_config(cls, config: dict, custom_objects=None):
        """A model from its config: a functional config (``layers``, ``input_layers``, ``output_layers``)
        rebuilds the graph, anything else is the constructor's arguments."""
        if {"layers", "input_layers", "output_layers"} <= set(config):
            from flexflow_keras.saving.config_load import deserialize_functional
            from flexflow_keras.saving.model_config import functional_like

            if cls is Model:
                return deserialize_functional(config, custom_objects)
            if functional_like(cls):  # a subclass built as Model(inputs, outputs), saved as Keras 3 does
                return deserialize_functional(config, custom_objects, model_class=cls)
        return cls(**config)


class _CompiledMetrics:
    """What `Model.compiled_metrics` returns: update_state and reset_state accept Keras 2's calls."""

    def __init__(self, model):
        self._model = model

    def update_state(self, y_true, y_pred, sample_weight=None) -> None:
        """Symbolic (a traced train_step): nothing to do, the step graph computes the compiled metrics.
        Arrays (a compute_metrics override, an eager train_step): update them as Keras 3's shim does
        (`metrics_hook.update_deprecated`)."""
        if not any(isinstance(v, KerasTensor) for v in tree.flatten((y_true, y_pred))):
            from flexflow_keras.models.metrics_hook import update_deprecated

            update_deprecated(self._model, y_true, y_pred, sample_weight)

    def reset_state(self) -> None:
        """Nothing to do: fit and evaluate reset the compiled metrics."""

    reset_states = reset_state
