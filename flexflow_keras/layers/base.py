"""`Layer`: the base of every layer and model.

A layer validates and stores its arguments in `__init__`, adds its weights in `build(input_shape)` and
composes ops in `call()`. `__call__` builds once, checks the input spec (the error names the layer, the
expected and the received shape, and the fix), runs `call()`; on symbolic tensors it records a layer
`Node` and tags the op nodes it created with `node.layer`; on NumPy arrays it computes at once through
the ops' eager mode. Layers whose output depends on `training` (Dropout, BatchNormalization) take the
mode from the execution's KernelContext at run time, so the symbolic graph is the same for training and
inference; an eager call passes its ``training`` to the ops' eager mode. Its weights (creating, listing,
getting and setting them, the per-layer store of saved files) are `LayerWeights`' (layers/layer_weights.py).
"""

from __future__ import annotations

import functools
import inspect
import logging

import numpy as np

from flexflow_keras import backend, regularizers
from flexflow_keras.layers import (
    activity_penalty,
    auto_config,
    call_memo,
    layer_metrics,
    mask_hooks,
    tf_graph_call,
)
from flexflow_keras.layers import node as node_mod
from flexflow_keras.layers.input_spec import InputSpec, check_input_spec
from flexflow_keras.layers.layer_weights import LayerWeights
from flexflow_keras.ops import recorded_mode
from flexflow_keras.ops.eager_tensor import eager
from flexflow_keras.ops.graph import KerasTensor, Variable, unique_id
from flexflow_keras.utils import naming, tree

log = logging.getLogger("flexflow_keras")

_BASE_KWARGS = {"input_shape", "input_dim", "batch_input_shape", "batch_size", "weights", "input_length"}
_SCALARS = (int, float, bool, np.generic, type(None))  # Python values a symbolic call may return with its tensors


def _is_array_like(x) -> bool:
    return isinstance(x, (np.ndarray, np.generic, int, float, bool)) or hasattr(x, "__array__")



class _TrackedList(list):
    """A list attribute of a layer: layers appended, inserted or assigned into it later become the owner's
    sublayers then (``self.blocks = []`` in __init__, then ``self.blocks.append(Dense(8))``), so their
    weights join the owner's in that order, as with Keras 3's TrackedList."""

    __slots__ = ("_owner",)

    def __init__(self, items, owner):
        super().__init__(items)
        self._owner = owner

    def append(self, item):
        super().append(item)
        self._owner._track_layers(item)

    def extend(self, items):
        items = list(items)
        super().extend(items)
        self._owner._track_layers(items)

    def insert(self, index, item):
        super().insert(index, item)
        self._owner._track_layers(item)

    def __iadd__(self, items):
        self.extend(items)
        return self

    def __setitem__(self, index, item):
        super().__setitem__(index, item)
        self._owner._track_layers(list(item) if isinstance(index, slice) else item)

    def __reduce_ex__(self, protocol):  # copies and pickles are plain lists (no owner to call back)
        return (list, (list(self),))

