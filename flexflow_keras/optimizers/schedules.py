"""Learning-rate schedules (`keras.optimizers.schedules`): a schedule maps the optimizer's 0-based
iteration count to a float learning rate, with Keras 3's formulas.

Schedules are plain Python objects evaluated on the host once per step (the training loop passes the
result to `Optimizer.apply`), so they run in float64; Keras evaluates them in float32, which differs in
the last bits only. Called on an array of steps (tutorials plot ``schedule(np.linspace(0, 1e5))``), a
built-in schedule answers with a float32 tensor of the rates, one per step, as Keras' does.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np

from flexflow_keras.ops.eager_tensor import eager

_SCHEDULES: dict[str, type[LearningRateSchedule]] = {}


class LearningRateSchedule:
    """Base class: subclasses implement ``__call__(step) -> float`` and `get_config`."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        _SCHEDULES[cls.__name__] = cls

    def __call__(self, step) -> float:
        raise NotImplementedError(f"{type(self).__name__} must implement __call__(step)")

    def get_config(self) -> dict:
        raise NotImplementedError(f"{type(self).__name__} must implement get_config()")

    @classmethod
    def from_config(cls, config: dict):
        return cls(**config)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"


def _per_step(call):
    """`call` (a scalar formula) also evaluated on an array of steps, giving a float32 tensor of rates."""
    @functools.wraps(call)
    def evaluate(self, step):
        if np.ndim(step) == 0:
            return call(self, step)
        steps = np.asarray(step, dtype=np.float64)
        rates = np.array([call(self, s) for s in steps.ravel()], dtype=np.float32)
        return eager(rates.reshape(steps.shape))
    return evaluate


def _positive_steps(name: str, decay_steps) -> None:
    if decay_steps <= 0:
        raise ValueError(f"{name} expects decay_steps > 0, received decay_steps={decay_steps}.")


class _RateDecayMixin:
    """State, progress and config shared by the ``decay_rate``/``staircase`` schedules.

    A plain mixin (not a `LearningRateSchedule`), so it is not registered for `deserialize`.
    """

    def _init_rate_decay(self, who: str, initial_learning_rate, decay_steps, decay_rate, staircase, name) -> None:
        _positive_steps(who, decay_steps)
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.decay_rate = decay_rate
        self.staircase = staircase
        self.name = name

    def _progress(self, step) -> float:
        """``step / decay_steps``, floored with `staircase`."""
        p = float(step) / self.decay_steps
        if self.staircase:
            p = math.floor(p)
        return p

    def get_config(self) -> dict:
        return {"initial_learning_rate": self.initial_learning_rate, "decay_steps": self.decay_steps,
                "decay_rate": self.decay_rate, "staircase": self.staircase, "name": self.name}


class ExponentialDecay(_RateDecayMixin, LearningRateSchedule):
    """``initial_learning_rate * decay_rate ** (step / decay_steps)`` (floored with `staircase`).

    Args:
        initial_learning_rate: float.
        decay_steps: positive int.
        decay_rate: float.
        staircase: use integer division of step by decay_steps.
        name: kept for the config.
    """

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase=False, name="ExponentialDecay"):
        self._init_rate_decay("ExponentialDecay", initial_learning_rate, decay_steps, decay_rate, staircase, name)

    @_per_step
    def __call__(self, step) -> float:
        return float(self.initial_learning_rate) * float(self.decay_rate) ** self._progress(step)


