"""EinsumDense (Keras 3 semantics, weight names, shapes and order: ``kernel``, then ``bias``).

The equation's meaning (kernel and bias shapes, the output shape, ``...``) is `layers.einsum_equation`'s.
An equation that is a projection (the input's trailing dims contracted with the kernel's leading ones, the
kernel's other dims appended: ``...d,de->...e``, ``abc,cde->abde``, ``abcd,cde->abe``) runs as one
`ProjectionOp` (Dense kernels, parallel rules, the bias fused when it covers the kernel's output dims);
any other runs as an einsum op, then a bias add and the activation.
"""

from __future__ import annotations

import numpy as np

from flexflow_keras import activations, constraints, initializers, ops, regularizers
from flexflow_keras.errors import ShapeError
from flexflow_keras.layers import _args
from flexflow_keras.layers.base import Layer
from flexflow_keras.layers.core import _activation_fn, apply_activation
from flexflow_keras.layers.einsum_equation import EinsumPlan, analyze, parse
from flexflow_keras.layers.input_spec import InputSpec
from flexflow_keras.ops import functional as F
from flexflow_keras.ops.base import apply_op
from flexflow_keras.ops.einsum_dense import ProjectionOp


class EinsumDense(Layer):
    """``activation(einsum(equation, inputs, kernel) + bias)``.

    Args:
        equation: ``"ab,bc->ac"``, ``"...ab,bc->...ac"`` or ``"ab...,bc->ac..."`` forms (input, kernel,
            output subscripts).
        output_shape: the output's sizes after the batch dim and apart from the ``...`` dims (an int for
            one dim); None for a dim the input gives.
        activation: name or function; None is linear.
        bias_axes: output subscripts that get a bias (None: no bias).
        kernel_initializer, bias_initializer: initializers (a VarianceScaling one counts its fans over the
            kernel's input and output axes, as Keras 3).
        kernel_regularizer, bias_regularizer: weight penalties.
        kernel_constraint, bias_constraint: projections after each update.
        lora_rank: must be None (LoRA is not supported).

    Example:
        >>> layer = EinsumDense("abc,cd->abd", output_shape=(None, 64), bias_axes="d")
        >>> layer(Input((32, 128))).shape
        (None, 32, 64)
    """

    _float_math = True

    def __init__(self, equation, output_shape, activation=None, bias_axes=None, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, lora_rank=None, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        if lora_rank is not None:
            raise ValueError(f"{_args.who(self)}: lora_rank={lora_rank!r} (LoRA fine-tuning) is not supported by "
                             f"flexflow_keras; leave lora_rank=None to train the whole kernel, or run the script "
                             f"with Keras itself.")
        parse(_args.who(self), equation)
        self.equation = equation
        self.partial_output_shape = _partial_shape(self, output_shape)
        if bias_axes is not None and not isinstance(bias_axes, str):
            raise ValueError(f"{_args.who(self)} expects bias_axes to be a string of output subscripts or None, "
                             f"received bias_axes={bias_axes!r}.")
        self.bias_axes = bias_axes
        self.activation = activations.get(activation)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        self.kernel = self.bias = None

    def _analyze(self, input_shape) -> EinsumPlan:
        return analyze(_args.who(self), self.equation, self.bias_axes, input_shape, self.partial_output_shape)

    def build(self, input_shape):
        plan = self._analyze(input_shape)
        self.input_spec = InputSpec(ndim=len(input_shape))
        init = self.kernel_initializer
        if isinstance(init, initializers.VarianceScaling):
            init = _FanScaled(init, plan)
        self.kernel = self.add_weight(name="kernel", shape=plan.kernel_shape, initializer=init,
                                      regularizer=self.kernel_regularizer, constraint=self.kernel_constraint)
        if plan.bias_shape is not None:
            self.bias = self.add_weight(name="bias", shape=plan.bias_shape, initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer, constraint=self.bias_constraint)

    def compute_output_shape(self, input_shape):
        return self._analyze(tuple(input_shape)).output_shape

    def call(self, inputs):
        x_sub, w_sub, y_sub = self._analyze(tuple(inputs.shape)).subscripts()
        n = _projection(x_sub, w_sub, y_sub)
        fused = False
        if n:
            fused = self.bias is not None and tuple(self.bias.shape) == tuple(self.kernel.shape[n:])
            weights = [self.kernel] + ([self.bias] if fused else [])
            y = apply_op(ProjectionOp(n), [F._tensor(inputs, F._symbolic(inputs))], weights)
        else:
            y = self._einsum(inputs, x_sub, w_sub, y_sub)
        if self.bias is not None and not fused:
            y = ops.add(y, self.bias)
        return apply_activation(y, _activation_fn(self.activation))

    def _einsum(self, inputs, x_sub, w_sub, y_sub):
        if y_sub[0] != x_sub[0]:
            raise ShapeError(f"{_args.who(self)}: the equation '{self.equation}' moves the input's first (batch) "
                             f"dim '{x_sub[0]}' away from the front of the output '{y_sub}'; keep it first (Keras "
                             f"counts output_shape from the batch dim too) and transpose afterwards if needed.")
        return ops.einsum(f"{x_sub},{w_sub}->{y_sub}", inputs, self.kernel)

    def get_config(self):
        return {**super().get_config(), "output_shape": self.partial_output_shape, "equation": self.equation,
                "activation": activations.serialize(self.activation), "bias_axes": self.bias_axes,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer),
                "kernel_regularizer": regularizers.serialize(self.kernel_regularizer),
                "bias_regularizer": regularizers.serialize(self.bias_regularizer),
                "activity_regularizer": regularizers.serialize(self.activity_regularizer),
                "kernel_constraint": constraints.serialize(self.kernel_constraint),
                "bias_constraint": constraints.serialize(self.bias_constraint)}


def _partial_shape(layer, output_shape) -> tuple:
    if isinstance(output_shape, (int, np.integer)) and not isinstance(output_shape, bool):
        return (int(output_shape),)
    try:
        dims = tuple(output_shape)
    except TypeError:
        dims = None
    if dims is None or any(d is not None and (isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1)
                           for d in dims):
        raise ValueError(f"{_args.who(layer)} expects output_shape to be a positive integer or a tuple of positive "
                         f"integers and None, received output_shape={output_shape!r}.")
    return tuple(None if d is None else int(d) for d in dims)


def _projection(x_sub: str, w_sub: str, y_sub: str) -> int:
    """How many trailing input dims the equation contracts when it is `ProjectionOp`'s form, else 0."""
    for n in range(1, min(len(x_sub), len(w_sub))):
        lead, contracted, out = x_sub[:-n], x_sub[-n:], w_sub[n:]
        if w_sub[:n] == contracted and y_sub == lead + out and not set(lead) & set(w_sub) \
                and len(set(x_sub + out)) == len(x_sub) + len(out):
            return n
    return 0


class _FanScaled:
    """A VarianceScaling initializer counting the fans over an einsum kernel's input and output axes
    (Keras 3 passes them as `input_axes` / `output_axes`): drawn as a (fan_in, fan_out) matrix, reshaped."""

    def __init__(self, init, plan: EinsumPlan):
        self.init = init
        shape = plan.kernel_shape
        self.fans = (int(np.prod([shape[a] for a in plan.input_axes])),
                     int(np.prod([shape[a] for a in plan.output_axes])))

    def __call__(self, shape, dtype=None):
        return np.reshape(self.init(self.fans, dtype), tuple(shape))
