"""Functional models: `Model(inputs, outputs)` over a graph of layer calls.

The layer graph (which layer call feeds which) is mapped as Keras does, for `layers`, `summary()` and
weight order: a depth-first walk from the outputs, then layers ordered by decreasing depth and, within a
depth, by first visit. Ops applied directly to symbolic tensors between layers (``x * 2``) become
pseudo-layers (`OpLayer`) in that graph, as Keras shows them. Computation never goes through the layer
graph: the model's OpGraph is what the training loop lowers, what an eager `model(x)` runs, and what a
nested use of the model re-records on new tensors (sharing the weights).
"""

from __future__ import annotations

import numpy as np

from flexflow_keras.errors import GraphError
from flexflow_keras.layers import host_prefix
from flexflow_keras.layers.base import Layer
from flexflow_keras.layers.eager import as_input
from flexflow_keras.layers.input_layer import InputLayer
from flexflow_keras.layers.input_spec import InputSpec
from flexflow_keras.layers.node import Node
from flexflow_keras.models import custom_training, layer_rerun, variable_dims
from flexflow_keras.models.model import Model
from flexflow_keras.ops import tape
from flexflow_keras.ops.base import apply_op
from flexflow_keras.ops.graph import KerasTensor, OpGraph, TensorSpec, Variable
from flexflow_keras.ops.numpy_api import BatchSecondStack
from flexflow_keras.utils import tree


class OpLayer(Layer):
    """A pseudo-layer for one op applied directly to symbolic tensors of a functional model."""

    def __init__(self, op_node):
        super().__init__(name=_op_name(op_node))
        self._op_node = op_node
        self._display_class = type(op_node.op).__name__.removesuffix("Op")
        self.built = True

    def call(self, inputs):
        ins = inputs if isinstance(inputs, (list, tuple)) else [inputs]
        return apply_op(self._op_node.op, ins, self._op_node.weights)


def _op_name(op_node) -> str:
    from flexflow_keras.utils import naming

    return getattr(op_node, "given_name", None) or naming.uniquify(op_node.op.type_name)  # a given name as given


_functional_classes: dict[type, type] = {}


def functional_subclass(cls: type) -> type:
    """`cls` combined with Functional (for a Model subclass that calls ``super().__init__(inputs, outputs)``)."""
    if cls not in _functional_classes:
        _functional_classes[cls] = type(cls.__name__, (cls, Functional), {"__module__": cls.__module__,
                                                                          "__qualname__": cls.__qualname__})
    return _functional_classes[cls]


class GraphIOMixin:
    """`inputs`, `outputs` and `input_names` of a model that keeps its graph's input and output tensors in
    ``self._inputs`` / ``self._outputs`` (Functional and Sequential). Put it before `Model` in the bases."""

    @property
    def inputs(self) -> list[KerasTensor]:
        return list(self._inputs)

    @property
    def outputs(self) -> list[KerasTensor]:
        return list(self._outputs)

    @property
    def input_names(self) -> list[str]:
        return [t.name for t in self._inputs]

    @property
    def input(self):
        """The model's symbolic input as given to it, as Keras 3's `model.input`: a tensor, or a list (also of
        one tensor) or dict. A model whose inputs are read by host layers (TextVectorization on a string Input)
        gives its declared inputs, so ``Model(encoder.input, ...)`` takes the strings, as in Keras."""
        prefix = getattr(self, "_host_prefix", None)
        if prefix is not None:
            return prefix.declared_struct
        return self._io_struct("_input_struct", self._inputs, "input")

    @property
    def output(self):
        """The model's symbolic output, as given to it (Keras' `model.output`), e.g. to build a new model on
        a trained one: ``Model(base.input, Dense(10)(base.output))``."""
        return self._io_struct("_output_struct", self._outputs, "output")

    def _pack_outputs(self, flat: list):
        """The model's outputs as given to it (Keras 3 unpacks a list of one: Model(x, [y]) predicts an array)."""
        struct = getattr(self, "_output_struct", None)
        if struct is None or len(tree.flatten(struct)) != len(flat):
            return flat[0] if len(flat) == 1 else flat
        packed = tree.pack_as(struct, flat)
        return packed[0] if isinstance(packed, list | tuple) and len(packed) == 1 else packed

    def _io_struct(self, attr: str, flat: list, what: str):
        if not flat:
            raise AttributeError(f"Model '{self.name}' has no defined {what} yet: it was built without an Input. "
                                 f"Start it with keras.Input(shape=...) (or call it on data once).")
        struct = getattr(self, attr, None)
        if struct is None:  # Sequential: one input and one output
            return flat[0] if len(flat) == 1 else list(flat)
        return struct

    def _rank_adjusted(self, args: tuple, prefix) -> tuple:
        """A call's arguments with Keras 3's input rank rule applied to its inputs (Functional's
        `_adjust_input_rank`, which a Sequential built on an Input runs too): (N, 28, 28) for
        Input((28, 28, 1)) gains the trailing 1, (N, 28, 28, 1, 1) loses it. Arrays, and symbolic inputs
        too (a subclassed model's call is traced here, where TensorFlow runs it on tensors)."""
        from flexflow_keras.models.custom_training import adjust_input_rank

        if not args or not self._inputs:
            return args
        if not any(isinstance(t, KerasTensor) for t in tree.flatten(args[0])):
            flat = [_variable_value(a) if isinstance(a, Variable) else np.asarray(a) if hasattr(a, "__array__")
                    else a for a in tree.flatten(args[0])]
        elif prefix is None:
            flat = tree.flatten(args[0])
        else:  # symbolic strings: the host prefix takes them by its declared inputs
            return args
        if len(flat) != len(self._inputs):
            return args
        return (tree.pack_as(args[0], adjust_input_rank(flat, self._inputs)),) + tuple(args[1:])