class PiecewiseConstantDecay(LearningRateSchedule):
    """``values[0]`` while ``step <= boundaries[0]``, ..., ``values[-1]`` once ``step > boundaries[-1]``.

    Args:
        boundaries: strictly increasing step numbers.
        values: one more value than boundaries.
        name: kept for the config.
    """

    def __init__(self, boundaries: Sequence, values: Sequence, name="PiecewiseConstant"):
        if len(boundaries) != len(values) - 1:
            raise ValueError(
                f"PiecewiseConstantDecay needs len(boundaries) == len(values) - 1; received boundaries="
                f"{list(boundaries)} (length {len(boundaries)}) and values={list(values)} (length {len(values)}).")
        if any(b2 <= b1 for b1, b2 in zip(boundaries, boundaries[1:], strict=False)):
            raise ValueError(f"PiecewiseConstantDecay boundaries must be strictly increasing, received {list(boundaries)}.")
        self.boundaries = list(boundaries)
        self.values = list(values)
        self.name = name

    @_per_step
    def __call__(self, step) -> float:
        for b, v in zip(self.boundaries, self.values, strict=False):
            if step <= b:
                return float(v)
        return float(self.values[-1])

    def get_config(self) -> dict:
        return {"boundaries": self.boundaries, "values": self.values, "name": self.name}


class PolynomialDecay(LearningRateSchedule):
    """Polynomial decay from `initial_learning_rate` to `end_learning_rate` over `decay_steps`.

    Args:
        initial_learning_rate, decay_steps, end_learning_rate, power: as Keras.
        cycle: restart at each multiple of decay_steps.
        name: kept for the config.
    """

    def __init__(self, initial_learning_rate, decay_steps, end_learning_rate=0.0001, power=1.0, cycle=False,
                 name="PolynomialDecay"):
        _positive_steps("PolynomialDecay", decay_steps)
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.end_learning_rate = end_learning_rate
        self.power = power
        self.cycle = cycle
        self.name = name

    @_per_step
    def __call__(self, step) -> float:
        step = float(step)
        decay_steps = float(self.decay_steps)
        if self.cycle:
            decay_steps *= 1.0 if step == 0 else math.ceil(step / self.decay_steps)
        else:
            step = min(step, decay_steps)
        p = step / decay_steps
        return ((float(self.initial_learning_rate) - self.end_learning_rate) * (1 - p) ** self.power
                + self.end_learning_rate)

    def get_config(self) -> dict:
        return {"initial_learning_rate": self.initial_learning_rate, "decay_steps": self.decay_steps,
                "end_learning_rate": self.end_learning_rate, "power": self.power, "cycle": self.cycle,
                "name": self.name}


class InverseTimeDecay(_RateDecayMixin, LearningRateSchedule):
    """``initial_learning_rate / (1 + decay_rate * step / decay_steps)`` (floored with `staircase`).

    Args:
        initial_learning_rate, decay_steps, decay_rate, staircase: as Keras.
        name: kept for the config.
    """

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase=False, name="InverseTimeDecay"):
        self._init_rate_decay("InverseTimeDecay", initial_learning_rate, decay_steps, decay_rate, staircase, name)

    @_per_step
    def __call__(self, step) -> float:
        return float(self.initial_learning_rate) / (1.0 + self.decay_rate * self._progress(step))


class CosineDecay(LearningRateSchedule):
    """Cosine decay with optional linear warmup (Keras 3).

    Without warmup: ``lr0 * ((1-alpha) * 0.5 * (1 + cos(pi * min(step, decay_steps) / decay_steps)) + alpha)``.
    With `warmup_target`: linear from `initial_learning_rate` to `warmup_target` over `warmup_steps`,
    then the cosine decay from `warmup_target`.

    Args:
        initial_learning_rate, decay_steps, alpha, warmup_target, warmup_steps: as Keras.
        name: kept for the config.
    """

    def __init__(self, initial_learning_rate, decay_steps, alpha=0.0, name="CosineDecay", warmup_target=None,
                 warmup_steps=0):
        _positive_steps("CosineDecay", decay_steps)
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.alpha = alpha
        self.name = name
        self.warmup_target = warmup_target
        self.warmup_steps = warmup_steps

    def _decay(self, step: float, from_lr: float) -> float:
        cosine = 0.5 * (1.0 + math.cos(math.pi * step / self.decay_steps))
        return from_lr * ((1 - self.alpha) * cosine + self.alpha)

    @_per_step
    def __call__(self, step) -> float:
        step = float(step)
        lr0 = float(self.initial_learning_rate)
        if self.warmup_target is None:
            return self._decay(min(step, self.decay_steps), lr0)
        step = min(step, self.decay_steps + self.warmup_steps)
        if step < self.warmup_steps:
            return (self.warmup_target - lr0) * (step / self.warmup_steps) + lr0
        return self._decay(step - self.warmup_steps, float(self.warmup_target))

    def get_config(self) -> dict:
        return {"initial_learning_rate": self.initial_learning_rate, "decay_steps": self.decay_steps,
                "alpha": self.alpha, "name": self.name, "warmup_target": self.warmup_target,
                "warmup_steps": self.warmup_steps}


