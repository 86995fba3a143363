"""The metric protocol: additive partial sums, so data-parallel shards combine by addition.

Every metric keeps its state as one float64 vector. ``batch_stats(y_true, y_pred, sample_weight)``
computes one shard's contribution (NumPy in, NumPy out, no state change); the execution layer sums the
vectors of all shards (``Reduce("+")``) and calls ``merge_stats(sum)``, which adds it to the state;
``result()`` reads the state. Keras' eager API (``update_state``/``result``/``reset_state``/``__call__``)
is the same thing on one shard. Invariant: ``merge_stats(a); merge_stats(b)`` equals
``merge_stats(a + b)``.
"""

from __future__ import annotations

import functools

import numpy as np

from flexflow_keras.errors import GraphError
from flexflow_keras.losses import _align
from flexflow_keras.utils.naming import auto_name


def _refuse_symbolic(metric, args, kwargs=None) -> bool:
    """Metrics accumulate NumPy values. A symbolic update while a compute_loss override is traced into
    the step graph is recorded (metrics/symbolic_updates.py: True, the caller returns); elsewhere (a
    metric updated inside a layer's call(), Keras' endpoint-layer pattern) it gets a message naming the
    metric and what to do instead. False: no symbolic tensor, update as usual."""
    from flexflow_keras.ops.graph import KerasTensor

    def leaves(x):
        if isinstance(x, (list, tuple)):
            for v in x:
                yield from leaves(v)
        elif isinstance(x, dict):
            for v in x.values():
                yield from leaves(v)
        else:
            yield x

    if not any(isinstance(v, KerasTensor) for v in leaves((args, kwargs or {}))):
        return False
    from flexflow_keras.metrics.symbolic_updates import record

    if record(metric, args, kwargs or {}):
        return True
    raise GraphError(
        f"Metric '{metric.name}' ({type(metric).__name__}) was updated with symbolic tensors, as in a metric "
        f"updated inside a layer's call(). flexflow_keras computes metrics from the model's outputs and "
        f"labels: pass the metric to compile(metrics=[...]) (for a quantity computed inside call(), return "
        f"it as an extra model output and give that output the metric); a loss computed in call() can use "
        f"self.add_loss(...), and a metric updated inside a compute_loss() override is computed each step.")


def _eager_only(update_state):
    @functools.wraps(update_state)
    def wrapped(self, *args, **kwargs):
        if _refuse_symbolic(self, args, kwargs):
            return None
        return update_state(self, *args, **kwargs)

    wrapped._eager_only = True
    return wrapped


class MetricValue(float):
    """A metric's result: a Python float that also answers ``.numpy()`` (a float32), as the scalar tensor
    Keras' `result()` returns does (``metric.result().numpy()``, ``metric(y, p).numpy()``); pickled or
    copied, it is a plain float."""

    def numpy(self) -> np.float32:
        return np.float32(self)

    @property
    def dtype(self) -> str:
        return "float32"

    def __reduce__(self):
        return float, (float(self),)


def _value(v):
    """`v` as `MetricValue` when it is a plain (or NumPy) float; anything else as it is."""
    if isinstance(v, float) and not isinstance(v, MetricValue):
        return MetricValue(v)
    return v


def _valued(result):
    @functools.wraps(result)
    def wrapped(self):
        return _value(result(self))

    wrapped._ff_valued = True
    return wrapped