def _variable_value(v):
    """A Variable given as a model's input (style transfer's image): its value, which a tape knows as it."""
    tape.read_variable(v)
    return v.value


class Functional(GraphIOMixin, Model):
    """A model defined by its input and output tensors.

    Args:
        inputs: a KerasTensor from `Input`, or a list/dict of them.
        outputs: a KerasTensor or a list/dict of them, computed from `inputs`.
        name: the model's name (``functional``, ``functional_1``, ... by default).
        trainable: whether its weights are trained.
    """

    _graph_network = True

    def __init__(self, inputs, outputs, name=None, trainable=True, **kwargs):
        Layer.__init__(self, name=name, trainable=trainable, **kwargs)
        self._init_model_state()
        if isinstance(inputs, dict):
            self._input_struct = dict(inputs)
        else:
            self._input_struct = list(inputs) if isinstance(inputs, (list, tuple)) else inputs
        self._output_struct = outputs  # a tuple stays one: Keras 3's call and predict give a tuple back
        flat_in, flat_out = tree.flatten(inputs), tree.flatten(outputs)
        for what, flat in (("inputs", flat_in), ("outputs", flat_out)):
            for x in flat:
                if isinstance(x, BatchSecondStack):  # stack(xs) of batch-first tensors: its own explanation
                    raise x.error()
                if not isinstance(x, KerasTensor):
                    raise ValueError(f"Model '{self.name}': all {what} must be symbolic tensors (from Input() or "
                                     f"a layer call); received {type(x).__name__}.")
        if not flat_in or not flat_out:
            raise ValueError(f"Model '{self.name}' needs at least one input and one output.")
        if len({t.uid for t in flat_in}) != len(flat_in):
            raise ValueError(f"Model '{self.name}' received the same input tensor twice.")
        flat_in, self._host_prefix = host_prefix.split_inputs(self.name, flat_in, flat_out)
        if self._host_prefix is not None:  # string inputs read by host layers: the graph starts after them
            self._host_prefix.declared_struct = self._input_struct
            self._input_struct = flat_in if len(flat_in) > 1 else flat_in[0]
        self._inputs, self._outputs = flat_in, flat_out
        self._graph = OpGraph(flat_in, flat_out)
        self._map_layer_graph()
        seen: dict[str, int] = {}
        for layer in self._operations:
            seen[layer.name] = seen.get(layer.name, 0) + 1
        dupes = sorted(n for n, c in seen.items() if c > 1)
        if dupes:
            raise ValueError(f"Model '{self.name}': the names {dupes} are used by more than one layer; every layer "
                             "and Input of a model needs a unique name (pass distinct name= arguments).")
        self._set_input_spec(flat_in)
        self.built = True

    # --- the layer graph ----------------------------------------------------------------------------------
    def _map_layer_graph(self) -> None:
        input_ids = {t.uid for t in self._inputs}
        finished: set[int] = set()
        in_progress: set[int] = set()
        ordered: list[Node] = []
        first_visit: dict[int, int] = {}
        layer_of: dict[int, Layer] = {}

        def history(t: KerasTensor):
            hist = t._keras_history
            if hist is None and t.node is not None and t.uid not in input_ids:
                Node(OpLayer(t.node), (list(t.node.inputs),), {}, list(t.node.outputs))
                hist = t._keras_history
            return hist

        def visit(t: KerasTensor) -> None:
            hist = history(t)
            if hist is None:
                return
            layer = hist.operation
            node = layer._inbound_nodes[hist.node_index]
            if id(node) in finished:
                return
            if not node.is_input and t.uid in input_ids:
                finished.add(id(node))
                return
            if id(node) in in_progress:
                raise GraphError(f"Model '{self.name}': the layer graph has a cycle through layer '{layer.name}'.")
            first_visit.setdefault(id(layer), len(first_visit))
            layer_of[id(layer)] = layer
            in_progress.add(id(node))
            if not node.is_input:
                for x in node.input_tensors:
                    visit(x)
            finished.add(id(node))
            in_progress.discard(id(node))
            ordered.append(node)

        for t in self._outputs:
            visit(t)
        in_graph = {id(n) for n in ordered}
        node_depth: dict[int, int] = {}
        layer_depth: dict[int, int] = {}
        for node in reversed(ordered):
            depth = node_depth.setdefault(id(node), 0)
            depth = max(depth, layer_depth.get(id(node.operation), 0))
            layer_depth[id(node.operation)] = depth
            node_depth[id(node)] = depth
            for parent in node.parent_nodes:
                if id(parent) in in_graph:
                    node_depth[id(parent)] = max(depth + 1, node_depth.get(id(parent), 0))
        for t in self._inputs:  # inputs that no output uses still belong to the model
            hist = t._keras_history
            if hist is not None and isinstance(hist.operation, InputLayer) and id(hist.operation) not in layer_depth:
                layer = hist.operation
                layer_of[id(layer)] = layer
                first_visit[id(layer)] = -1
                layer_depth[id(layer)] = 0
                node = layer._inbound_nodes[hist.node_index]
                node_depth[id(node)] = 0
                ordered.append(node)
        self._operations = sorted((layer_of[k] for k in layer_depth),
                                  key=lambda la: (-layer_depth[id(la)], first_visit[id(la)]))
        by_depth: dict[int, list[Node]] = {}
        for node in ordered:
            by_depth.setdefault(node_depth[id(node)], []).append(node)
        self._nodes_by_depth = dict(sorted(by_depth.items(), reverse=True))
        self._network_nodes = {id(n) for n in ordered}

    @property
    def layers(self) -> list[Layer]:
        ops = [op for op in self._operations if not isinstance(op, OpLayer)]
        prefix = getattr(self, "_host_prefix", None)
        if prefix is None:
            return ops
        # as Keras lists them: the declared inputs and the host layers, not the graph inputs standing for them
        stand_ins = {id(out._keras_history.operation) for _, _, out in prefix.steps}
        front = [t._keras_history.operation for t in prefix.declared]
        for layer, _, _ in prefix.steps:
            if all(layer is not f for f in front):
                front.append(layer)
        return front + [op for op in ops if id(op) not in stand_ins and all(op is not f for f in front)]

    @layers.setter
    def layers(self, _):
        raise AttributeError("`Model.layers` is reserved and cannot be assigned; use another attribute name.")

    def _sublayers(self) -> list[Layer]:
        return self.layers

    def _summary_layers(self):
        sequential_like = True
        for nodes in self._nodes_by_depth.values():
            if len(nodes) > 1 or (len(nodes) == 1 and len(nodes[0].input_tensors) > 1):
                sequential_like = False
                break
        if sequential_like:
            for layer in self._operations:
                if sum(1 for n in layer._inbound_nodes if id(n) in self._network_nodes) > 1:
                    sequential_like = False
                    break
        return list(self._operations), sequential_like, self._network_nodes

    # --- structure for the training loop ------------------------------------------------------------------
    @property
    def output_names(self) -> list[str]:
        if isinstance(self._output_struct, dict):
            return list(self._output_struct)
        names = []
        for t in self._outputs:
            hist = t._keras_history
            names.append(hist.operation.name if hist is not None else t.name)
        return names

    def _op_graph(self, input_specs=None) -> OpGraph:
        if input_specs is not None:
            check_specs(self, input_specs, self._inputs)
            concrete = variable_dims.specialized(self, self._graph, self._inputs, input_specs)
            if concrete is not None:  # Input(shape=(None, ...)): the graph at the data's sample shape
                return self._current(concrete)
        return self._current(self._graph)

    # --- calling ------------------------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if len(args) > 1 and not isinstance(args[1], (bool, np.bool_, int, type(None))):
            # Keras' call(inputs, training=None, mask=None) reads a second positional argument as training
            raise TypeError(f"Model '{self.name}' was called with a second positional argument (of type "
                            f"{type(args[1]).__name__}), which a functional model's call(inputs, training=None, "
                            f"mask=None) reads as `training` (Keras: 'got multiple values for argument "
                            f"training'). Pass all the inputs as one list or dict: model([x1, x2]).")
        prefix = getattr(self, "_host_prefix", None)
        if prefix is not None and args and not any(isinstance(t, KerasTensor) for t in tree.flatten(args[0])):
            args = (prefix(args[0]),) + args[1:]  # strings through the model's host layers (layers/host_prefix.py)
        if args and isinstance(args[0], dict):  # order a dict of inputs by input name before the checks
            symbolic = any(isinstance(t, KerasTensor) for t in tree.flatten(args[0]))
            # a model with host layers called on symbolic inputs takes them by its declared names (the
            # titanic preprocessing head of TensorFlow's CSV tutorial, called on the dict of Inputs)
            expected = prefix.declared if prefix is not None and symbolic else self._inputs
            args = (self._standardize_inputs(args[0], expected),) + args[1:]
        if prefix is not None and args and any(isinstance(t, KerasTensor) for t in tree.flatten(args[0])):
            # symbolic inputs go to the host steps: check them against the declared inputs (an encoder
            # Model(Input(shape=(), dtype="string") -> TextVectorization -> ...) called on another string
            # Input), not against the graph's inputs (the vectorized ids)
            graph_spec, self.input_spec = self.input_spec, [InputSpec(shape=t.shape) for t in prefix.declared]
            try:
                return super().__call__(*args, **kwargs)
            finally:
                self.input_spec = graph_spec
        return super().__call__(*self._rank_adjusted(args, prefix), **kwargs)

    def call(self, inputs, training=None, mask=None):
        prefix = getattr(self, "_host_prefix", None)
        if prefix is not None and any(isinstance(t, KerasTensor) for t in tree.flatten(inputs)):
            # symbolic strings: the calling model records this model's host steps (layers/host_prefix.py)
            flat = prefix.symbolic(self._standardize_inputs(inputs, prefix.declared))
        else:
            flat = self._standardize_inputs(inputs, self._inputs)
        if any(isinstance(x, KerasTensor) for x in flat):
            layer_rerun.attach_masks(flat, mask)
            outs = None
            if prefix is None and layer_rerun.needs_rerun(flat):  # Keras 3 runs the layers on masked tensors
                outs = layer_rerun.rerun_layers(self, flat)
            if outs is None:
                outs = variable_dims.clone_with_losses(self, self._graph, flat)
        else:
            arrays = [as_input(x, t.dtype) for x, t in zip(flat, self._inputs, strict=False)]
            outs = custom_training.run_eager(self, self._current(self._graph), arrays, custom_training.eager_mode(training))
        result = tree.pack_as(self._output_struct, outs)
        if isinstance(result, list | tuple) and len(result) == 1 and not isinstance(outs[0], KerasTensor):
            return result[0]  # Keras 3: Model(inp, [out])(x) on arrays is a tensor (a list on symbolic inputs)
        return result

    def _convert_eager(self, inputs):
        return inputs  # converted per input dtype in call()

    def get_config(self) -> dict:
        """Keras 3's functional config: layers with their inbound nodes, input and output layers."""
        from flexflow_keras.saving.model_config import functional_like, serialize_model

        if type(self) is not Functional and not functional_like(type(self)):
            return {"name": self.name, "trainable": self.trainable}
        return serialize_model(self)["config"]

    @classmethod
    def from_config(cls, config, custom_objects=None):
        """Rebuild the model by calling fresh layers on the tensors the config's inbound nodes name."""
        from flexflow_keras.saving.config_load import deserialize_functional

        return deserialize_functional(config, custom_objects)


def check_specs(model, input_specs, inputs) -> None:
    """Raise ShapeError when `input_specs` do not fit the model's input tensors (count and shapes)."""
    from flexflow_keras.errors import ShapeError

    specs = list(input_specs)
    if len(specs) != len(inputs):
        raise ShapeError(f"Model '{model.name}' has {len(inputs)} input(s) {[t.name for t in inputs]}, received "
                         f"specs for {len(specs)}.")
    for t, s in zip(inputs, specs, strict=False):
        s = s if isinstance(s, TensorSpec) else TensorSpec(tuple(s.shape), str(s.dtype))
        want, got = tuple(t.shape[1:]), tuple(s.shape[1:])
        if len(want) != len(got) or any(w is not None and g is not None and w != g for w, g in zip(want, got, strict=False)):
            raise ShapeError(f"Input '{t.name}' of model '{model.name}' expects samples of shape {want}, "
                             f"received {got}.")
