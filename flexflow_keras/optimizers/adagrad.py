"""Adagrad (Keras 3's update formula): ``acc += g²; w -= lr·g/sqrt(acc + epsilon)``, with the
accumulator starting at `initial_accumulator_value`.
"""

from __future__ import annotations

from flexflow_keras.optimizers.base import Optimizer, _kernels


class Adagrad(Optimizer):
    """Adaptive gradient.

    Args:
        learning_rate: float or schedule, default 0.001 (Keras 2: ``lr=``).
        initial_accumulator_value: starting value of the accumulator, default 0.1.
        epsilon: default 1e-7 (None means 1e-7).
        **kwargs: the base optimizer's arguments.

    Example:
        >>> opt = Adagrad(learning_rate=0.01)
    """

    family = "adagrad"
    sparse_moment = 2

    def __init__(self, learning_rate=0.001, initial_accumulator_value=0.1, epsilon=1e-7, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.initial_accumulator_value = float(initial_accumulator_value)
        self.epsilon = 1e-7 if epsilon is None else float(epsilon)

    def _hyper_names(self):
        return ["initial_accumulator_value", "epsilon"]

    def _slot_specs(self):
        return [("accumulator", self.initial_accumulator_value)]

    def _update(self, backend, step, lr, w, g, slots, gscale, clipvalue, wd_lr, q=None):
        _kernels(backend).update("adagrad")(w, g, slots[0], lr, self.epsilon, gscale, clipvalue, wd_lr, q=q)

    def get_config(self):
        config = super().get_config()
        config.update({"initial_accumulator_value": self.initial_accumulator_value, "epsilon": self.epsilon})
        return config
