"""`keras.losses`: loss classes and functions with Keras 3 semantics, label validation, and `get`.

Contract with the training loop (docs/contracts.md):

- ``loss.per_sample(y_true, y_pred)``: per-sample losses. On KerasTensors it records the op
  ``flexflow_keras.ops.loss(name, y_true, y_pred, **kwargs)`` (names ``categorical_crossentropy``,
  ``sparse_categorical_crossentropy``, ``binary_crossentropy``, ``mean_squared_error``,
  ``mean_absolute_error``; kwargs ``from_logits``/``label_smoothing``); on arrays it computes the same
  values eagerly with NumPy (Keras' TensorFlow-backend formulas). A user function ``fn(y_true, y_pred)``
  is wrapped so `per_sample` calls it (on KerasTensors in the training graph).
- ``loss.validate(y_true_array, y_pred_shape, output_name)`` raises `DataError` with the fix when the
  labels do not fit the loss (integer labels for a one-hot loss, one-hot labels for a sparse loss,
  out-of-range classes, labels outside [0, 1] for binary crossentropy, NaN, shape mismatches).
- ``loss(y_true, y_pred, sample_weight=None)``: the reduced scalar, eagerly, as Keras
  (``sum_over_batch_size``: sum of weighted losses over the number of loss elements).
- `get(identifier)` for names, config dicts, classes, objects and functions; `resolve` also maps
  'crossentropy'/'ce' from the label and output shapes as Keras' compile does.

This module owns the namespace: the lookup by name (`get`, `resolve`, `serialize`, `deserialize`), the
registry of every loss module's classes, functions and short names, the Keras 3 losses that are missing and
why, and the eager results of the loss functions (tensors with ``.numpy()``). The losses themselves live in
losses_base.py (`Loss`, `LossFunctionWrapper`, reductions, shared helpers), losses_core.py (the five fused
losses: crossentropies, MSE, MAE) and the other losses_*.py modules, each listing its CLASSES and FUNCTIONS
(and maybe SHORT_NAMES): losses_more.py (MAPE, MSLE, KLD, cosine similarity, Huber, log-cosh and their Keras 2
short names), losses_hinge.py (hinge, squared hinge, categorical hinge), losses_focal.py (binary and
categorical focal crossentropy), losses_probabilistic.py (Poisson, generalized crossentropy),
losses_overlap.py (Dice, Tversky) and losses_ctc.py (CTC).
"""

from __future__ import annotations

import functools
import inspect

import numpy as np

from flexflow_keras import losses_core as _core
from flexflow_keras import losses_ctc as _ctc
from flexflow_keras import losses_focal as _focal
from flexflow_keras import losses_hinge as _hinge
from flexflow_keras import losses_more as _more
from flexflow_keras import losses_overlap as _overlap
from flexflow_keras import losses_probabilistic as _probabilistic
from flexflow_keras.errors import ArgumentError, DataError
from flexflow_keras.losses_base import (  # noqa: F401 - the helpers metrics/ and models/ import from here
    _REDUCTIONS,
    Loss,
    LossFunctionWrapper,
    _align,
    _Builtin,
    _clip_interval,
    _epsilon,
    _ignore_class_weights,
    _reduce,
    _same_rank,
    _snake,
    _symbolic,
)
from flexflow_keras.losses_core import (  # noqa: F401 - and the core losses' private helpers
    _CARRIED,
    BCE,
    MAE,
    MSE,
    BinaryCrossentropy,
    CategoricalCrossentropy,
    MeanAbsoluteError,
    MeanSquaredError,
    SparseCategoricalCrossentropy,
    _carried_logits,
    _last_axis_only,
    _logsumexp,
    _loss_op,
    bce,
    binary_crossentropy,
    categorical_crossentropy,
    mae,
    mean_absolute_error,
    mean_squared_error,
    mse,
    sparse_categorical_crossentropy,
)
from flexflow_keras.losses_ctc import CTC, ctc
from flexflow_keras.losses_focal import (
    BinaryFocalCrossentropy,
    CategoricalFocalCrossentropy,
    binary_focal_crossentropy,
    categorical_focal_crossentropy,
)
from flexflow_keras.losses_hinge import (
    CategoricalHinge,
    Hinge,
    SquaredHinge,
    categorical_hinge,
    hinge,
    squared_hinge,
)
from flexflow_keras.losses_more import (
    KLD,
    MAPE,
    MSLE,
    CosineSimilarity,
    Huber,
    KLDivergence,
    LogCosh,
    MeanAbsolutePercentageError,
    MeanSquaredLogarithmicError,
    cosine,
    cosine_proximity,
    cosine_similarity,
    huber,
    kl_divergence,
    kld,
    kullback_leibler_divergence,
    log_cosh,
    mape,
    mean_absolute_percentage_error,
    mean_squared_logarithmic_error,
    msle,
)
from flexflow_keras.losses_overlap import Dice, Tversky, dice, tversky
from flexflow_keras.losses_probabilistic import (
    CategoricalGeneralizedCrossEntropy,
    Poisson,
    categorical_generalized_cross_entropy,
    poisson,
)
from flexflow_keras.losses_reduction import Reduction

