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
"""

from __future__ import annotations

import functools
import inspect
import re

import numpy as np

from flexflow_keras.errors import ArgumentError, DataError
from flexflow_keras.ops import tape as _tape
from flexflow_keras.ops.eager_tensor import eager
from flexflow_keras.ops.graph import KerasTensor

_REDUCTIONS = {"sum_over_batch_size", "sum", "none", "mean", "mean_with_sample_weight"}


def _epsilon() -> float:
    try:
        from flexflow_keras import backend

        return float(backend.epsilon())
    except (ImportError, AttributeError):
        return 1e-7


def _clip_interval(y_pred) -> tuple[float, float]:
    """[epsilon, 1 - epsilon] as the prediction's float dtype rounds it, as TensorFlow clips in that dtype
    (kernels/losses.clip_bounds): in float32 1 - 1e-7 is 0.99999988, so a saturated probability's
    log(1 - q) is log(1.19e-7) = -15.94, not log(1e-7) = -16.12."""
    from kernels.losses import clip_bounds

    dtype = np.asarray(y_pred).dtype
    return clip_bounds(dtype if dtype.kind == "f" else np.dtype(np.float32), _epsilon())


def _symbolic(*xs) -> bool:
    """Whether the loss composes ops: on KerasTensors, and on arrays while a GradientTape records them
    (ops/tape.py; the ops' kernels are the ones training runs, in float32)."""
    return any(isinstance(x, KerasTensor) for x in xs) or _tape.recording()


_CARRIED = ("categorical_crossentropy", "sparse_categorical_crossentropy", "binary_crossentropy")


def _loss_op(name: str, y_true, y_pred, **kwargs):
    """The loss as ops; a crossentropy of an eager output carrying ``_keras_logits`` (models/custom_training.py:
    a softmax or sigmoid output while a GradientTape records) takes those logits, as Keras 3 on TensorFlow."""
    from flexflow_keras import ops

    logits = getattr(y_pred, "_keras_logits", None)
    if logits is not None and name in _CARRIED and not isinstance(y_pred, KerasTensor):
        y_pred, kwargs = logits, {**kwargs, "from_logits": True}
    return ops.loss(name, y_true, y_pred, **kwargs)


def _align(y_true: np.ndarray, y_pred: np.ndarray):
    """Keras' squeeze_or_expand_to_same_rank: fix a rank difference of one trailing size-1 dim."""
    if y_true.ndim == y_pred.ndim - 1 and y_pred.shape[-1] == 1:
        y_true = y_true[..., None] if y_true.ndim == 1 else y_true
        if y_true.ndim != y_pred.ndim:
            y_pred = y_pred[..., 0]
    elif y_pred.ndim == y_true.ndim - 1 and y_true.shape[-1] == 1:
        if y_pred.ndim == 1:
            y_pred = y_pred[..., None]
        else:
            y_true = y_true[..., 0]
    return y_true, y_pred


def _same_rank(y_true, y_pred):
    """`_align` on tensors (KerasTensors, or arrays while a tape records): Keras' LossFunctionWrapper.call
    squeezes or expands a trailing size-1 dim before its function, so labels of shape (N,) meet an output
    of shape (N, 1) element by element instead of broadcasting to (N, N)."""
    from flexflow_keras import ops

    t_shape = tuple(getattr(y_true, "shape", np.shape(y_true)))
    p_shape = tuple(getattr(y_pred, "shape", np.shape(y_pred)))
    if len(p_shape) == len(t_shape) + 1 and p_shape[-1] == 1:
        return (ops.expand_dims(y_true, -1), y_pred) if len(t_shape) == 1 else (y_true, ops.squeeze(y_pred, -1))
    if len(t_shape) == len(p_shape) + 1 and t_shape[-1] == 1:
        return (y_true, ops.expand_dims(y_pred, -1)) if len(p_shape) == 1 else (ops.squeeze(y_true, -1), y_pred)
    return y_true, y_pred


# --- per-sample functions (eager NumPy; symbolic through ops.loss) ---------------------------------------

def _logsumexp(z: np.ndarray) -> np.ndarray:
    m = np.max(z, axis=-1, keepdims=True)
    return (m + np.log(np.sum(np.exp(z - m), axis=-1, keepdims=True)))[..., 0]


def _carried_logits(y_pred, from_logits: bool):
    """(y_pred, from_logits), or (its logits, True) when y_pred carries ``_keras_logits``: a compiled
    model's softmax or sigmoid output as the metrics see it (metrics/logits.py), whose crossentropies
    Keras 3's TensorFlow backend computes from the activation's input in a traced step."""
    logits = getattr(y_pred, "_keras_logits", None)
    return (y_pred, from_logits) if logits is None else (logits, True)


def categorical_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    """Per-sample crossentropy between one-hot labels and probabilities (or logits).

    Args:
        y_true: one-hot labels, shape (..., C).
        y_pred: probabilities (or logits with `from_logits`), shape (..., C).
        from_logits: y_pred holds logits.
        label_smoothing: labels become ``y*(1-ls) + ls/C`` (C: the last dim, as Keras', whatever `axis`).
        axis: the class axis (Keras' channels_first crossentropy takes axis=1).
    """
    ndim = len(getattr(y_pred, "shape", np.shape(y_pred)))
    if axis not in (-1, ndim - 1):
        from flexflow_keras.ops.loss_functions import _class_axis_moved

        return _class_axis_moved(y_true, y_pred, from_logits, label_smoothing, axis)
    if _symbolic(y_true, y_pred):
        return _loss_op("categorical_crossentropy", y_true, y_pred, from_logits=from_logits,
                        label_smoothing=label_smoothing)
    y_pred, from_logits = _carried_logits(y_pred, from_logits)
    p = np.asarray(y_pred, np.float64)
    t = np.asarray(y_true, np.float64)
    if label_smoothing:
        t = t * (1.0 - label_smoothing) + label_smoothing / p.shape[-1]
    if from_logits:
        out = np.sum(t, axis=-1) * _logsumexp(p) - np.sum(t * p, axis=-1)
    else:
        eps = _epsilon()
        q = np.clip(p / np.sum(p, axis=-1, keepdims=True), eps, 1.0 - eps)
        out = -np.sum(t * np.log(q), axis=-1)
    return out.astype(np.float32)


def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False, ignore_class=None, axis=-1):
    """Per-sample crossentropy between integer class labels and probabilities (or logits).

    Args:
        y_true: class ids, shape (...) or (..., 1).
        y_pred: probabilities (or logits), shape (..., C).
        from_logits: y_pred holds logits.
        ignore_class: a class id whose samples get loss 0.
        axis: must be -1.
    """
    if _symbolic(y_true, y_pred):
        if ignore_class is not None:
            raise ArgumentError("sparse_categorical_crossentropy(ignore_class=...) on symbolic tensors: flexflow_keras "
                                "masks the ignored entries when the loss is a compiled model's "
                                "(compile(loss=keras.losses.SparseCategoricalCrossentropy(ignore_class=k))); as a "
                                "function here, give those entries sample_weight 0 instead.")
        return _loss_op("sparse_categorical_crossentropy", y_true, y_pred, from_logits=from_logits)
    _last_axis_only("sparse_categorical_crossentropy", axis, y_pred)
    y_pred, from_logits = _carried_logits(y_pred, from_logits)
    p = np.asarray(y_pred, np.float64)
    labels = np.asarray(y_true)
    if labels.ndim == p.ndim and labels.shape[-1] == 1:
        labels = labels[..., 0]
    labels = labels.astype(np.int64)
    valid = None
    if ignore_class is not None:
        valid = labels != ignore_class
        labels = np.where(valid, labels, 0)
    if from_logits:
        z = p
    else:
        eps = _epsilon()
        z = np.log(np.clip(p, eps, 1.0 - eps))
    picked = np.take_along_axis(z, labels[..., None], axis=-1)[..., 0]
    out = _logsumexp(z) - picked
    if valid is not None:
        out = np.where(valid, out, 0.0)
    return out.astype(np.float32)


