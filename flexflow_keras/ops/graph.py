"""The symbolic graph: weights (`Variable`), symbolic tensors (`KerasTensor`), op nodes and `OpGraph`.

Calling an op function on `KerasTensor`s records an `OpNode`; a model is the `OpGraph` between its input
tensors and its output tensors. The graph owns no numbers except the host values of variables; during
training the execution layer holds the authoritative copies in runtime regions and writes them back.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from flexflow_keras.errors import CrossBatchError, GraphError, ShapeError
from flexflow_keras.ops._util import fmt
from flexflow_keras.ops.shape_tuple import ShapeTuple
from flexflow_keras.ops.tensor_math import TensorMath

_uid = itertools.count()


def unique_id() -> int:
    """A process-wide increasing integer (used to order and name graph objects)."""
    return next(_uid)


@dataclass(frozen=True)
class TensorSpec:
    """Shape (``None`` for an unknown batch dim) and dtype name of a tensor."""

    shape: tuple[int | None, ...]
    dtype: str = "float32"

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def with_batch(self, batch: int) -> TensorSpec:
        """The same spec with the leading (batch) dim set to ``batch``."""
        if not self.shape:
            return self
        return TensorSpec((batch,) + tuple(self.shape[1:]), self.dtype)


class Variable(TensorMath):
    """A weight: name, shape, dtype, trainability and a host value.

    Args:
        name: the weight's name (``"kernel"``, ``"bias"``, ...); the layer adds its own prefix in `path`.
        shape: tuple of ints.
        initializer: a callable ``(shape, dtype) -> np.ndarray`` or an initial array.
        trainable: whether optimizers update it.
        regularizer: optional callable object with ``penalty(w)`` and ``gradient(w)`` methods.
        constraint: optional callable applied to the value after each update.
    """

    def __init__(self, name: str, shape: Sequence[int], dtype: str = "float32",
                 initializer: Callable | np.ndarray | None = None, trainable: bool = True,
                 regularizer=None, constraint=None, path: str | None = None):
        self.name = name
        self.path = path or name
        self.shape = tuple(int(s) for s in shape)
        self.dtype = str(np.dtype(dtype))
        self.trainable = bool(trainable)
        self.regularizer = regularizer
        self.constraint = constraint
        self.uid = unique_id()
        if initializer is None:
            value = np.zeros(self.shape, dtype=self.dtype)
        elif callable(initializer):
            value = initializer(self.shape, self.dtype)
        else:
            value = initializer
        self._value = np.array(value, dtype=self.dtype, copy=True).reshape(self.shape)
        # Set by the execution layer while it owns the authoritative copy (a callable that syncs back).
        self._sync_hook: Callable[[Variable], None] | None = None

    @property
    def spec(self) -> TensorSpec:
        return TensorSpec(self.shape, self.dtype)

    @property
    def ndim(self) -> int:
        """The number of dims (Keras' `Variable.ndim`)."""
        return len(self.shape)

    def get_shape(self) -> ShapeTuple:
        """TensorFlow's name for `shape`, with `as_list` and `rank` (``w.get_shape()[0]``)."""
        return ShapeTuple(self.shape)

    def numpy(self) -> np.ndarray:
        """A copy of the current value (synchronised from the runtime if training has touched it)."""
        if self._sync_hook is not None:
            self._sync_hook(self)
        return self._value.copy()

    @property
    def value(self) -> np.ndarray:
        if self._sync_hook is not None:
            self._sync_hook(self)
        return self._value

    def assign(self, value) -> None:
        """Set the value; the shape must match exactly. Inside a layer's call, a symbolic value is taken in
        the masked-weight form ``w.assign(w * mask)`` (ops/assign_in_call.py)."""
        if isinstance(value, KerasTensor):
            from flexflow_keras.ops import assign_in_call

            assign_in_call.assign(self, value)
            return
        arr = np.asarray(value)
        if arr.shape != self.shape:
            raise ValueError(f"Variable '{self.path}' has shape {self.shape}, cannot assign a value of "
                             f"shape {arr.shape}.")
        if self._sync_hook is not None:
            self._sync_hook(self)
        self._value[...] = arr.astype(self.dtype, copy=False)
        self._on_assign()

    def __getitem__(self, key):
        # a weight sliced as TensorFlow's variables are (``image[:, 1:, :, :]`` on a tf.Variable image): the
        # slice of its value, which an open GradientTape records against the variable
        from flexflow_keras import ops

        return ops.get_item(self, key)

    def __float__(self) -> float:
        return float(self.value)

    def __int__(self) -> int:
        return int(self.value)

    def assign_add(self, value) -> Variable:
        """Keras: add `value` (broadcast to this variable's shape) to the value."""
        self._refuse_symbolic("assign_add", value)
        self.assign(np.broadcast_to(self.value + np.asarray(value, self.dtype), self.shape))
        return self

    def assign_sub(self, value) -> Variable:
        """Keras: subtract `value` (broadcast to this variable's shape) from the value."""
        self._refuse_symbolic("assign_sub", value)
        self.assign(np.broadcast_to(self.value - np.asarray(value, self.dtype), self.shape))
        return self

    def _refuse_symbolic(self, method: str, value) -> None:
        if isinstance(value, KerasTensor):  # a running value kept across steps (a counter updated in call())
            from flexflow_keras.ops import assign_in_call

            raise assign_in_call.refuse_update(self, method, value)

    def _on_assign(self) -> None:
        """Hook replaced by the execution layer to push host writes into its regions."""

    def __array__(self, dtype=None, copy=None):
        """`np.array(variable)` / `np.asarray(variable)`: the current value (synchronised from the runtime).

        Args:
            dtype: the dtype wanted (default: the variable's).
            copy: NumPy 2's copy request; the result is always a fresh array, so False cannot be honoured.
        """
        if copy is False:
            raise ValueError(f"Variable '{self.path}' cannot be viewed without a copy (its value may live in "
                             f"the runtime); call np.asarray(variable) without copy=False.")
        value = self.numpy()
        return value if dtype is None else value.astype(dtype, copy=False)

    def __repr__(self) -> str:
        """Keras 3's form: ``<Variable path=dense/kernel, shape=(4, 3), dtype=float32, value=[[...]]>``."""
        try:
            value_str = f", value={self.numpy()}"
        except Exception:  # a runtime that can no longer sync the value: the repr still prints
            value_str = ""
        return f"<Variable path={self.path}, shape={self.shape}, dtype={self.dtype}{value_str}>"


def _raw_tensorflow_call() -> str | None:
    """When TensorFlow itself is converting a KerasTensor (a layer's call() used tf.matmul, tf.nn.relu, ...
    with flexflow_keras imported beside TensorFlow), a message naming the script's line that called into
    TensorFlow and the Keras call that replaces it ({tensor} left to fill); else None."""
    import linecache
    import re
    import sys

    frame, inside_tf = sys._getframe(2), False
    while frame is not None:
        module = frame.f_globals.get("__name__", "") or ""
        if module == "tensorflow" or module.startswith("tensorflow."):
            inside_tf = True
        elif inside_tf:
            break
        frame = frame.f_back
    if frame is None or not inside_tf:
        return None
    line = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
    calls = re.findall(r"\btf\.([A-Za-z_][\w.]*)\s*\(", line)
    hint = ""
    if calls:
        from flexflow_keras.raw_tf_hints import keras_spelling

        spelled = keras_spelling(f"tf.{calls[0]}")
        hint = f" (tf.{calls[0]} -> {spelled})" if spelled else ""
    return (f"{frame.f_code.co_filename}:{frame.f_lineno} ({line!r}) gave {{tensor}} to TensorFlow itself: "
            f"flexflow_keras tensors are not TensorFlow tensors, so raw TensorFlow functions cannot compute on "
            f"them. Use keras.ops in layers and losses{hint}; TensorFlow's Keras API (tf.keras.*) maps onto "
            f"flexflow_keras, its ops do not.")


STRING_DTYPES = ("string", "str")  # an Input of text, read by host preprocessing layers (layers/host_prefix.py)


def _elementwise_operand(o, t=None) -> bool:
    """A number or array: what `KerasTensor == o` compares element by element inside call(). None, strings
    and other objects compare by identity there too (``x == None`` or ``x in names`` in a layer's code),
    except a string against a string tensor `t` (``inputs["thal"] == "fixed"``, keras.io's feature
    engineering layer), which TensorFlow compares element by element: by identity it was a Python False,
    and ``tf.cast(x == "fixed", "float32")`` a constant 0 feature."""
    if isinstance(o, np.ndarray):
        return o.dtype.kind in "biuf"
    if isinstance(o, str):
        return t is not None and t.dtype == "string"
    return isinstance(o, (int, float, np.number))


def _in_symbolic_call() -> bool:
    from flexflow_keras.ops.functional import _symbolic_calls

    return _symbolic_calls[0] > 0


class StaticBatch(int):
    """The batch size declared by ``Input(batch_shape=(16, ...))``, as user code reads it from ``x.shape[0]``.

    It is the int 16 (it prints, compares and computes as 16, as in Keras 3) and remembers its tensor, so a
    shape built from it (``ops.zeros((x.shape[0], units))``, keras.io's functional API guide) follows the
    batch actually fed, and each data-parallel shard of it, instead of fixing 16 rows into the graph.
    Arithmetic on it gives plain ints; copies and pickles are plain ints.
    """

    ref: KerasTensor | None

    def __new__(cls, value: int, ref: KerasTensor | None = None):
        obj = super().__new__(cls, value)
        obj.ref = ref
        return obj

    def __reduce__(self):
        return int, (int(self),)


_LIBRARY_MODULES = ("flexflow_keras", "runtime", "kernels")


def _read_by_library(depth: int) -> bool:
    """Whether the code `depth` frames up (the reader of a KerasTensor's shape) is this library's own."""
    module = sys._getframe(depth).f_globals.get("__name__", "") or ""
    return module.split(".", 1)[0] in _LIBRARY_MODULES


def user_shape(t) -> tuple:
    """`t`'s shape as Keras 3 shows it: with the batch size its Input declared, when it declared one."""
    shape = t._shape if isinstance(t, KerasTensor) else tuple(t.shape)
    batch = getattr(t, "_static_batch", None)
    if batch is None or not shape or shape[0] is not None:
        return shape
    return (StaticBatch(batch, t),) + shape[1:]


class KerasTensor(TensorMath):
    """A symbolic tensor: a spec, the node that produces it (None for a graph input) and its index.

    The graph keeps the batch dim open (None) so that any batch size, and every data-parallel shard of it,
    fits the same graph (execution/store.py's `is_batched`). A batch size declared on the Input
    (``Input(batch_shape=(16, 10, 5))``) rides along as `_static_batch`, passed from inputs to the outputs of
    every op, and `shape` shows it to user code as Keras 3 does (``x.shape == (16, 10, 5)``, a `StaticBatch`);
    the library's own code reads the graph's shape (None first), which `spec` also gives.
    """

    __array_priority__ = 100  # so `ndarray + KerasTensor` defers to our operators
    _static_batch: int | None = None  # the batch size an Input declared, carried to the tensors computed from it
    # rows of the leading (None) dim per sample of the batch: k after a reshape that folds k blocks of each
    # sample into the batch dim (``ops.reshape(x, (-1, w, w, c))``: Swin's windows), else 1 (`batch_rows`)
    batch_scale: int = 1

    def __init__(self, shape: Sequence[int | None], dtype: str = "float32", node: OpNode | None = None,
                 index: int = 0, name: str | None = None):
        self._shape = tuple(None if s is None else int(s) for s in shape)
        self.dtype = "string" if dtype in STRING_DTYPES else str(np.dtype(dtype))  # strings: host layers only
        self.node = node
        self.index = index
        self.uid = unique_id()
        self.name = name or f"tensor_{self.uid}"
        self._keras_history = None  # (layer, node_index, tensor_index), set by Layer.__call__

    @property
    def shape(self) -> tuple:
        """The shape: the graph's (None for the batch) to the library; to user code with a declared batch
        and tf.TensorShape's `as_list` and `rank` (ops/shape_tuple.py), as Keras 3 on TensorFlow shows it."""
        if _read_by_library(2):
            return self._shape
        return ShapeTuple(user_shape(self))

    def get_shape(self) -> ShapeTuple:
        """TensorFlow's name for `shape` (``x.get_shape().as_list()``)."""
        return ShapeTuple(user_shape(self))

    @shape.setter
    def shape(self, value: Sequence[int | None]) -> None:
        self._shape = tuple(None if s is None else int(s) for s in value)

    @property
    def spec(self) -> TensorSpec:
        return TensorSpec(self._shape, self.dtype)

    @property
    def ndim(self) -> int:
        return len(self._shape)

    def __repr__(self) -> str:
        return f"<KerasTensor shape={user_shape(self)}, dtype={self.dtype}, name={self.name}>"

    def __array__(self, dtype=None, copy=None):
        raw_tf = _raw_tensorflow_call()
        if raw_tf is not None:
            raise GraphError(raw_tf.format(tensor=repr(self)))
        raise ValueError(f"{self!r} is symbolic: it holds a shape and a dtype, not numbers, so it cannot be "
                         f"converted to a NumPy array. Build a model from it and call model.predict(x), or "
                         f"use it only inside layers' call() and keras.ops functions.")

    # Arithmetic, ordering and logical operators come from TensorMath; indexing and == / != compose ops here.
    def __getitem__(self, key):
        from flexflow_keras import ops

        return ops.get_item(self, key)

    def __eq__(self, o):
        # Keras 3 hands a layer's call() the backend's tensors, whose == is element-wise
        # (``tf.cast(ids == block, "float32")``, keras.io's mixed-dimension embedding); elsewhere, and against
        # another KerasTensor (``t in inputs``), a KerasTensor compares by identity, as Keras' own.
        if _elementwise_operand(o, self) and _in_symbolic_call():
            return self._binary(o, "equal")
        return self is o

    def __ne__(self, o):
        # Keras 3's KerasTensor defines != as ops.not_equal everywhere (== stays identity, for hashing), so
        # ``mask = source != 0`` builds a mask in the functional API too (Deep Learning with Python ch. 15)
        if _elementwise_operand(o, self) and (_in_symbolic_call() or not isinstance(o, str)):
            return self._binary(o, "not_equal")
        return self is not o

    __hash__ = object.__hash__


class OpNode:
    """One application of an op: input tensors, weights, output tensors."""

    def __init__(self, op, inputs: Sequence[KerasTensor], weights: Sequence[Variable],
                 name: str | None = None):
        self.op = op
        self.inputs = tuple(inputs)
        self.weights = tuple(weights)
        self.uid = unique_id()
        self.name = name or f"{op.type_name}_{self.uid}"
        self.given_name = name  # the caller's name= (a functional model's op layer takes it), or None
        specs = op.output_specs([t.spec for t in self.inputs], [w.spec for w in self.weights])
        self.outputs = tuple(KerasTensor(s.shape, s.dtype, node=self, index=i, name=f"{self.name}:{i}")
                             for i, s in enumerate(specs))
        self.batch_scale = _input_scale(self)
        ratio = op.batch_ratio([t.spec for t in self.inputs]) if self.batch_scale else 1
        if ratio is None:  # a reshape to (-1, ..., -1, ...): rows kept, which folded rows cannot tell
            if self.batch_scale > 1:
                raise ShapeError(f"{self.name}: the target {tuple(op.shape)} leaves both the rows and a dim of each "
                                 f"row open, but its input {fmt(self.inputs[0]._shape)} holds {self.batch_scale} "
                                 f"rows per sample (blocks a reshape folded into the batch dim), so the rows "
                                 f"cannot be told. Give every dim after the first, or ops.shape(t)[0] of the "
                                 f"tensor whose rows the output keeps (ops.reshape(x, (ops.shape(t)[0], -1))).")
            ratio = 1
        out_scale = self.batch_scale * ratio if self.batch_scale else 1
        if out_scale != 1:
            if out_scale < 1 or out_scale != int(out_scale):
                raise CrossBatchError(f"{self.name}: the output {fmt(self.outputs[0]._shape)} would merge samples "
                                      f"of the batch ({out_scale} rows per sample of its input "
                                      f"{fmt(self.inputs[0]._shape)}, {self.batch_scale} per sample of the batch); "
                                      f"a reshape may fold blocks of each sample into the batch dim and unfold them "
                                      f"again, never join rows of different samples. Keep the batch dim apart: "
                                      f"ops.reshape(x, (-1,) + per_sample_shape).")
            for t in self.outputs:
                if None in t._shape:
                    t.batch_scale = int(out_scale)
        batch = next((t._static_batch for t in self.inputs if getattr(t, "_static_batch", None) is not None), None)
        if batch is not None:  # a batch an Input declared reaches every tensor that keeps the batch dim
            for t in self.outputs:
                if t._shape and t._shape[0] is None:
                    t._static_batch = batch * t.batch_scale // self.batch_scale if self.batch_scale else batch

    def __repr__(self) -> str:
        return f"<OpNode {self.name} {self.op!r}>"


def batch_rows(t, batch: int) -> int:
    """The rows of `t`'s open (None) dims at global batch `batch` (its `batch_scale` rows per sample)."""
    return batch * getattr(t, "batch_scale", 1)


def node_rows(node, batch: int) -> int:
    """The rows of the open dims of `node`'s inputs (and of its saved buffers) at global batch `batch`."""
    return batch * (getattr(node, "batch_scale", 1) or 1)


def _input_scale(node: OpNode):
    """The batch scale the batched inputs of `node` share (0 when none is batched); a ShapeError naming
    the op when they differ (rows of folded blocks meeting rows of whole samples)."""
    scales = {t.batch_scale for t in node.inputs if None in t._shape}
    if len(scales) > 1:
        shapes = ", ".join(f"{fmt(t._shape)} ({t.batch_scale} rows per sample)" for t in node.inputs
                           if None in t._shape)
        raise ShapeError(f"{node.name}: its inputs {shapes} count their batch rows differently: one was folded "
                         f"by a reshape (ops.reshape(x, (-1, ...)) with fewer elements per row) and the other "
                         f"was not. Reshape it back to one row per sample first, e.g. ops.reshape(x, "
                         f"(-1,) + per_sample_shape).")
    return scales.pop() if scales else 0


class OpGraph:
    """The nodes between `inputs` and `outputs`, in a deterministic topological order.

    Raises:
        GraphError: when an output depends on a graph input that is not among `inputs`.
    """

    def __init__(self, inputs: Sequence[KerasTensor], outputs: Sequence[KerasTensor]):
        self.inputs = tuple(inputs)
        self.outputs = tuple(outputs)
        input_ids = {t.uid for t in self.inputs}
        order: list[OpNode] = []
        state: dict[int, int] = {}  # node uid -> 1 visiting, 2 done
        stack: list[tuple[OpNode, bool]] = []
        for out in self.outputs:
            if out.node is None:
                if out.uid not in input_ids:
                    raise GraphError(f"Output {out.name} is not computed from the model's inputs "
                                     f"{[t.name for t in self.inputs]}.")
                continue
            stack.append((out.node, False))
            while stack:
                node, expanded = stack.pop()
                if expanded:
                    state[node.uid] = 2
                    order.append(node)
                    continue
                if state.get(node.uid) == 2:
                    continue
                if state.get(node.uid) == 1:
                    raise GraphError(f"The graph has a cycle through node {node.name}.")
                state[node.uid] = 1
                stack.append((node, True))
                for t in reversed(node.inputs):
                    if t.uid in input_ids:
                        continue
                    if t.node is None:
                        raise GraphError(
                            f"Node {node.name} reads {t.name}, a graph input that is not among the model's "
                            f"inputs {[i.name for i in self.inputs]}. Pass it in `inputs=`.")
                    if state.get(t.node.uid) != 2:
                        stack.append((t.node, False))
        self.nodes: tuple[OpNode, ...] = tuple(order)
        seen: dict[int, Variable] = {}
        for node in self.nodes:
            for w in node.weights:
                seen.setdefault(w.uid, w)
        self.variables: tuple[Variable, ...] = tuple(seen.values())

    def consumers(self) -> dict[int, list[OpNode]]:
        """Map tensor uid -> the nodes that read it."""
        out: dict[int, list[OpNode]] = {}
        for node in self.nodes:
            for t in node.inputs:
                out.setdefault(t.uid, []).append(node)
        return out


# ops that pass their input through in inference mode (Dropout, the noise and augmentation layers)
INFERENCE_IDENTITY = frozenset({"dropout", "gaussian_noise", "alpha_dropout", "image_affine", "image_value"})


def same_graph(a: OpGraph, b: OpGraph, skip: frozenset = frozenset()) -> bool:
    """Whether two traces of one model recorded the same computation: the same ops (by value, seeds aside)
    wired the same way between their inputs and outputs, on the same weights (constants made afresh by
    each trace compare by value). Ops of a type in `skip` with one input and one output count as the
    identity (`INFERENCE_IDENTITY`: a Dropout only one trace has changes nothing at inference)."""

    def walk(graph: OpGraph):
        pos = {t.uid: ("input", i) for i, t in enumerate(graph.inputs)}
        kept = []
        for node in graph.nodes:
            if node.op.type_name in skip and len(node.inputs) == 1 and len(node.outputs) == 1:
                pos[node.outputs[0].uid] = pos.get(node.inputs[0].uid, ("outside", node.inputs[0].uid))
                continue
            for j, t in enumerate(node.outputs):
                pos[t.uid] = (len(kept), j)
            kept.append(node)
        return pos, kept

    if len(a.inputs) != len(b.inputs) or len(a.outputs) != len(b.outputs):
        return False
    (pa, ka), (pb, kb) = walk(a), walk(b)
    if len(ka) != len(kb):
        return False
    for na, nb in zip(ka, kb, strict=True):
        try:
            if type(na.op) is not type(nb.op) or bool(_unseeded(na.op, skip) != _unseeded(nb.op, skip)):
                return False
        except (TypeError, ValueError):  # attributes NumPy cannot compare as one truth value
            return False
        if tuple(pa.get(t.uid) for t in na.inputs) != tuple(pb.get(t.uid) for t in nb.inputs):
            return False
        if len(na.weights) != len(nb.weights) or not all(_same_weight(u, v) for u, v in
                                                          zip(na.weights, nb.weights, strict=True)):
            return False
    return tuple(pa.get(t.uid) for t in a.outputs) == tuple(pb.get(t.uid) for t in b.outputs)


def _unseeded(op, skip: frozenset = frozenset()):
    """`op` with its seed fields zeroed: a random op draws a new seed at each trace (keras.random with a
    SeedGenerator), which is no other computation. Compared for inference (`skip` given), an op is taken
    as it computes there (`recorded_mode.comparable`)."""
    import dataclasses

    if not dataclasses.is_dataclass(op):
        return op
    if skip:
        from flexflow_keras.ops.recorded_mode import comparable

        op = comparable(op)
    seeds = {f.name: 0 for f in dataclasses.fields(op) if "seed" in f.name and f.init}
    return dataclasses.replace(op, **seeds) if seeds else op


def _same_weight(u: Variable, v: Variable) -> bool:
    if u is v:
        return True
    return (not u.trainable and not v.trainable and u.shape == v.shape and u.dtype == v.dtype
            and np.array_equal(u.value, v.value))
