"""`keras.ops.custom_gradient` / `tf.custom_gradient`: a function of values that returns ``(result, grad_fn)``
gets `grad_fn` as its gradient on the recording tapes (a numerically stable softplus whose automatic gradient
overflows, Géron's handson-ml3 chapter 12).

The function runs with the tapes paused, so the ops inside it are not recorded; its result is then
recorded as one `CustomGradientOp` of the tensor arguments, whose backward calls ``grad_fn(*upstream)``
(one gradient per tensor argument, as TensorFlow and Keras 3 take it; a None one is taken as zeros, where
TensorFlow's tape answers None for that argument). It works on values (eager code and
`GradientTape`); on symbolic tensors (inside a model's graph) it is an error naming what to do instead.
"""

from __future__ import annotations

import contextlib
import functools
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from flexflow_keras.errors import GraphError
from flexflow_keras.ops import tape
from flexflow_keras.ops.base import Op, apply_op
from flexflow_keras.ops.graph import KerasTensor, TensorSpec, Variable


@dataclass(frozen=True)
class CustomGradientOp(Op):
    """The outputs a custom-gradient function computed; its backward is the function's `grad_fn`."""

    type_name: ClassVar[str] = "custom_gradient"
    results: tuple = field(default=(), compare=False)
    grad_fn: object = field(default=None, compare=False)
    label: str = "custom_gradient"

    def sample_dim(self):
        return None

    def output_specs(self, inputs, weights):
        return tuple(TensorSpec(r.shape, str(r.dtype)) for r in self.results)

    def forward(self, ctx, inputs, weights, outputs, saved, stats):
        for out, r in zip(outputs, self.results, strict=True):
            out[...] = r

    def backward(self, ctx, inputs, weights, outputs, saved, stats, grad_outputs, grad_inputs, grad_weights):
        grads = self.grad_fn(*grad_outputs)
        grads = list(grads) if isinstance(grads, list | tuple) else [grads]
        wanted = [i for i, g in enumerate(grad_inputs) if g is not None]
        if len(grads) != len(grad_inputs):
            raise GraphError(f"custom_gradient '{self.label}': its gradient function returned {len(grads)} "
                             f"gradient(s) for {len(grad_inputs)} tensor argument(s); return one per argument "
                             f"(None for an argument without one).")
        for i in wanted:
            g = grads[i]
            grad_inputs[i][...] = 0 if g is None else np.broadcast_to(np.asarray(g), grad_inputs[i].shape)


@contextlib.contextmanager
def _paused():
    tapes = [t for t in tape._ACTIVE if t._recording]
    for t in tapes:
        t._recording = False
    try:
        yield
    finally:
        for t in tapes:
            t._recording = True


def _is_tensor(x) -> bool:
    return isinstance(x, np.ndarray | Variable) or (hasattr(x, "__array__") and not isinstance(x, str))


def custom_gradient(f):
    """Decorate ``f(*args) -> (result, grad_fn)``: calling it returns `result`, and a `GradientTape` takes
    ``grad_fn(*upstream)`` as the gradient with respect to the tensor arguments.

    Example:
        >>> @keras.ops.custom_gradient
        ... def softplus(z):
        ...     def grad(upstream):
        ...         return upstream * (1 - 1 / (1 + keras.ops.exp(z)))
        ...     return keras.ops.log(1 + keras.ops.exp(-keras.ops.abs(z))) + keras.ops.maximum(0.0, z), grad
    """

    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        if any(isinstance(a, KerasTensor) for a in args):
            raise GraphError(f"custom_gradient '{f.__name__}' was called on symbolic tensors (inside a model's "
                             f"graph); flexflow_keras runs custom gradients on values (eager code and "
                             f"GradientTape). In a layer, compose the stable forward from keras.ops (its automatic "
                             f"gradient is then used), or call the function in a custom training loop.")
        with _paused():
            result, grad_fn = f(*args, **kwargs)
        if not tape.recording():
            return result
        multi = isinstance(result, list | tuple)
        results = tuple(np.asarray(r) for r in (result if multi else [result]))
        tensors = [a for a in args if _is_tensor(a)]
        out = apply_op(CustomGradientOp(results, grad_fn, f.__name__), tensors, name=f.__name__)
        return type(result)(out if isinstance(out, tuple) else (out,)) if multi else out

    return wrapped