def binary_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    """Per-sample binary crossentropy, the mean over the last axis.

    Args:
        y_true: labels in [0, 1], the shape of y_pred.
        y_pred: probabilities (or logits with `from_logits`).
        from_logits: y_pred holds logits.
        label_smoothing: labels become ``y*(1-ls) + ls/2``.
        axis: must be -1.
    """
    if _symbolic(y_true, y_pred):
        return _loss_op("binary_crossentropy", y_true, y_pred, from_logits=from_logits,
                        label_smoothing=label_smoothing)
    _last_axis_only("binary_crossentropy", axis, y_pred)
    y_pred, from_logits = _carried_logits(y_pred, from_logits)
    t, p = _align(np.asarray(y_true, np.float64), np.asarray(y_pred, np.float64))
    if label_smoothing:
        t = t * (1.0 - label_smoothing) + 0.5 * label_smoothing
    if from_logits:
        bce = np.maximum(p, 0.0) - p * t + np.log1p(np.exp(-np.abs(p)))
    else:
        q = np.clip(p, *_clip_interval(y_pred))
        bce = -(t * np.log(q) + (1.0 - t) * np.log(1.0 - q))
    return np.mean(bce, axis=-1).astype(np.float32)


def mean_squared_error(y_true, y_pred):
    """Per-sample mean over the last axis of ``(y_pred - y_true)**2``."""
    if _symbolic(y_true, y_pred):
        return _loss_op("mean_squared_error", y_true, y_pred)
    t, p = _align(np.asarray(y_true, np.float64), np.asarray(y_pred, np.float64))
    return np.mean(np.square(p - t), axis=-1).astype(np.float32)


