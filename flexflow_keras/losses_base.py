"""The machinery every `keras.losses` loss shares: the `Loss` base class (per-sample values, the reduced
call, label validation, config), `LossFunctionWrapper` for a function ``fn(y_true, y_pred)``, `_Builtin` for
the built-in losses, the eager reductions (sample weights, `ignore_class` masks), and the helpers each loss
module composes with (backend epsilon and its clip interval, whether to compose ops, rank alignment).

The concrete losses live in losses_core.py and the other losses_*.py modules; `flexflow_keras.losses`
re-exports `Loss` and `LossFunctionWrapper` and looks losses up by name (losses.py).
"""

from __future__ import annotations

import re

import numpy as np

from flexflow_keras.ops import tape as _tape
from flexflow_keras.ops.eager_tensor import eager
from flexflow_keras.ops.graph import KerasTensor

# The public home of the classes below: models/custom_training.py treats a loss whose class is of module
# "flexflow_keras.losses" as a built-in one, and pickles name the classes there.
PUBLIC_MODULE = "flexflow_keras.losses"

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


def result_dtype(y_pred, at_least_float32: bool = False) -> np.dtype:
    """The dtype of a per-sample loss function's eager result, as Keras 3 on TensorFlow gives it: y_pred's own
    float dtype (NumPy arrays and tensors of float16 / float32 / float64 keep it), float32 (Keras' floatx) for
    Python numbers and lists and for integer or bool arrays. `at_least_float32`: a function whose formula meets
    a float32 constant (msle's epsilon) promotes float16 to float32, as Keras'. The values are computed in
    float64 and rounded to it (Keras computes float16 inputs in float16)."""
    dtype = getattr(y_pred, "dtype", None)
    if dtype is None:
        return np.dtype(np.float32)
    dtype = np.dtype(getattr(dtype, "name", str(dtype)))
    if dtype.kind != "f":
        return np.dtype(np.float32)
    return np.promote_types(dtype, np.float32) if at_least_float32 else dtype


def _symbolic(*xs) -> bool:
    """Whether the loss composes ops: on KerasTensors, and on arrays while a GradientTape records them
    (ops/tape.py; the ops' kernels are the ones training runs, in float32)."""
    return any(isinstance(x, KerasTensor) for x in xs) or _tape.recording()


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
        # an output carrying its logits keeps them for the crossentropies (losses_core._carried_logits)
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


for _cls in (Loss, LossFunctionWrapper, _Builtin):
    _cls.__module__ = PUBLIC_MODULE
del _cls
