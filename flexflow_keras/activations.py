"""`keras.activations`: activation functions by name, composed from ops.

Each function works on symbolic tensors (it records an op) and on NumPy arrays (it computes at once).
Element-wise ones are `ops.activation(x, name, **params)`; `softmax`/`log_softmax` are their own ops.
`get` resolves names, `serialize` gives the name back. Layers fuse an element-wise activation into
their main op (`ops.dense(..., activation="relu")`) when `fusable_name` says it is one of these.
"""

from __future__ import annotations

from collections.abc import Callable

from flexflow_keras import ops


def _act(name: str, defaults: dict, x, **params):
    given = {k: v for k, v in params.items() if v != defaults.get(k)}
    return ops.activation(x, name, **given)


def relu(x, negative_slope=0.0, max_value=None, threshold=0.0):
    """``max(x, 0)``, with optional leak below `threshold` and a cap at `max_value`."""
    return _act("relu", {"negative_slope": 0.0, "max_value": None, "threshold": 0.0}, x,
                negative_slope=negative_slope, max_value=max_value, threshold=threshold)


def leaky_relu(x, negative_slope=0.2):
    """``x`` for x >= 0, ``negative_slope * x`` otherwise."""
    return _act("leaky_relu", {"negative_slope": 0.2}, x, negative_slope=negative_slope)


def relu6(x):
    """``min(max(x, 0), 6)``."""
    return ops.activation(x, "relu6")


def elu(x, alpha=1.0):
    """``x`` for x > 0, ``alpha * (exp(x) - 1)`` otherwise."""
    return _act("elu", {"alpha": 1.0}, x, alpha=alpha)


def selu(x):
    """Scaled ELU with the self-normalising constants."""
    return ops.activation(x, "selu")


def celu(x, alpha=1.0):
    """Continuously differentiable ELU."""
    return _act("celu", {"alpha": 1.0}, x, alpha=alpha)


def gelu(x, approximate=False):
    """Gaussian error linear unit (`approximate=True`: the tanh form)."""
    return _act("gelu", {"approximate": False}, x, approximate=approximate)


def sigmoid(x):
    """``1 / (1 + exp(-x))``."""
    return ops.activation(x, "sigmoid")


def hard_sigmoid(x):
    """Piecewise-linear sigmoid: ``clip(x / 6 + 0.5, 0, 1)`` (Keras 3)."""
    return ops.activation(x, "hard_sigmoid")


def log_sigmoid(x):
    """``log(sigmoid(x))``."""
    return ops.activation(x, "log_sigmoid")


def tanh(x):
    """Hyperbolic tangent."""
    return ops.activation(x, "tanh")


def hard_tanh(x):
    """``clip(x, -1, 1)``."""
    return ops.activation(x, "hard_tanh")


def softplus(x):
    """``log(1 + exp(x))``."""
    return ops.activation(x, "softplus")


def softsign(x):
    """``x / (1 + |x|)``."""
    return ops.activation(x, "softsign")


def silu(x):
    """``x * sigmoid(x)`` (also `swish`)."""
    return ops.activation(x, "silu")


swish = silu


def hard_silu(x):
    """``x * hard_sigmoid(x)`` (also `hard_swish`)."""
    return ops.activation(x, "hard_silu")


hard_swish = hard_silu


def mish(x):
    """``x * tanh(softplus(x))``."""
    return ops.activation(x, "mish")


def exponential(x):
    """``exp(x)``."""
    return ops.activation(x, "exponential")


def linear(x):
    """The identity (what `activation=None` means)."""
    return x


def hard_shrink(x, threshold=0.5):
    """x where ``|x| > threshold``, else 0."""
    return ops.hard_shrink(x, threshold)


def soft_shrink(x, threshold=0.5):
    """x shrunk toward 0 by `threshold` (0 on [-threshold, threshold])."""
    return ops.soft_shrink(x, threshold)


def tanh_shrink(x):
    """``x - tanh(x)``."""
    return ops.tanh_shrink(x)


def sparse_plus(x):
    """0 for x <= -1, ``(x + 1)^2 / 4`` on (-1, 1), x from 1."""
    return ops.sparse_plus(x)


def squareplus(x, b=4):
    """``(x + sqrt(x^2 + b)) / 2``."""
    return ops.squareplus(x, b)


def threshold(x, threshold, default_value):
    """x where ``x > threshold``, else `default_value`."""
    return ops.threshold(x, threshold, default_value)