class CosineDecayRestarts(LearningRateSchedule):
    """SGDR cosine decay with warm restarts (Keras 3's formula).

    Args:
        initial_learning_rate: float.
        first_decay_steps: steps of the first period.
        t_mul: factor on the period length after each restart.
        m_mul: factor on the initial learning rate after each restart.
        alpha: minimum as a fraction of the initial learning rate.
        name: kept for the config.
    """

    def __init__(self, initial_learning_rate, first_decay_steps, t_mul=2.0, m_mul=1.0, alpha=0.0,
                 name="SGDRDecay"):
        _positive_steps("CosineDecayRestarts", first_decay_steps)
        self.initial_learning_rate = initial_learning_rate
        self.first_decay_steps = first_decay_steps
        self._t_mul = t_mul
        self._m_mul = m_mul
        self.alpha = alpha
        self.name = name

    @_per_step
    def __call__(self, step) -> float:
        completed = float(step) / self.first_decay_steps
        if self._t_mul == 1.0:
            i_restart = math.floor(completed)
            completed -= i_restart
        else:
            i_restart = math.floor(math.log(1.0 - completed * (1.0 - self._t_mul)) / math.log(self._t_mul))
            sum_r = (1.0 - self._t_mul ** i_restart) / (1.0 - self._t_mul)
            completed = (completed - sum_r) / self._t_mul ** i_restart
        m_fac = self._m_mul ** i_restart
        cosine = 0.5 * m_fac * (1.0 + math.cos(math.pi * completed))
        return float(self.initial_learning_rate) * ((1 - self.alpha) * cosine + self.alpha)

    def get_config(self) -> dict:
        return {"initial_learning_rate": self.initial_learning_rate, "first_decay_steps": self.first_decay_steps,
                "t_mul": self._t_mul, "m_mul": self._m_mul, "alpha": self.alpha, "name": self.name}


def serialize(schedule: LearningRateSchedule) -> dict:
    """The Keras 3 serialized form ``{"module", "class_name", "config", "registered_name"}``."""
    return {"module": "keras.optimizers.schedules", "class_name": type(schedule).__name__,
            "config": schedule.get_config(), "registered_name": None}


def deserialize(config: dict, custom_objects: dict | None = None) -> LearningRateSchedule:
    """Rebuild a schedule from `serialize`'s dict (or ``{"class_name", "config"}``).

    Raises:
        ValueError: for an unknown class name, listing the known ones.
    """
    name = config.get("class_name")
    classes = dict(_SCHEDULES)
    classes.update(custom_objects or {})
    if name not in classes:
        raise ValueError(f"Unknown learning rate schedule {name!r}; known schedules: {sorted(_SCHEDULES)}.")
    return classes[name].from_config(dict(config.get("config", {})))


def __dir__():
    """What `dir(keras.optimizers.schedules)` lists in Keras 3.15: the schedules, serialize, deserialize."""
    return sorted({*_SCHEDULES, "LearningRateSchedule", "serialize", "deserialize",
                   *(n for n in globals() if n.startswith("__"))})