class Layer(LayerWeights):
    """Base class of layers.

    Args:
        name: the layer's name; a unique one (`dense`, `dense_1`, ...) when None.
        trainable: whether its weights are updated by training.
        dtype: dtype of its weights and float inputs (default `backend.floatx()`).
        input_shape: (Sequential, first layer) the per-sample input shape; also `input_dim`,
            `batch_input_shape`, `batch_size` in Keras' spellings.
        weights: initial weight values, set after the layer is built (Keras 2).

    Example:
        >>> class Scale(Layer):
        ...     def build(self, input_shape):
        ...         self.w = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="w")
        ...     def call(self, x):
        ...         return ops.multiply(x, self.w)
    """

    _accepts_int_inputs = False  # keep integer inputs as they are in eager calls (Embedding)
    _float_math = False  # arithmetic layers: integer symbolic inputs are cast to the layer's dtype first
    supports_masking = False  # pass the input's mask (`_keras_mask`) on to the output unchanged (Keras)

    def __new__(cls, *args, **kwargs):
        instance = super().__new__(cls)
        # Keras 3 records the constructor arguments: the default get_config returns them (auto_config.py)
        instance.__dict__["_ff_auto_config"] = auto_config.capture(cls, args, kwargs)
        return instance

    def __init__(self, *, name=None, trainable=True, dtype=None, activity_regularizer=None, autocast=True,
                 **kwargs):
        unknown = sorted(set(kwargs) - _BASE_KWARGS)
        if unknown:
            raise ValueError(f"Unrecognized keyword arguments passed to {type(self).__name__}: "
                             f"{ {k: kwargs[k] for k in unknown} }")
        object.__setattr__(self, "_layers", [])
        # Keras 3 (Operation.__init__) refuses only a non-string or a '/' and keeps an empty name as it is
        # (the DeepLearning.AI ResNet lab's IdentityBlock passes name='')
        if name is not None and (not isinstance(name, str) or "/" in name):
            raise ValueError(f"{type(self).__name__} expects name to be a string without '/', "
                             f"received name={name!r}.")
        self.name = naming.auto_name(type(self).__name__) if name is None else name
        self._name_given = name is not None
        if isinstance(dtype, dict):  # Keras 3's serialized DTypePolicy, in a wrapped layer's saved config
            dtype = (dtype.get("config") or {}).get("name") or None
        if dtype is not None and not isinstance(dtype, str):
            dtype = getattr(dtype, "name", None) or str(np.dtype(dtype))
        if dtype is not None and dtype.startswith("mixed"):
            raise ValueError(f"Layer '{self.name}': dtype policy {dtype!r} (mixed precision) is not supported; "
                             "use dtype='float32'.")
        self._dtype = str(np.dtype(dtype)) if dtype is not None else backend.floatx()
        # Keras 3: regularizer(output) / batch size joins the layer's losses at every call (activity_penalty.py)
        self.activity_regularizer = regularizers.get(activity_regularizer)
        self.autocast = autocast
        self._trainable = bool(trainable)
        self.built = False
        self.input_spec = None
        self._trainable_variables: list[Variable] = []
        self._non_trainable_variables: list[Variable] = []
        self._inbound_nodes: list[node_mod.Node] = []
        self._build_input_shape = None
        self._initial_weights = kwargs.get("weights")
        self._batch_input_shape = None
        if kwargs.get("batch_input_shape") is not None:
            self._batch_input_shape = tuple(kwargs["batch_input_shape"])
        elif kwargs.get("input_shape") is not None:
            shape = kwargs["input_shape"]
            shape = (shape,) if isinstance(shape, int) else tuple(shape)
            self._batch_input_shape = (kwargs.get("batch_size"),) + shape
        elif kwargs.get("input_dim") is not None:
            self._batch_input_shape = (kwargs.get("batch_size"), int(kwargs["input_dim"]))
        params = inspect.signature(self.call).parameters
        self._call_params = set(params)
        training = params.get("training")  # Keras 3 gives its default to a call that neither passes nor inherits one
        self._training_default_value = None if training is None or training.default is training.empty else training.default

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        build = cls.__dict__.get("build")
        if build is not None and not getattr(build, "_ff_wrapped", False):
            cls.build = _wrap_build(build)

    # --- attribute tracking -------------------------------------------------------------------------------
    def __setattr__(self, name, value):
        layers = self.__dict__.get("_layers")
        if layers is not None and name not in ("_layers", "_inbound_nodes") and not name.startswith("__"):
            if type(value) is list:  # layers appended later are tracked too, as Keras 3's TrackedList
                value = _TrackedList(value, self)
            self._track_layers(value)
        object.__setattr__(self, name, value)

    def _track_layers(self, value) -> None:
        """Own the layers and the Keras Variables in `value` (one, or a list, tuple or dict holding some), in
        first-seen order, as Keras 3's tracker: ``self.w = keras.Variable(...)`` is one of the layer's own
        weights (trainable or not as the variable says), trained by fit and listed by get_weights. A raw
        ``tf.Variable`` is not (Keras 3 on TensorFlow tracks only its own Variable class)."""
        layers = self.__dict__["_layers"]
        for item in tree.flatten(value) if isinstance(value, (list, tuple, dict)) else [value]:
            if isinstance(item, Layer) and item is not self and all(item is not x for x in layers):
                layers.append(item)
            elif isinstance(item, Variable) and getattr(item, "keras_tracked", True) and \
                    "_trainable_variables" in self.__dict__:
                own = self._trainable_variables + self._non_trainable_variables
                if all(item is not v for v in own):
                    (self._trainable_variables if item.trainable else self._non_trainable_variables).append(item)

    def _sublayers(self) -> list[Layer]:
        """Directly owned layers, in the order their weights appear in `weights`."""
        return list(self._layers)

    @property
    def dtype(self) -> str:
        return self._dtype

    compute_dtype = dtype
    variable_dtype = dtype

    @property
    def dtype_policy(self):
        """Keras 3's `DTypePolicy` of the layer: the one of its dtype (float32 unless it was given another)."""
        from flexflow_keras.mixed_precision import DTypePolicy

        return DTypePolicy.of_dtype(self._dtype)

    @property
    def path(self) -> str:
        return self.name

    # --- build and call -----------------------------------------------------------------------------------
    def build(self, input_shape) -> None:
        """Create the weights for inputs of `input_shape` (None for the batch dim). Default: none."""
        self.built = True

    def call(self, inputs, *args, **kwargs):
        raise NotImplementedError(f"Layer {type(self).__name__} must implement call().")

    def _input_hint(self, index: int, shape: tuple, spec: InputSpec) -> str:
        """A suggestion appended to an input-spec error (see Dense, Conv2D)."""
        return ""

    def _maybe_build(self, inputs) -> None:
        if self.built:
            return
        shapes = tree.map_structure(lambda x: tuple(x.shape) if hasattr(x, "shape") else None, inputs)
        if isinstance(shapes, list) and isinstance(inputs, tuple):
            shapes = tuple(shapes)
        if inspect.signature(self.build).parameters:
            self.build(shapes)
        else:  # a custom build() that takes no input shape
            self.build()
        self.built = True
        if self._build_input_shape is None:
            self._build_input_shape = shapes

    def _convert_eager(self, inputs):
        # A call() written outside this package composes ops itself and gets integer arrays as they are, as
        # Keras 3 casts only floats (keras.io's GNN hands its layer (nodes, int edges, weights)); built-in
        # layers not marked `_accepts_int_inputs` take their integer data as floats.
        # The arrays call() gets are EagerTensors, as TensorFlow hands call() tensors: Python arithmetic on
        # them (``x / keep_prob`` in a DropPath) then runs as keras.ops while a GradientTape records, where
        # on plain ndarrays it was NumPy's, unrecorded, and the layers before lost their gradients.
        keep_ints = self._accepts_int_inputs or not type(self).call.__module__.startswith("flexflow_keras.")

        def convert(x):
            if x is None or isinstance(x, (KerasTensor, Variable, str)) or not _is_array_like(x):
                return x
            arr = np.asarray(x)
            if arr.dtype.kind == "f":
                return eager(arr.astype(self._dtype, copy=False) if self.autocast else arr)
            if arr.dtype.kind in "iub" and not keep_ints:
                return eager(arr.astype(self._dtype))
            return eager(arr) if arr.dtype.kind in "iub" else arr  # strings and objects stay NumPy's

        return tree.map_structure(convert, inputs)

    def _cast_int_tensors(self, inputs):
        from flexflow_keras import ops

        def cast(x):
            if isinstance(x, KerasTensor) and np.dtype(x.dtype).kind in "iub":
                return ops.cast(x, self._dtype)
            return x

        return tree.map_structure(cast, inputs)

    def add_loss(self, losses, inputs=None):
        """Add a loss term from ``call()``: a symbolic scalar (summed if it has dims) joins the training
        loss of the model that computes it; an eager value is kept in `losses`. Keras 2's ``inputs`` is
        accepted and unused; a zero-argument callable (a Keras 2 weight penalty) is evaluated now.

        Args:
            losses: a tensor, a list of tensors, or a callable returning one.
            inputs: ignored (Keras 2 compatibility).
        """
        from flexflow_keras.models import custom_training

        custom_training.add_loss(self, losses)

    @property
    def metrics(self) -> list:
        """Keras 3: the Metric objects the layer holds as attributes, then its sublayers' (recursively)."""
        assigned = self.__dict__.get("_ff_assigned_metrics")
        return list(assigned) if assigned is not None else layer_metrics.layer_metrics(self)

    @metrics.setter
    def metrics(self, value) -> None:
        self.__dict__["_ff_assigned_metrics"] = list(value)

    def add_metric(self, *args, **kwargs):
        raise NotImplementedError(f"Layer '{self.name}': add_metric() was removed in Keras 3 (it raises there "
                                  "too). Pass the metric to compile(metrics=[...]), or add the quantity as a "
                                  "model output and track it with a metric.")

    def _pop_first_call_arg(self, kwargs: dict):
        """The inputs of a call given only keywords: the value of call()'s first parameter, as Keras 3
        binds them (``layer(logits=x, targets=y)`` for ``call(self, logits, targets=None)``)."""
        params = [p for p in inspect.signature(self.call).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        first = params[0].name if params else "inputs"
        if first in kwargs:
            return kwargs.pop(first)
        if "inputs" in kwargs:
            return kwargs.pop("inputs")
        raise TypeError(f"Layer '{self.name}' was called without inputs: expected them as the first "
                        f"argument (or the keyword '{first}', call()'s first parameter); received only "
                        f"the keywords {sorted(kwargs)}. Pass the inputs first: {self.name}(x, ...).")

    def __call__(self, *args, **kwargs):
        given_keywords = None if args else set(kwargs)
        if not args:
            args = (self._pop_first_call_arg(kwargs),)
        inputs, rest = args[0], args[1:]
        first_keyword = None if given_keywords is None else (given_keywords - set(kwargs)).pop()
        self._refuse_positional_flags(rest)
        if tf_graph_call.holds_graph_tensor(inputs):  # inside a tf.data map (keras.io's transfer learning guide)
            return tf_graph_call.call(self, inputs, rest, kwargs)
        explicit = "training" in kwargs
        training = kwargs.pop("training", None)
        node_kwargs = kwargs
        if "mask" in kwargs and "mask" not in self._call_params:
            kwargs.pop("mask")
        masks = mask_hooks.call_masks(self, self._call_params, (inputs, *rest), kwargs)
        if masks:
            # Keras 3: a call taking `mask` (or `<arg>_mask`) gets its inputs' masks. The layer graph does not
            # record them (the mask's ops, an Embedding's `x != 0`, are no layers of the model, and a saved
            # config rebuilds the mask by calling the layer that made it)
            node_kwargs = dict(kwargs)
            kwargs.update(masks)
        leaves = tree.flatten([inputs, list(rest), list(kwargs.values())])
        symbolic = any(isinstance(x, KerasTensor) for x in leaves)
        if not symbolic and _in_symbolic_call() and any(isinstance(x, np.ndarray) for x in tree.flatten(inputs)):
            # a sublayer called on an array inside a symbolic call (a transformer's position embedding on
            # ops.arange): record it on a constant so its weights train, as in Keras
            inputs, symbolic = _as_constants(inputs), True
        given = inputs  # as called: an eager input's mask stays on it (Keras' compute_mask gets the first arg)
        if not symbolic:
            inputs = self._convert_eager(inputs)
        # integer symbolic inputs are cast inside the layer's own call (below), so the cast belongs to this
        # layer's node, as in Keras 3 (a Dense on an int32 Input saves as that, no separate 'cast' layer)
        cast_ints = symbolic and self._float_math and self.autocast
        keras_training = node_mod.keras_training_context()
        opened = keras_training is None and not symbolic and node_mod.outermost_call()
        if opened:  # an eager model or layer call, outside any: its layers resolve `training` as Keras 3's do
            keras_training = node_mod.open_keras_training(fixes=False)
        fixing = None
        if keras_training is not None:  # a subclassed model's call() being recorded, or an eager call
            training = keras_training.resolve(explicit, training, self._training_default())
            fixing = keras_training.fixes and training is not True
        elif training is None:
            training = node_mod.current_training()
        call_kwargs = dict(kwargs)
        if "training" in self._call_params and training is not None:
            call_kwargs["training"] = bool(training)
        node_mod.push_scope(self.name, self)
        node_mod.push_training(None if training is None else bool(training))
        recorded_mode.push(fixing)
        try:
            if not self.built:
                check_input_spec(self, inputs)
                self._maybe_build(inputs)
            check_input_spec(self, inputs)
            if symbolic:
                from flexflow_keras.ops.functional import symbolic_call

                recorded = call_memo.lookup(self, inputs, rest)
                if recorded is not None:  # a train_step trace repeating a call of the recorded graph
                    return recorded
                marker = unique_id()
                with symbolic_call():
                    outputs = self.call(self._cast_int_tensors(inputs) if cast_ints else inputs, *rest,
                                        **call_kwargs)
                    activity_penalty.add(self, outputs)
                outputs = self._finish_symbolic(marker, inputs, rest, node_kwargs, outputs, first_keyword)
                self._set_masks(inputs, kwargs.get("mask"), outputs)
                call_memo.record(self, inputs, rest, outputs)
            else:
                self.__dict__.pop("_eager_losses", None)  # `losses` holds the latest eager call's values
                outputs = _as_eager(self.call(inputs, *rest, **call_kwargs))
                activity_penalty.add(self, outputs)
                self._set_masks(given, kwargs.get("mask"), outputs)  # eager masks too, as Keras 3
        finally:
            recorded_mode.pop()
            node_mod.pop_training()
            node_mod.pop_scope()
            if opened:
                node_mod.close_keras_training()
        return outputs

    def _refuse_positional_flags(self, rest) -> None:
        """Keras 3 takes only tensors positionally: ``layer(x, True)`` (keras.io's GAN-ADA calls its augmenter
        ``self.augmenter(images, training)``) is its ValueError, not a second value for `training`. Python
        numbers pass here, as this framework's ``tf.shape`` gives them where TensorFlow gives tensors."""
        if getattr(self, "_allow_non_tensor_positional_args", False):
            return
        for arg in tree.flatten(list(rest)):
            if isinstance(arg, bool | np.bool_):
                raise ValueError(f"Layer '{self.name}': only input tensors may be passed as positional arguments. "
                                 f"The following argument value should be passed as a keyword argument: {arg} "
                                 f"(of type {type(arg)}); e.g. {self.name}(x, training={arg}).")

    def _training_default(self):
        """The default of call()'s `training` parameter (None without one): Keras 3 gives it to a call
        that neither passes `training` nor inherits one."""
        try:
            return self.__dict__["_training_default_value"]
        except KeyError:  # a layer whose __init__ did not reach Layer.__init__'s end
            param = inspect.signature(self.call).parameters.get("training")
            return None if param is None or param.default is param.empty else param.default

    def _set_masks(self, inputs, mask, outputs) -> None:
        """Keras 3's mask metadata of a call's outputs (layers/mask_hooks.py): `compute_mask`'s, else the
        input's for a layer that supports masking."""
        if mask_hooks.has_compute_mask(self):
            mask_hooks.apply_compute_mask(self, inputs, mask, outputs)
        elif self.supports_masking:
            mask_hooks.pass_mask(inputs, outputs)

    def _finish_symbolic(self, marker: int, inputs, rest, kwargs, outputs, first_keyword=None):
        from flexflow_keras.layers.eager import fresh_tensor

        flat = tree.flatten(outputs)
        # Keras 3 hands back the Python values a call returns beside its tensors (keras.io's focal modulation
        # network returns (x, height, width, channels) from tf.shape); anything else is no tensor of ours
        bad = [type(t).__name__ for t in flat if not isinstance(t, (KerasTensor, *_SCALARS))]
        if bad or not any(isinstance(t, KerasTensor) for t in flat):
            raise TypeError(f"Layer '{self.name}'.call() must return symbolic tensors when called on "
                            f"symbolic inputs; it returned {bad or 'no tensor'}. Compose ops from "
                            "flexflow_keras.ops in call().")
        # A call that returns a tensor it did not create (identity) gets a copy node of its own.
        fixed = [fresh_tensor(t) if isinstance(t, KerasTensor) and t.uid < marker else t for t in flat]
        outputs = tree.pack_as(outputs, fixed)
        stack = [t.node for t in fixed if isinstance(t, KerasTensor) and t.node is not None]
        seen: set[int] = set()
        while stack:
            n = stack.pop()
            if n.uid < marker or n.uid in seen:
                continue
            seen.add(n.uid)
            if getattr(n, "layer", None) is None:
                n.layer = self
            stack.extend(t.node for t in n.inputs if getattr(t, "node", None) is not None)
        node_mod.Node(self, (inputs,) + tuple(rest), kwargs, outputs, first_keyword=first_keyword)
        return outputs

    def compute_output_shape(self, input_shape):
        """The output shape(s) for `input_shape`, found by tracing `call()` symbolically."""
        def to_tensor(s):
            return KerasTensor(tuple(s), self._dtype)

        if isinstance(input_shape, (list, tuple)) and input_shape and isinstance(input_shape[0], (list, tuple)):
            sym = [to_tensor(s) for s in input_shape]
        else:
            sym = to_tensor(input_shape)
        node_mod.push_scope(self.name)
        try:
            self._maybe_build(sym)
            out = self.call(sym)
        finally:
            node_mod.pop_scope()
        return tree.map_structure(lambda t: tuple(t.shape), out)

    # --- graph accessors ----------------------------------------------------------------------------------
    def _single_node(self, what: str):
        if not self._inbound_nodes:
            raise AttributeError(f"Layer '{self.name}' has never been called on symbolic inputs, so it has "
                                 f"no defined {what}.")
        return self._inbound_nodes[0]

    @property
    def input(self):
        """The symbolic input of the layer's first call."""
        node = self._single_node("input")
        return node.input_tensors[0] if len(node.input_tensors) == 1 else node.input_tensors

    @property
    def output(self):
        """The symbolic output of the layer's first call."""
        node = self._single_node("output")
        return node.output_tensors[0] if len(node.output_tensors) == 1 else node.output_tensors

    # --- config -------------------------------------------------------------------------------------------
    def get_config(self) -> dict:
        """The constructor arguments; `from_config(get_config())` builds an equivalent layer."""
        config = {"name": self.name, "trainable": self.trainable, "dtype": self._dtype}
        if getattr(self, "activity_regularizer", None) is not None:
            config["activity_regularizer"] = regularizers.serialize(self.activity_regularizer)
        if self._batch_input_shape is not None:
            config["batch_input_shape"] = self._batch_input_shape
        if type(self).get_config is Layer.get_config:  # a subclass keeping the default: its arguments, as Keras
            config = auto_config.default_config(self, config)
        return config

    @classmethod
    def from_config(cls, config: dict):
        return cls(**config)

    def _apply_initial_weights(self) -> None:
        if self._initial_weights is not None:
            weights, self._initial_weights = self._initial_weights, None
            self.set_weights(weights)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self.name}, built={self.built}>"


def _in_symbolic_call() -> bool:
    from flexflow_keras.ops.functional import _symbolic_calls

    return _symbolic_calls[0] > 0


def _as_constants(inputs):
    from flexflow_keras import ops

    return tree.map_structure(lambda a: ops.constant(a) if isinstance(a, np.ndarray) else a, inputs)


def _as_eager(outputs):
    from flexflow_keras.ops.eager_tensor import as_eager

    return as_eager(outputs)


def _wrap_build(build):
    @functools.wraps(build)
    def wrapped(self, *args, **kwargs):
        scoped = node_mod.current_path().split("/")[-1:] != [self.name]
        if scoped:
            node_mod.push_scope(self.name)
        try:
            build(self, *args, **kwargs)
        finally:
            if scoped:
                node_mod.pop_scope()
        self.built = True
        if self._build_input_shape is None and args:
            self._build_input_shape = args[0]
        self._apply_initial_weights()

    wrapped._ff_wrapped = True
    return wrapped