# --- lookup ----------------------------------------------------------------------------------------------

_CLASSES: dict[str, type[Loss]] = {}
_FUNCTIONS: dict = {}
_NAMES: dict[str, type[Loss]] = {}
for _module in (_core, _more, _hinge, _focal, _probabilistic, _overlap, _ctc):
    for _cls in _module.CLASSES:
        _CLASSES[_cls.__name__] = _NAMES[_cls.__name__] = _NAMES[_snake(_cls.__name__)] = _cls
    _FUNCTIONS.update(_module.FUNCTIONS)
    _NAMES.update(getattr(_module, "SHORT_NAMES", {}))


# Keras 3 losses flexflow_keras does not provide, and why (for get() and attribute access)
_MISSING = {
    "circle": "Circle loss compares every pair of samples of a batch and leaves out each sample's pair with "
              "itself; a flexflow_keras training graph has no per-sample index to build that diagonal from",
}


def _unknown(identifier) -> DataError | ValueError:
    reason = _MISSING.get(str(identifier).lower())
    if reason is not None:
        return ArgumentError(f"Loss {identifier!r} of Keras 3 is not implemented in flexflow_keras: {reason}. Choose "
                          f"another loss (see keras.losses), or write one as a function of keras.ops.")
    valid = sorted(n for n in _NAMES if n.islower())
    return ValueError(f"Could not interpret loss identifier {identifier!r}. Valid losses: {', '.join(valid)} "
                      f"(or their class names, a Loss object, or a function loss(y_true, y_pred)).")


def get(identifier):
    """A Loss object from a name, a config dict, a Loss class or object, or a function.

    Built-in names and functions give the built-in class (so label checks and fused kernels apply); any
    other function ``fn(y_true, y_pred)`` is wrapped in `LossFunctionWrapper`.

    Raises:
        ValueError: for an unknown name, listing the valid ones.
    """
    if identifier is None:
        return None
    if isinstance(identifier, Loss):
        return identifier
    if isinstance(identifier, str):
        cls = _NAMES.get(identifier)
        if cls is None:
            raise _unknown(identifier)
        return cls()
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, type) and issubclass(identifier, Loss):
        return identifier()
    if callable(identifier):
        cls = _FUNCTIONS.get(identifier)
        return cls() if cls is not None else LossFunctionWrapper(identifier)
    raise _unknown(identifier)


def resolve(identifier, y_true_shape=None, y_pred_shape=None):
    """`get`, plus Keras compile's 'crossentropy'/'ce': binary for one output unit, sparse when the labels
    have lower rank (or a last dim of 1 against several units), else categorical."""
    if isinstance(identifier, str) and identifier.lower() in ("crossentropy", "ce"):
        if y_pred_shape is None or y_true_shape is None:
            raise ValueError(f"loss={identifier!r} needs the label and output shapes to choose a crossentropy; "
                             f"name the loss explicitly (e.g. 'sparse_categorical_crossentropy').")
        if y_pred_shape[-1] == 1:
            return BinaryCrossentropy()
        if len(y_true_shape) < len(y_pred_shape) or (y_true_shape[-1] == 1 and y_pred_shape[-1] > 1):
            return SparseCategoricalCrossentropy()
        return CategoricalCrossentropy()
    return get(identifier)