def sparse_sigmoid(x):
    """0 for x <= -1, ``(x + 1) / 2`` on (-1, 1), 1 from 1."""
    return ops.sparse_sigmoid(x)


def glu(x, axis=-1):
    """The gated linear unit: ``a * sigmoid(b)`` for the halves a, b of x along `axis`."""
    return ops.glu(x, axis)


def sparsemax(x, axis=-1):
    """The projection of x onto the probability simplex along `axis` (a sparse softmax)."""
    return ops.sparsemax(x, axis)


def softmax(x, axis=-1):
    """``exp(x) / sum(exp(x))`` along `axis`."""
    return ops.softmax(x, axis=axis)


def log_softmax(x, axis=-1):
    """``x - log(sum(exp(x)))`` along `axis`."""
    return ops.log_softmax(x, axis=axis)


_FUNCTIONS: dict[str, Callable] = {
    "relu": relu, "leaky_relu": leaky_relu, "relu6": relu6, "elu": elu, "selu": selu, "celu": celu,
    "gelu": gelu, "sigmoid": sigmoid, "hard_sigmoid": hard_sigmoid, "log_sigmoid": log_sigmoid,
    "tanh": tanh, "hard_tanh": hard_tanh, "softplus": softplus, "softsign": softsign, "silu": silu,
    "swish": swish, "hard_silu": hard_silu, "hard_swish": hard_swish, "mish": mish,
    "exponential": exponential, "linear": linear, "softmax": softmax, "log_softmax": log_softmax,
    "hard_shrink": hard_shrink, "soft_shrink": soft_shrink, "tanh_shrink": tanh_shrink, "sparse_plus": sparse_plus,
    "squareplus": squareplus, "threshold": threshold, "sparse_sigmoid": sparse_sigmoid, "glu": glu,
    "sparsemax": sparsemax,
}
# Element-wise activations with default parameters: a layer may fuse them into its main op.
_FUSABLE = {fn: name for name, fn in _FUNCTIONS.items()
            if name not in ("softmax", "log_softmax", "linear", "swish", "hard_swish", "threshold", "glu", "sparsemax")}


def fusable_name(fn: Callable | None) -> str | None:
    """The op-level name of `fn` when it is a built-in element-wise activation (else None)."""
    return _FUSABLE.get(fn) if fn is not None else None


def get(identifier) -> Callable:
    """The activation function for a name, a function, or None (the identity, `linear`).

    Raises:
        ValueError: for an unknown name, listing the valid ones.
    """
    if identifier is None:
        return linear
    if isinstance(identifier, str):
        fn = _FUNCTIONS.get(identifier)
        if fn is None:
            from flexflow_keras.utils.serialization import lookup

            fn = lookup(identifier)
        if fn is None:
            raise ValueError(f"Unknown activation '{identifier}'. Valid names: {sorted(_FUNCTIONS)}.")
        return fn
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if callable(identifier):  # (tf.nn.relu under python -m flexflow_keras: Keras' relu, keras_alias.py)
        return getattr(identifier, "_keras_activation", identifier)
    raise ValueError(f"Could not interpret activation {identifier!r}; pass a name such as 'relu' or a "
                     "function.")


def serialize(fn: Callable) -> str | dict:
    """A built-in activation's Keras name; a user function (or activation object) as Keras 3 writes it
    (`keras.saving.serialize_keras_object`: ``{"module", "class_name": "function", "config":
    "package>name", ...}`` for a registered function)."""
    for name, f in _FUNCTIONS.items():
        if f is fn:
            return name
    if getattr(fn, "_keras_name", None) in _FUNCTIONS:  # tf.nn.softmax / sigmoid as an activation (keras_alias)
        return fn._keras_name
    from flexflow_keras.utils.serialization import serialize_keras_object

    try:
        return serialize_keras_object(fn)
    except TypeError:  # a callable without a name or config (a functools.partial): described, not rebuilt
        return getattr(fn, "__name__", repr(fn))


def deserialize(config, custom_objects=None) -> Callable:
    """The activation for `serialize`'s output."""
    from flexflow_keras.utils.serialization import deserialize_keras_object

    return deserialize_keras_object(config, custom_objects, module_objects=_FUNCTIONS, kind="activation")


def __dir__():
    """What `dir(keras.activations)` lists in Keras 3.15: the activations, get, serialize, deserialize."""
    hidden = {"Callable", "annotations", "fusable_name", "ops"}
    return sorted(n for n in globals() if not (n in hidden or n.startswith("_")) or n.startswith("__"))