class Metric:
    """Base class of every metric.

    Subclasses set `state_size` (or override `_initial_state`), implement `batch_stats` and `result`.

    Args:
        name: the metric's name (its key in the logs).
        dtype: accepted for Keras compatibility; results are Python floats.
    """

    #: "up" when larger is better, "down" when smaller is better, None when unknown (EarlyStopping's auto)
    direction: str | None = None
    state_size = 1

    #: whether shards run `update_state` itself (a metric written the Keras way: `metrics/user_state.py`)
    _ff_by_update = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        result = cls.__dict__.get("result")
        if result is not None and not getattr(result, "_ff_valued", False):  # a float answers .numpy()
            cls.result = _valued(result)
        if "update_state" in cls.__dict__:  # every override refuses symbolic tensors with one clear message
            cls.update_state = _eager_only(cls.__dict__["update_state"])
            if not cls.__module__.startswith("flexflow_keras.") and "batch_stats" not in cls.__dict__:
                cls._ff_by_update = True  # a user's update_state: its effect on the state is the partial sum
        elif "batch_stats" in cls.__dict__:
            cls._ff_by_update = False

    def __init__(self, name=None, dtype=None):
        # Keras 3's auto_name: the class in snake case, numbered from its second instance on (auc, auc_1:
        # two AUC metrics of a model log apart; clear_session starts again)
        self.name = name or auto_name(type(self).__name__)
        self.dtype = dtype or "float32"
        self._state = self._initial_state()

    def _initial_state(self) -> np.ndarray:
        return np.zeros(self.state_size, np.float64)

    # --- variables (a metric written the Keras way) ------------------------------------------------------
    def add_variable(self, shape=(), initializer="zeros", dtype=None, aggregation="sum", name=None):
        """Keras 3: a state variable of this metric (reset to zeros by `reset_state`, summed over the
        shards of a data-parallel step, as Keras sums it over replicas). `aggregation` is accepted."""
        from flexflow_keras.initializers import get as get_initializer
        from flexflow_keras.ops.graph import Variable

        if isinstance(shape, int):
            shape = (shape,)
        init = get_initializer(initializer if initializer is not None else "zeros")
        var = Variable(name or f"variable_{len(self.__dict__.get('_ff_variables', ()))}", tuple(shape or ()),
                       dtype or self.dtype, initializer=init, trainable=False,
                       path=f"{self.name}/{name or 'variable'}")
        self.__dict__.setdefault("_ff_variables", []).append(var)
        return var

    def add_weight(self, name=None, shape=(), aggregation="sum", synchronization=None, initializer=None,
                   dtype=None, **kwargs):
        """`add_variable` in Keras 2's spelling (``add_weight(name="tp", initializer="zeros")``) and Keras
        3's (``add_weight(shape=(), initializer=..., dtype=..., name=...)``)."""
        if isinstance(name, (tuple, list, int)) and not isinstance(name, bool):  # Keras 3: shape first
            name, shape = kwargs.pop("name", None), name
        if kwargs:
            raise TypeError(f"Metric '{self.name}'.add_weight() got unexpected arguments {sorted(kwargs)}.")
        return self.add_variable(shape, initializer, dtype=dtype, aggregation=aggregation, name=name)

    # --- what the execution layer calls per shard --------------------------------------------------------
    def shard_stats(self, y_true, y_pred, sample_weight=None) -> np.ndarray:
        """One shard's partial sums: `batch_stats`, or for a metric with its own `update_state`, what
        that update adds to the whole state (`metrics/user_state.py`)."""
        if self._ff_by_update:
            from flexflow_keras.metrics.user_state import delta_of_update

            return delta_of_update(self, y_true, y_pred, sample_weight)
        return self.batch_stats(y_true, y_pred, sample_weight)

    def merge_shard(self, stats) -> None:
        """Add the sum over shards of `shard_stats` into the state."""
        if self._ff_by_update:
            from flexflow_keras.metrics.user_state import add_delta

            add_delta(self, stats)
        else:
            self.merge_stats(stats)

    # --- the additive protocol ------------------------------------------------------------------------
    def batch_stats(self, y_true, y_pred, sample_weight=None) -> np.ndarray:
        """This shard's partial sums (same shape as the state); does not change the state."""
        raise NotImplementedError(f"{type(self).__name__}.batch_stats")

    def merge_stats(self, stats) -> None:
        """Add partial sums (from `batch_stats`, possibly summed over shards) into the state."""
        stats = np.asarray(stats, np.float64)
        if stats.shape != self._state.shape:
            raise ValueError(f"Metric '{self.name}' expects stats of shape {self._state.shape}, received "
                             f"{stats.shape}.")
        self._state += stats

    def result(self) -> float:
        raise NotImplementedError(f"{type(self).__name__}.result")

    def reset_state(self) -> None:
        """Zero the state (start of an epoch): Keras 3 zeros every variable and resets held metrics; a
        Keras 2 metric that overrides `reset_states` gets that called."""
        if type(self).reset_states is not Metric.reset_states and not self.__dict__.get("_ff_resetting"):
            self.__dict__["_ff_resetting"] = True  # its super().reset_states() comes back here
            try:
                self.reset_states()
            finally:
                del self.__dict__["_ff_resetting"]
            return
        self._state = self._initial_state()
        if self._ff_by_update or self.__dict__.get("_ff_variables"):
            from flexflow_keras.metrics.user_state import zero_variables

            zero_variables(self)

    # --- Keras' eager API --------------------------------------------------------------------------------
    def update_state(self, y_true, y_pred, sample_weight=None) -> None:
        """Accumulate one batch (Keras' API)."""
        if _refuse_symbolic(self, (y_true, y_pred), {"sample_weight": sample_weight}):
            return
        self.merge_stats(self.batch_stats(y_true, y_pred, sample_weight))

    def __call__(self, *args, **kwargs):
        """`update_state` then `result`, as Keras 3."""
        self.update_state(*args, **kwargs)
        return self.result()

    def reset_states(self) -> None:  # Keras 2 spelling
        self.reset_state()

    @property
    def variables(self) -> list:
        """The state: the variables of `add_variable` (and of held metrics), or the partial-sum vector."""
        if self._ff_by_update or self.__dict__.get("_ff_variables"):
            from flexflow_keras.metrics.user_state import own_variables

            return own_variables(self)
        return [self._state]

    # --- Keras 3's stateless API: the state passed in and returned, the metric's own left as it is --
    def stateless_update_state(self, metric_variables, *args, **kwargs) -> list:
        """`update_state(*args, **kwargs)` applied to `metric_variables` (values 1:1 with `variables`);
        returns the updated values. The metric's own state does not change."""
        from flexflow_keras.metrics.user_state import check_metric_variables, run_stateless

        check_metric_variables(self, metric_variables)
        return run_stateless(self, metric_variables, lambda: self.update_state(*args, **kwargs))[1]

    def stateless_result(self, metric_variables):
        """`result()` of the state `metric_variables` (values 1:1 with `variables`)."""
        from flexflow_keras.metrics.user_state import check_metric_variables, run_stateless

        check_metric_variables(self, metric_variables)
        return run_stateless(self, metric_variables, self.result)[0]

    def stateless_reset_state(self) -> list:
        """The values `reset_state()` would give `variables`; the metric's own state does not change."""
        from flexflow_keras.metrics.user_state import run_stateless

        return run_stateless(self, None, self.reset_state)[1]

    def get_config(self) -> dict:
        return {"name": self.name, "dtype": self.dtype}

    @classmethod
    def from_config(cls, config: dict):
        return cls(**config)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self.name!r}>"


