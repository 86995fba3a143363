"""The layer-level graph: a `Node` records one call of a layer on symbolic tensors.

Layer nodes sit above the op graph (ops/graph.py): they are what `summary()`, `Model.layers`,
`get_layer` and the "Connected to" column read. Every output tensor of a layer call carries
`_keras_history = KerasHistory(layer, node_index, tensor_index)`, as in Keras. The call context carries
the `training` flag from an outer call to the layers it calls.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, NamedTuple

from flexflow_keras import tree as keras_tree
from flexflow_keras.ops.graph import KerasTensor
from flexflow_keras.utils import tree


class KerasHistory(NamedTuple):
    """Which layer call produced a tensor: `operation._inbound_nodes[node_index]`, output `tensor_index`."""

    operation: Any
    node_index: int
    tensor_index: int

    @property
    def layer(self):
        return self.operation


class Node:
    """One call of `operation` (a Layer) on symbolic arguments.

    Args:
        operation: the layer.
        call_args: the positional arguments of the call (nested structures of tensors allowed).
        call_kwargs: the keyword arguments.
        outputs: the call's outputs (a tensor or a structure of tensors).
    """

    def __init__(self, operation, call_args: tuple = (), call_kwargs: dict | None = None, outputs=None,
                 first_keyword: str | None = None):
        self.operation = operation
        self.call_args = tuple(call_args)
        self.call_kwargs = dict(call_kwargs or {})
        self.outputs = outputs
        # Keras' order (its SymbolicArguments): the arguments flattened with dicts by sorted key, keyword
        # arguments too (`first_keyword`: the inputs were given by that keyword, layer(target=x, source=y)),
        # so model.layers and get_weights() of a functional model list what Keras lists
        args, kwargs = self.call_args, self.call_kwargs
        if first_keyword is not None and args:
            args, kwargs = args[1:], {first_keyword: args[0], **kwargs}
        self.input_tensors = [x for x in keras_tree.flatten((args, kwargs)) if isinstance(x, KerasTensor)]
        self.output_tensors = [x for x in tree.flatten(outputs) if isinstance(x, KerasTensor)]
        self.is_input = not self.input_tensors
        operation._inbound_nodes.append(self)
        index = len(operation._inbound_nodes) - 1
        for i, t in enumerate(self.output_tensors):
            t._keras_history = KerasHistory(operation, index, i)

    @property
    def parent_nodes(self) -> list[Node]:
        """The nodes that produced this node's inputs."""
        out = []
        for t in self.input_tensors:
            hist = t._keras_history
            if hist is not None:
                out.append(hist.operation._inbound_nodes[hist.node_index])
        return out

    def __repr__(self) -> str:
        return f"<Node of {self.operation.name}: {len(self.input_tensors)} in, {len(self.output_tensors)} out>"


def get_source_inputs(tensor) -> list:
    """The Input tensors `tensor` is computed from (Keras' `keras.utils.get_source_inputs`)."""
    seen, out, stack = set(), [], [tensor]
    while stack:
        t = stack.pop()
        hist = getattr(t, "_keras_history", None)
        if hist is None:
            if id(t) not in seen:
                seen.add(id(t))
                out.append(t)
            continue
        node = hist.operation._inbound_nodes[hist.node_index]
        if node.is_input:
            if id(t) not in seen:
                seen.add(id(t))
                out.append(t)
            continue
        stack.extend(reversed(node.input_tensors))
    return out


class _CallContext(threading.local):
    def __init__(self):
        self.training: list[bool | None] = []
        self.scopes: list[str] = []
        self.owners: list = []  # the layer of each scope (None for a scope that names no layer)
        self.keras: list[KerasTraining] = []


class KerasTraining:
    """Keras 3's resolution of `training` while a subclassed model's call() is recorded: each layer call
    takes its explicit argument, else the value the call before it left (`value`, which stays after that
    call returns: a sublayer given ``training=False`` turns training off for the layers called after
    it), else its call() signature's default. Where the value is not True, the call's ops are recorded
    in inference mode (`fixes`: not while the training=False graph is recorded, which only inference
    runs; ops/recorded_mode.py)."""

    def __init__(self, fixes: bool, recording: bool = False):
        self.value = None
        self.fixes = fixes
        self.recording = recording  # a subclassed model's call() recorded (not an eager call)

    def resolve(self, explicit: bool, given, default):
        if explicit:
            value = given
        elif self.value is not None:
            value = self.value
        else:
            value = default
        self.value = value
        return value


_context = _CallContext()


def current_training() -> bool | None:
    """The `training` flag of the innermost enclosing layer call that set one (None outside any)."""
    for value in reversed(_context.training):
        if value is not None:
            return value
    return None


def forces_training(training) -> bool:
    """Whether an op recorded now with `training` runs in training mode whatever the execution's mode:
    True passed on by a layer's call() (Keras' MC dropout: ``super().call(x, training=True)``), or given
    to a layer call inside a subclassed model's call(), where the calls around it do not train. A
    functional node given ``training=True`` follows the execution: Keras' fit, evaluate and predict
    pass their own mode to every node that takes `training`."""
    if training is not True:
        return False
    if _context.training and _context.training[-1] is True and keras_training_context() is None:
        return False
    for value in reversed(_context.training[:-1]):
        if value is not None:
            return not value
    return True


@contextlib.contextmanager
def keras_training(fixes: bool):
    """Resolve `training` as Keras 3 does for the layer calls of a subclassed model's call() recorded in
    the block (`KerasTraining`)."""
    _context.keras.append(KerasTraining(fixes, recording=True))
    try:
        yield
    finally:
        _context.keras.pop()


def keras_training_context() -> KerasTraining | None:
    return _context.keras[-1] if _context.keras else None


def node_resolver(keras_training: KerasTraining):
    """A function giving the `training` Keras 3 resolves for each op node of a model's graph run or
    recorded again in order (a functional model or Sequential called with `training` None, eagerly or
    inside a subclassed call()): each layer call, whose ops are consecutive nodes of its layer, takes the
    value the calls before it left, else its own default (an augmentation layer's True, which stays for
    the layers after it); nodes of no layer take the current value."""
    last = [None]

    def value(node):
        layer = getattr(node, "layer", None)
        if layer is not None and layer is not last[0]:
            last[0] = layer
            default = getattr(layer, "_training_default", None)
            keras_training.resolve(False, None, default() if default is not None else None)
        return keras_training.value
    return value


def outermost_call() -> bool:
    """Whether no layer call is in progress."""
    return not _context.training


def open_keras_training(fixes: bool) -> KerasTraining:
    """`keras_training` for an eager call, which closes it in its own `finally` (`close_keras_training`)."""
    _context.keras.append(KerasTraining(fixes))
    return _context.keras[-1]


def close_keras_training() -> None:
    _context.keras.pop()


def push_training(value: bool | None) -> None:
    _context.training.append(value)


def pop_training() -> None:
    _context.training.pop()


def current_path() -> str:
    """The `/`-joined names of the layers being built or called (prefix of new weights' paths)."""
    return "/".join(_context.scopes)


def push_scope(name: str, layer=None) -> None:
    _context.scopes.append(name)
    _context.owners.append(layer)


def pop_scope() -> None:
    _context.scopes.pop()
    _context.owners.pop()


def current_layer():
    """The innermost layer whose call() is running (None outside any)."""
    return next((layer for layer in reversed(_context.owners) if layer is not None), None)