def mean_absolute_error(y_true, y_pred):
    """Per-sample mean over the last axis of ``|y_pred - y_true|``."""
    if _symbolic(y_true, y_pred):
        return _loss_op("mean_absolute_error", y_true, y_pred)
    t, p = _align(np.asarray(y_true, np.float64), np.asarray(y_pred, np.float64))
    return np.mean(np.abs(p - t), axis=-1).astype(np.float32)


def _last_axis_only(name: str, axis: int, y_pred) -> None:
    ndim = np.ndim(y_pred)
    if axis not in (-1, ndim - 1):
        raise ValueError(f"{name} supports only the last axis (axis=-1); received axis={axis}.")


mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error
bce = BCE = binary_crossentropy


# --- reduction -------------------------------------------------------------------------------------------

def _reduce(values: np.ndarray, sample_weight, reduction: str):
    values = np.asarray(values, np.float64)
    if sample_weight is not None:
        sw = np.asarray(sample_weight, np.float64)
        values, sw = _align(values, sw) if values.ndim != sw.ndim else (values, sw)
        values = values * sw
    if reduction in ("none", None) or values.ndim == 0 or values.shape == (0,):
        return values.astype(np.float32)
    total = np.sum(values)
    if reduction == "sum":
        return np.float32(total)
    if reduction == "mean_with_sample_weight" and sample_weight is not None:
        divisor = float(np.sum(sample_weight))
    else:
        divisor = float(values.size)
    return np.float32(total / divisor if divisor else 0.0)


def _ignore_class_weights(loss, y_true, values, sample_weight):
    """Keras 3's apply_mask for a loss with `ignore_class`, called eagerly: the valid entries' mask joins the
    sample weights, scaled by total / valid under a mean reduction, so the mean runs over the valid entries
    only (it ran over all of them: 6/5 too small with one ignored label of six). Unchanged without one."""
    ignore = getattr(loss, "_fn_kwargs", {}).get("ignore_class")
    values = np.asarray(values)
    if ignore is None or values.ndim == 0 or np.size(y_true) != values.size:
        return sample_weight
    mask = (np.asarray(y_true).reshape(values.shape) != ignore).astype(np.float64)
    if loss.reduction in ("mean", "sum_over_batch_size"):
        mask *= mask.size / (mask.sum() + _epsilon())
    if sample_weight is None:
        return mask
    mask, sw = _align(mask, np.asarray(sample_weight, np.float64))
    return sw * mask


# --- classes -------------------------------------------------------------------------------------------

def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