def _samplewise(values, sample_weight, reduce=np.mean):
    """Keras' reduce_to_samplewise_values: per-sample values and weights, each sample's values reduced
    with `reduce` (Mean's np.mean; Sum's np.sum, as Keras' reduce_fn=ops.sum)."""
    values = np.asarray(values, np.float64)
    sw = None
    if values.ndim == 0 and sample_weight is not None and np.ndim(sample_weight):
        values = np.full(np.shape(sample_weight)[:1], values)  # a batch mean (Keras 2 metric): per sample
    if sample_weight is not None:
        sw = np.asarray(sample_weight, np.float64)
        if values.ndim != sw.ndim:
            values, sw = _align(values, sw)
        if values.ndim > sw.ndim:
            values = reduce(values, axis=tuple(range(sw.ndim, values.ndim)))
        sw = np.broadcast_to(sw, values.shape)
        values = values * sw
        if sw.ndim > 1:
            sw = reduce(sw, axis=tuple(range(1, sw.ndim)))
    if values.ndim > 1:
        values = reduce(values, axis=tuple(range(1, values.ndim)))
    return values, sw


def mean_stats(values, sample_weight=None) -> np.ndarray:
    """[weighted sum, weight count] of `values` with Keras Mean's rules."""
    values, sw = _samplewise(values, sample_weight)
    if sw is not None:
        count = float(np.sum(sw))
    elif values.ndim >= 1:
        count = float(values.shape[0])
    else:
        count = 1.0
    return np.array([float(np.sum(values)), count])


class Mean(Metric):
    """The (weighted) mean of values (Keras' `Mean`; `update_state(values, sample_weight=None)`).

    Args:
        name, dtype: as `Metric`.
    """

    state_size = 2

    def __init__(self, name="mean", dtype=None):  # Keras 3: a fixed default, never numbered (mean, mean)
        super().__init__(name=name, dtype=dtype)

    def batch_stats(self, values, sample_weight=None) -> np.ndarray:  # noqa: D417 - Keras' signature
        """Partial [sum, count] of `values` (this metric takes values, not labels and predictions)."""
        return mean_stats(values, sample_weight)

    def update_state(self, values, sample_weight=None) -> None:
        self.merge_stats(self.batch_stats(values, sample_weight))

    def result(self) -> float:
        total, count = self._state
        return float(total / count) if count else 0.0


class Sum(Metric):
    """The (weighted) sum of values (Keras' `Sum`). Args: name, dtype as `Metric`."""

    def __init__(self, name="sum", dtype=None):  # Keras 3: a fixed default, never numbered (sum, sum)
        super().__init__(name=name, dtype=dtype)

    def batch_stats(self, values, sample_weight=None) -> np.ndarray:
        values, _ = _samplewise(values, sample_weight, np.sum)  # each sample's values summed, as Keras'
        return np.array([float(np.sum(values))])

    def update_state(self, values, sample_weight=None) -> None:
        self.merge_stats(self.batch_stats(values, sample_weight))

    def result(self) -> float:
        return float(self._state[0])


class MeanMetricWrapper(Metric):
    """The mean of a per-sample function ``fn(y_true, y_pred, **kwargs)`` (Keras' MeanMetricWrapper).

    Args:
        fn: NumPy function returning per-sample values.
        name, dtype: as `Metric`.
        **kwargs: passed to `fn`.
    """

    state_size = 2

    def __init__(self, fn, name=None, dtype=None, **kwargs):
        # Keras 3 names an unnamed wrapper by its class (mean_metric_wrapper, mean_metric_wrapper_1, ...), not
        # by `fn`; compile() names the wrappers it makes after their function (metrics.get)
        super().__init__(name=name, dtype=dtype)
        self._fn = fn
        self._fn_kwargs = kwargs

    def batch_stats(self, y_true, y_pred, sample_weight=None) -> np.ndarray:
        # a softmax or sigmoid output keeps its logits for the crossentropies (metrics/logits.py)
        pred = y_pred if hasattr(y_pred, "_keras_logits") else np.asarray(y_pred)
        values = self._fn(np.asarray(y_true), pred, **self._fn_kwargs)
        return mean_stats(values, sample_weight)

    def result(self) -> float:
        total, count = self._state
        return float(total / count) if count else 0.0

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(self._fn_kwargs)
        return config
