"""The operator contract (`Op`), the per-call `KernelContext`, and `apply_op`, which records an op on
symbolic tensors or runs it at once on NumPy arrays.

An op is a frozen dataclass of its attributes plus pure shape functions and two compute functions
(forward, backward) that call `kernels/`. The execution layer wraps those compute functions in runtime
tasks, one per shard; the same functions serve eager calls and tests. See docs/contracts.md, section 3.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, ClassVar

import numpy as np

from flexflow_keras.ops import assign_in_call, eager_split, graph, recorded_mode, tape
from flexflow_keras.ops import parallel as par
from flexflow_keras.ops.eager_tensor import EagerTensor
from flexflow_keras.ops.graph import KerasTensor, OpNode, TensorSpec, Variable

_REGISTRY: dict[str, type[Op]] = {}


@dataclass(frozen=True)
class KernelContext:
    """What a compute function may know about the call beyond its arrays."""

    backend: str = "cpu"  # "cpu" (NumPy arrays) or "cuda" (numba device arrays)
    training: bool = False
    step: int = 0
    seed: int = 0
    batch_offset: int = 0  # global index of this shard's first sample
    global_batch: int = 0  # samples in the whole (unsharded) batch
    accumulate_inputs: tuple[bool, ...] = ()
    accumulate_weights: tuple[bool, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)
    tile: par.Tile | None = None  # the piece of the op this call computes (None: the whole op)

    def acc_input(self, i: int) -> bool:
        return self.accumulate_inputs[i] if i < len(self.accumulate_inputs) else False

    def acc_weight(self, j: int) -> bool:
        return self.accumulate_weights[j] if j < len(self.accumulate_weights) else False

    def moments(self, j: int) -> tuple:
        """The (array, power, accumulate) triples in which the caller asks weight j's backward for its
        gradient's per-lookup moments (execution/sparse_moments.py; a GradientTape asks for powers 1 and 2);
        empty when none is asked for."""
        return tuple(self.extra.get("moments", {}).get(j, ()))


@dataclass(frozen=True)
class Op:
    """Base of every operator. Subclasses are frozen dataclasses of attributes.

    Subclasses set `type_name` and implement `output_specs`, `forward` and `backward`; ops that need
    statistics over the whole batch implement `stats_specs`/`forward_stats` (and `update_state`).
    """

    type_name: ClassVar[str] = "op"
    two_stage_backward: ClassVar[bool] = False
    # Which input positions are differentiable (False for integer ids, labels).
    differentiable_inputs: ClassVar[tuple[bool, ...] | None] = None
    # Number of leading weights that are trainable parameters; the rest are state (moving stats).
    n_trainable_weights: ClassVar[int | None] = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "type_name" in cls.__dict__:
            _REGISTRY[cls.type_name] = cls

    # --- shapes ---------------------------------------------------------------------------------------
    def output_specs(self, inputs: Sequence[TensorSpec], weights: Sequence[TensorSpec]) -> tuple[TensorSpec, ...]:
        raise NotImplementedError(f"{type(self).__name__}.output_specs")

    def saved_specs(self, inputs: Sequence[TensorSpec], weights: Sequence[TensorSpec]) -> tuple[TensorSpec, ...]:
        return ()

    def stats_specs(self, inputs: Sequence[TensorSpec], weights: Sequence[TensorSpec],
                    training: bool) -> tuple[TensorSpec, ...]:
        return ()

    def batch_ratio(self, inputs: Sequence[TensorSpec]):
        """Rows of the output's batch dim per row of the input's (a reshape folding or unfolding blocks of
        each sample: ops/graph.py's `batch_scale`); 1 for every op that keeps the batch rows."""
        return 1

    # --- parallelism (see ops/parallel.py) -------------------------------------------------------------
    def sample_dim(self) -> int | None:
        """The output dim that indexes samples (split by data parallelism); None if there is none."""
        return 0

    def parallel_space(self, inputs: Sequence[TensorSpec], weights: Sequence[TensorSpec]) -> par.ParallelSpace:
        """Per output dim its kind and whether it may be split. Default: only the batch dim."""
        extents = tuple(self.output_specs(inputs, weights)[0].shape)
        return par.ParallelSpace(par.sample_only(extents, self.type_name), extents)

    def tile(self, shapes: par.TileShapes, out_box: par.Box, part: int = 0, parts: int = 1) -> par.Tile:
        """What the piece of output 0 in `out_box` reads and writes. Default: inputs by broadcasting
        against the output, weights and statistics whole."""
        return par.default_tile(shapes, out_box)

    # --- compute --------------------------------------------------------------------------------------
    def forward_stats(self, ctx: KernelContext, inputs, weights, stats) -> None:
        """Fold this shard's partial statistics into `stats` (buffers start at zero, summed over shards)."""

    def forward(self, ctx: KernelContext, inputs, weights, outputs, saved, stats) -> None:
        raise NotImplementedError(f"{type(self).__name__}.forward")

    def backward(self, ctx: KernelContext, inputs, weights, outputs, saved, stats,
                 grad_outputs, grad_inputs, grad_weights) -> None:
        raise NotImplementedError(f"{type(self).__name__}.backward")

    def backward_weights(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_weights) -> None:
        """Stage one of a two-stage backward: weight gradients only."""
        raise NotImplementedError(f"{type(self).__name__}.backward_weights")

    def backward_inputs(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_weights,
                        grad_inputs) -> None:
        """Stage two of a two-stage backward: input gradients, reading the reduced weight gradients."""
        raise NotImplementedError(f"{type(self).__name__}.backward_inputs")

    def backward_reads(self) -> tuple:
        """(inputs, outputs): whether the backward (CPU and CUDA kernels) reads the values of the op's inputs,
        and of its outputs; each a bool for all of them or a tuple of one bool per position. A training step hands the backward None for those it does not read, so their buffers
        can hold other tensors once the forward is done with them (execution/buffer_reuse.py); a
        backward that reads one anyway fails on the None instead of reading another tensor's values.
        Default: both."""
        return True, True

    def update_state(self, ctx: KernelContext, stats, weights) -> None:
        """Once per training step after the stats are reduced (BatchNorm's moving averages)."""

    def is_differentiable(self, i: int) -> bool:
        d = self.differentiable_inputs
        return True if d is None or i >= len(d) else d[i]


def op_registry() -> dict[str, type[Op]]:
    """Every registered op class by `type_name`."""
    return dict(_REGISTRY)


def _is_symbolic(values) -> bool:
    return any(isinstance(v, KerasTensor) for v in values)


def apply_op(op: Op, inputs: Sequence, weights: Sequence[Variable] = (), name: str | None = None,
             training: bool = False, seed: int = 0):
    """Record `op` on symbolic inputs (returns KerasTensor(s)) or run it now on arrays (returns arrays).

    Constants mixed with KerasTensors must already be wrapped by the caller (see ops.constant).
    Returns a single output when the op has one, else a tuple.
    """
    weights = assign_in_call.substitute(weights)  # a weight assigned in this call: w.assign(w * mask)
    inputs = _variable_inputs(inputs, weights)
    if _is_symbolic(inputs) or _is_symbolic(weights):
        inputs, weights = _graph_constants(inputs, weights)
    if _is_symbolic(weights):  # a kernel computed in call(): the weights become inputs
        from flexflow_keras.ops.weights_as_inputs import as_inputs

        op, inputs, weights, name = as_inputs(op, inputs, weights, name)
    if _is_symbolic(inputs):
        fixed = recorded_mode.fixed()
        if fixed:  # a layer call Keras runs in inference whatever the execution's mode (ops/recorded_mode.py)
            op = recorded_mode.at_inference(op)
            if op is None:
                return inputs[0]
        node = OpNode(op, inputs, weights, name=name)
        if fixed:
            node.fixed_inference = True
        return node.outputs[0] if len(node.outputs) == 1 else node.outputs
    if plain_sigmoid(op) and op.type_name != "activation":
        # eagerly a sigmoid fused into a Dense or convolution runs as the op then the sigmoid, so that its
        # output carries the op's result as its logits (`_leave_logits`) without computing the op twice
        from flexflow_keras.ops.nn_ops import ActivationOp

        z = apply_op(replace(op, activation="linear", activation_params=()), inputs, weights, name=name,
                     training=training, seed=seed)
        return apply_op(ActivationOp("sigmoid"), [z], name=name)
    arrays = [np.asarray(x) for x in inputs]
    wvals = [w.value if isinstance(w, Variable) else np.asarray(w) for w in weights]
    in_specs = [TensorSpec(a.shape, str(a.dtype)) for a in arrays]
    w_specs = [TensorSpec(a.shape, str(a.dtype)) for a in wvals]
    out_specs = op.output_specs(in_specs, w_specs)
    batch = arrays[0].shape[0] if arrays and arrays[0].ndim else 1
    outs = [np.empty(_concrete(s.shape, batch), s.dtype) for s in out_specs]
    saved = [np.empty(_concrete(s.shape, batch), s.dtype) for s in op.saved_specs(in_specs, w_specs)]
    stats = [np.zeros(_concrete(s.shape, batch), s.dtype) for s in op.stats_specs(in_specs, w_specs, training)]
    ctx = KernelContext(backend="cpu", training=training, seed=seed, global_batch=batch)
    if stats:
        op.forward_stats(ctx, arrays, wvals, stats)
    eager_split.forward(op, ctx, arrays, wvals, outs, saved, stats)  # a large convolution: on two cores
    eager_outs = [o.view(EagerTensor) for o in outs]  # .numpy(), as tf.keras tensors (ops/eager_tensor.py)
    if tape.recording():  # before any state update below: the tape keeps the values the forward read
        tape.record(op, inputs, arrays, weights, wvals, eager_outs, saved, stats, ctx, name)
    if stats and training:
        # An eager training call updates state as Keras does (BatchNorm's moving averages): on copies,
        # assigned back so an execution holding the authoritative values sees the change.
        state = [v.copy() for v in wvals]
        op.update_state(ctx, stats, state)
        for w, old, new in zip(weights, wvals, state, strict=True):
            if isinstance(w, Variable) and not np.array_equal(old, new):
                w.assign(new)
    if len(eager_outs) == 1:
        _leave_logits(op, inputs, eager_outs[0])
    return eager_outs[0] if len(eager_outs) == 1 else tuple(eager_outs)


def plain_sigmoid(op: Op) -> bool:
    """Whether `op` ends in a sigmoid without parameters: an Activation op, or one fused after a Dense or
    convolution (an `activation` field beside `activation_params`; a recurrent op's `activation` is its
    cells', not a last step whose input could stand for logits)."""
    return (getattr(op, "activation", None) == "sigmoid" and "activation_params" in {f.name for f in fields(op)}
            and not op.activation_params)


def _leave_logits(op: Op, inputs, out) -> None:
    """Keras 3's TensorFlow backend leaves a softmax's (over any axis) or a sigmoid's input on its
    eager output as ``_keras_logits``, which its crossentropies read (losses._carried_logits): a custom
    train_step's loss of a saturated output is the logits', not the clipped probabilities'. The input is
    the tensor a GradientTape recorded, so the loss's gradient flows through it. A sigmoid fused into a
    Dense or convolution runs eagerly as the op then this sigmoid (`apply_op`); the symbolic counterpart
    is ops/loss_functions.activation_logits."""
    if op.type_name == "softmax":  # whatever its axis, as that backend's softmax (a crossentropy reads them)
        out._keras_logits = inputs[0]
    elif op.type_name == "activation" and plain_sigmoid(op):
        out._keras_logits = inputs[0]


def _variable_inputs(inputs: Sequence, weights: Sequence) -> Sequence:
    """`inputs` with each `Variable` among them as an op reads a weight: in a symbolic call (a KerasTensor
    among the operands, or a layer's call() recording) the graph's read of it, so the graph computes on the
    weight's value at each step; eagerly its own value buffer, noted as read by the recording tapes, which
    know that buffer as the Variable (``np.asarray(variable)`` is a copy, which they did not, so
    ``tape.gradient(loss, variable)`` was None)."""
    if not any(isinstance(x, Variable) for x in inputs):
        return inputs
    if _is_symbolic(inputs) or _is_symbolic(weights) or graph._in_symbolic_call():
        from flexflow_keras.ops.functional import _tensor

        return [_tensor(x, True) if isinstance(x, Variable) else x for x in inputs]
    out = []
    for x in inputs:
        if isinstance(x, Variable):
            tape.read_variable(x)
            x = x.value
        out.append(x)
    return out


def _graph_constants(inputs: Sequence, weights: Sequence) -> tuple[list, list]:
    """Arrays and eager tensors among the operands of an op recorded in a graph, as graph constants (Keras
    takes constants anywhere, ``ops.conv(x, np_kernel)``): an input becomes a constant tensor, a weight a
    non-trainable constant Variable (float64 values narrowed to float32, as `ops.constant` does). Before,
    the graph node read ``.spec`` of the array and failed."""
    from flexflow_keras.ops.functional import constant

    def weight(w):
        if w is None or isinstance(w, Variable | KerasTensor):
            return w
        value = np.asarray(w)
        if value.dtype == np.float64:
            value = value.astype(np.float32)
        return Variable("constant", value.shape, str(value.dtype), initializer=value, trainable=False)

    return ([x if isinstance(x, KerasTensor) else constant(x) for x in inputs], [weight(w) for w in weights])


def _concrete(shape, batch: int) -> tuple[int, ...]:
    return tuple(batch if s is None else s for s in shape)