class Loss:
    """Base class. Subclasses implement ``call(y_true, y_pred)`` returning per-sample losses; it must
    work on KerasTensors (compose `flexflow_keras.ops`) to train, and on arrays for eager calls.

    Args:
        name: the loss' name.
        reduction: "sum_over_batch_size" (default), "sum", "mean", "mean_with_sample_weight", "none".
        dtype: accepted for Keras compatibility (computations use float32 outputs).
    """

    #: "categorical", "sparse", "binary", "regression" or None (custom): what `validate` checks
    label_kind: str | None = None

    def __init__(self, name=None, reduction="sum_over_batch_size", dtype=None):
        if reduction not in _REDUCTIONS and reduction is not None:
            raise ValueError(f"{type(self).__name__} got reduction={reduction!r}; expected one of "
                             f"{sorted(_REDUCTIONS)}.")
        self.name = name or _snake(type(self).__name__)
        self.reduction = reduction  # None stays None, as in Keras' get_config
        self.dtype = dtype

    def call(self, y_true, y_pred):
        raise NotImplementedError(f"{type(self).__name__} must implement call(y_true, y_pred) (returning per-sample "
                                  f"losses) or __call__(y_true, y_pred, sample_weight=None) (returning the loss)")

    def per_sample(self, y_true, y_pred):
        """Per-sample losses: symbolic on KerasTensors (the training graph), eager on arrays. A subclass that
        overrides ``__call__`` gives what its ``__call__`` returns (its own reduction), as Keras 3's compiled
        loss calls ``loss(y_true, y_pred, sample_weight)``."""
        if type(self).__call__ is not Loss.__call__ and not self.__dict__.get("_in_base_call"):
            return self(y_true, y_pred)
        return self.call(y_true, y_pred)

    def __call__(self, y_true, y_pred, sample_weight=None):
        """The reduced loss: eagerly a float32 scalar `EagerTensor` (unless reduction='none'); on KerasTensors the
        mean (or sum) of the per-sample losses as a KerasTensor."""
        outer = self.__dict__.get("_in_base_call", False)
        self._in_base_call = True  # per_sample reads call() here, also under a subclass' own __call__
        try:
            return self._reduced(y_true, y_pred, sample_weight)
        finally:
            self._in_base_call = outer

    def _reduced(self, y_true, y_pred, sample_weight):
        if _symbolic(y_true, y_pred, sample_weight):
            return self._symbolic_reduce(y_true, y_pred, sample_weight)
        # an output carrying its logits keeps them for the crossentropies (losses._carried_logits)
        pred = y_pred if hasattr(y_pred, "_keras_logits") else np.asarray(y_pred, np.float32)
        values = self.per_sample(np.asarray(y_true), pred)
        return eager(_reduce(values, _ignore_class_weights(self, y_true, values, sample_weight), self.reduction))

    def _symbolic_reduce(self, y_true, y_pred, sample_weight):
        from flexflow_keras import ops

        values = self.per_sample(y_true, y_pred)
        if sample_weight is not None:
            if self.reduction == "mean_with_sample_weight" and not any(
                    isinstance(v, KerasTensor) for v in (y_true, y_pred, sample_weight)):
                return ops.divide(ops.sum(ops.multiply(values, sample_weight)), float(np.sum(sample_weight)))
            if self.reduction == "mean_with_sample_weight":
                raise ValueError(f"{type(self).__name__}(reduction='mean_with_sample_weight') on KerasTensors is "
                                 f"not supported; use 'sum_over_batch_size'.")
            values = ops.multiply(*_same_rank(values, ops.cast(sample_weight, values.dtype)))
        if self.reduction in ("none", None):
            return values
        return ops.sum(values) if self.reduction == "sum" else ops.mean(values)

    def validate(self, y_true, y_pred_shape, output_name: str = "output") -> None:
        """Raise DataError with the fix when `y_true` cannot be the labels of this loss.

        Args:
            y_true: the label array for one output (all samples).
            y_pred_shape: the output's shape (batch dim may be None).
            output_name: the output's name, for the message.
        """
        from flexflow_keras.data.checks import check_labels

        y = np.asarray(y_true)
        ignore = getattr(self, "_fn_kwargs", {}).get("ignore_class")
        if ignore is not None:  # entries of the ignored class are never read as a class (e.g. -1 padding)
            y = np.where(y == ignore, 0, y)
        check_labels(self.label_kind, self.name, y, tuple(y_pred_shape), output_name,
                     getattr(self, "from_logits", False))

    def get_config(self) -> dict:
        return {"name": self.name, "reduction": self.reduction}

    @classmethod
    def from_config(cls, config: dict):
        return cls(**config)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self.name!r}>"


