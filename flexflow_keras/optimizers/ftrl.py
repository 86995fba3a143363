"""FTRL-proximal (Keras 3's update, with L1, L2, L2-shrinkage and beta); see kernels/optimizers_more.py."""

from __future__ import annotations

from flexflow_keras.optimizers._more_kernels import update_kernel
from flexflow_keras.optimizers.base import Optimizer


def _check(owner: str, name: str, value, upper_zero: bool = False) -> float:
    value = float(value)
    if (value > 0) if upper_zero else (value < 0):
        bound = "less than or equal to 0" if upper_zero else "greater than or equal to 0"
        raise ValueError(f"{owner}: `{name}` needs to be {bound}. Received: {name}={value}.")
    return value


class Ftrl(Optimizer):
    """Follow The Regularized Leader.

    Args:
        learning_rate: float or schedule, default 0.001 (Keras 2: ``lr=``).
        learning_rate_power: <= 0, default -0.5.
        initial_accumulator_value: >= 0, default 0.1.
        l1_regularization_strength, l2_regularization_strength: >= 0, default 0.
        l2_shrinkage_regularization_strength: >= 0, default 0 (a magnitude penalty on the gradient).
        beta: >= 0, default 0.
        **kwargs: the base optimizer's arguments.

    Example:
        >>> opt = Ftrl(learning_rate=0.1, l1_regularization_strength=0.01)
    """

    family = "ftrl"
    sparse_moment = 2

    def __init__(self, learning_rate=0.001, learning_rate_power=-0.5, initial_accumulator_value=0.1,
                 l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                 l2_shrinkage_regularization_strength=0.0, beta=0.0, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.learning_rate_power = _check("Ftrl", "learning_rate_power", learning_rate_power, upper_zero=True)
        self.initial_accumulator_value = _check("Ftrl", "initial_accumulator_value", initial_accumulator_value)
        self.l1_regularization_strength = _check("Ftrl", "l1_regularization_strength", l1_regularization_strength)
        self.l2_regularization_strength = _check("Ftrl", "l2_regularization_strength", l2_regularization_strength)
        self.l2_shrinkage_regularization_strength = _check("Ftrl", "l2_shrinkage_regularization_strength",
                                                           l2_shrinkage_regularization_strength)
        self.beta = _check("Ftrl", "beta", beta)

    def _hyper_names(self):
        return ["learning_rate_power", "initial_accumulator_value", "l1_regularization_strength",
                "l2_regularization_strength", "l2_shrinkage_regularization_strength", "beta"]

    def _slot_specs(self):
        return [("accumulator", self.initial_accumulator_value), ("linear", 0.0)]

    def _update(self, backend, step, lr, w, g, slots, gscale, clipvalue, wd_lr, q=None):
        update_kernel(backend, "ftrl")(w, g, slots[0], slots[1], lr, self.learning_rate_power,
                                       self.l1_regularization_strength, self.l2_regularization_strength,
                                       self.l2_shrinkage_regularization_strength, self.beta, gscale, clipvalue, wd_lr,
                                       q=q)

    def get_config(self):
        config = super().get_config()
        config.update({name: getattr(self, name) for name in self._hyper_names()})
        return config