def serialize(loss: Loss) -> dict:
    """Keras 3's serialized form of a Loss object."""
    return {"module": "keras.losses", "class_name": type(loss).__name__, "config": loss.get_config(),
            "registered_name": None}


def deserialize(config: dict, custom_objects: dict | None = None) -> Loss:
    """Rebuild a loss from `serialize`'s dict (or ``{"class_name", "config"}``)."""
    name = config.get("class_name")
    cls = (custom_objects or {}).get(name) or _NAMES.get(name)
    if cls is None:
        raise _unknown(name)
    return cls.from_config(dict(config.get("config", {})))


__all__ = ["Loss", "LossFunctionWrapper", "CategoricalCrossentropy", "SparseCategoricalCrossentropy",
           "BinaryCrossentropy", "MeanSquaredError", "MeanAbsoluteError", "categorical_crossentropy",
           "sparse_categorical_crossentropy", "binary_crossentropy", "mean_squared_error",
           "mean_absolute_error", "mse", "mae", "bce", "get", "resolve", "serialize", "deserialize",
           "CosineSimilarity", "KLDivergence", "MeanAbsolutePercentageError", "MeanSquaredLogarithmicError",
           "cosine", "cosine_proximity", "cosine_similarity", "kl_divergence", "kld", "KLD",
           "kullback_leibler_divergence", "mape", "MAPE", "mean_absolute_percentage_error",
           "mean_squared_logarithmic_error", "msle", "MSLE", "CategoricalHinge", "Hinge", "SquaredHinge",
           "categorical_hinge", "hinge", "squared_hinge", "Huber", "LogCosh", "huber", "log_cosh",
           "BinaryFocalCrossentropy", "CategoricalFocalCrossentropy", "binary_focal_crossentropy",
           "categorical_focal_crossentropy", "Poisson", "poisson", "CategoricalGeneralizedCrossEntropy",
           "categorical_generalized_cross_entropy", "Dice", "dice", "Tversky", "tversky", "CTC", "ctc",
           "Reduction"]


def _eager_function(fn):
    """`fn` (a loss function of arrays) returning a tensor that answers ``.numpy()``, as Keras' loss
    functions return tensors (``keras.losses.mean_squared_error(y, p).numpy()``)."""

    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        from flexflow_keras.ops.eager_tensor import EagerTensor

        out = fn(*args, **kwargs)
        if isinstance(out, np.generic):  # a 1-D y_true / y_pred gives one per-sample value: a 0-d tensor
            out = np.asarray(out)
        return out.view(EagerTensor) if type(out) is np.ndarray else out

    return wrapped


_wrapped_once: dict = {}  # one wrapper per function: aliases (mse, mean_squared_error) stay one object
for _name in __all__:
    _fn = globals().get(_name)
    if inspect.isfunction(_fn) and _name[:1].islower() and _name not in ("get", "resolve", "serialize", "deserialize"):
        _wrapped = _wrapped_once.get(_fn) or _wrapped_once.setdefault(_fn, _eager_function(_fn))
        globals()[_name] = _wrapped
        if _fn in _FUNCTIONS:
            _FUNCTIONS[_wrapped] = _FUNCTIONS[_fn]
# the upper-case aliases (MAE, MSE, MAPE, MSLE, KLD) are the same functions, so they return tensors too (ZTM's
# TensorFlow course notebook 10 calls tf.keras.losses.MAPE(y, p).numpy(); they gave NumPy scalars)
for _name, _fn in list(globals().items()):
    if _name[:1].isupper() and inspect.isfunction(_fn) and _fn in _wrapped_once:
        globals()[_name] = _wrapped_once[_fn]


def __getattr__(name: str):
    """A Keras 3 loss flexflow_keras lacks (`_MISSING`): an AttributeError saying so and why."""
    reason = _MISSING.get(name.lower())
    if reason is not None:
        raise AttributeError(f"keras.losses.{name} is not implemented in flexflow_keras: {reason}.")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