class LossFunctionWrapper(Loss):
    """A per-sample function ``fn(y_true, y_pred, **kwargs)`` as a Loss.

    Args:
        fn: the function; for training it is called on KerasTensors.
        reduction, name, dtype: as `Loss`.
        **kwargs: passed to `fn`.
    """

    def __init__(self, fn, reduction="sum_over_batch_size", name=None, dtype=None, **kwargs):
        super().__init__(name=name or getattr(fn, "__name__", "loss"), reduction=reduction, dtype=dtype)
        self.fn = fn
        self._fn_kwargs = kwargs

    def call(self, y_true, y_pred):
        if _symbolic(y_true, y_pred):
            y_true, y_pred = _same_rank(y_true, y_pred)
        return self.fn(y_true, y_pred, **self._fn_kwargs)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(self._fn_kwargs)
        return config

    @classmethod
    def from_config(cls, config: dict):
        return cls(**config)


class _Builtin(LossFunctionWrapper):
    """A built-in loss: a LossFunctionWrapper whose config is exactly its constructor arguments."""

    _fn = None

    def __init__(self, reduction="sum_over_batch_size", name=None, dtype=None, **kwargs):
        super().__init__(type(self)._fn, reduction=reduction, name=name, dtype=dtype, **kwargs)
        for k, v in kwargs.items():
            setattr(self, k, v)

    def call(self, y_true, y_pred):
        if _symbolic(y_true, y_pred):
            y_true, y_pred = _same_rank(y_true, y_pred)
        return type(self)._fn(y_true, y_pred, **self._fn_kwargs)


class CategoricalCrossentropy(_Builtin):
    """Crossentropy for one-hot labels.

    Args:
        from_logits: y_pred holds logits. label_smoothing: float in [0, 1]. axis: -1.
        reduction, name, dtype: as `Loss`.
    """

    _fn = staticmethod(categorical_crossentropy)
    label_kind = "categorical"

    def __init__(self, from_logits=False, label_smoothing=0.0, axis=-1, reduction="sum_over_batch_size",
                 name="categorical_crossentropy", dtype=None):
        super().__init__(reduction=reduction, name=name, dtype=dtype, from_logits=from_logits,
                         label_smoothing=label_smoothing, axis=axis)


class SparseCategoricalCrossentropy(_Builtin):
    """Crossentropy for integer class labels.

    Args:
        from_logits: y_pred holds logits. ignore_class: class id with loss 0 (eager only).
        reduction, name, dtype: as `Loss`.
    """

    _fn = staticmethod(sparse_categorical_crossentropy)
    label_kind = "sparse"

    def __init__(self, from_logits=False, ignore_class=None, reduction="sum_over_batch_size",
                 name="sparse_categorical_crossentropy", dtype=None):
        super().__init__(reduction=reduction, name=name, dtype=dtype, from_logits=from_logits,
                         ignore_class=ignore_class)


class BinaryCrossentropy(_Builtin):
    """Binary crossentropy, averaged over the last axis.

    Args:
        from_logits: y_pred holds logits. label_smoothing: float in [0, 1]. axis: -1.
        reduction, name, dtype: as `Loss`.
    """

    _fn = staticmethod(binary_crossentropy)
    label_kind = "binary"

    def __init__(self, from_logits=False, label_smoothing=0.0, axis=-1, reduction="sum_over_batch_size",
                 name="binary_crossentropy", dtype=None):
        super().__init__(reduction=reduction, name=name, dtype=dtype, from_logits=from_logits,
                         label_smoothing=label_smoothing, axis=axis)


class MeanSquaredError(_Builtin):
    """Mean of squared errors over the last axis. Args: reduction, name, dtype as `Loss`."""

    _fn = staticmethod(mean_squared_error)
    label_kind = "regression"

    def __init__(self, reduction="sum_over_batch_size", name="mean_squared_error", dtype=None):
        super().__init__(reduction=reduction, name=name, dtype=dtype)


class MeanAbsoluteError(_Builtin):
    """Mean of absolute errors over the last axis. Args: reduction, name, dtype as `Loss`."""

    _fn = staticmethod(mean_absolute_error)
    label_kind = "regression"

    def __init__(self, reduction="sum_over_batch_size", name="mean_absolute_error", dtype=None):
        super().__init__(reduction=reduction, name=name, dtype=dtype)


# --- lookup ----------------------------------------------------------------------------------------------

_CLASSES = {cls.__name__: cls for cls in (CategoricalCrossentropy, SparseCategoricalCrossentropy,
                                          BinaryCrossentropy, MeanSquaredError, MeanAbsoluteError)}
_FUNCTIONS = {categorical_crossentropy: CategoricalCrossentropy,
              sparse_categorical_crossentropy: SparseCategoricalCrossentropy,
              binary_crossentropy: BinaryCrossentropy, mean_squared_error: MeanSquaredError,
              mean_absolute_error: MeanAbsoluteError}
_NAMES: dict[str, type[Loss]] = {}
for _cls in _CLASSES.values():
    _NAMES[_cls.__name__] = _cls
    _NAMES[_snake(_cls.__name__)] = _cls
_NAMES.update({"mse": MeanSquaredError, "MSE": MeanSquaredError, "mae": MeanAbsoluteError,
               "MAE": MeanAbsoluteError, "bce": BinaryCrossentropy, "BCE": BinaryCrossentropy})


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


# The losses of the losses_*.py modules: losses_more.py (MAPE, MSLE, KLD, cosine similarity, Huber, log-cosh
# and their Keras 2 short names), losses_hinge.py (hinge, squared hinge, categorical hinge), losses_focal.py
# (binary and categorical focal crossentropy), losses_probabilistic.py (Poisson, generalized crossentropy)
# losses_overlap.py (Dice, Tversky) and losses_ctc.py (CTC). Each lists its CLASSES and FUNCTIONS (and maybe
# SHORT_NAMES).
from flexflow_keras import losses_ctc as _ctc  # noqa: E402
from flexflow_keras import losses_focal as _focal  # noqa: E402
from flexflow_keras import losses_hinge as _hinge  # noqa: E402
from flexflow_keras import losses_more as _more  # noqa: E402
from flexflow_keras import losses_overlap as _overlap  # noqa: E402
from flexflow_keras import losses_probabilistic as _probabilistic  # noqa: E402
from flexflow_keras.losses_ctc import CTC, ctc  # noqa: E402
from flexflow_keras.losses_focal import (  # noqa: E402
    BinaryFocalCrossentropy,
    CategoricalFocalCrossentropy,
    binary_focal_crossentropy,
    categorical_focal_crossentropy,
)
from flexflow_keras.losses_hinge import (  # noqa: E402
    CategoricalHinge,
    Hinge,
    SquaredHinge,
    categorical_hinge,
    hinge,
    squared_hinge,
)
from flexflow_keras.losses_more import (  # noqa: E402
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
from flexflow_keras.losses_overlap import Dice, Tversky, dice, tversky  # noqa: E402
from flexflow_keras.losses_probabilistic import (  # noqa: E402
    CategoricalGeneralizedCrossEntropy,
    Poisson,
    categorical_generalized_cross_entropy,
    poisson,
)
from flexflow_keras.losses_reduction import Reduction  # noqa: E402

for _module in (_more, _hinge, _focal, _probabilistic, _overlap, _ctc):
    for _cls in _module.CLASSES:
        _CLASSES[_cls.__name__] = _NAMES[_cls.__name__] = _NAMES[_snake(_cls.__name__)] = _cls
    _FUNCTIONS.update(_module.FUNCTIONS)
    _NAMES.update(getattr(_module, "SHORT_NAMES", {}))

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


def __getattr__(name: str):
    """A Keras 3 loss flexflow_keras lacks (`_MISSING`): an AttributeError saying so and why."""
    reason = _MISSING.get(name.lower())
    if reason is not None:
        raise AttributeError(f"keras.losses.{name} is not implemented in flexflow_keras: {reason}.")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
