"""Adamax (Keras 3's update): ``m += (g-m)(1-beta_1); u = max(beta_2·u, |g|);
w -= lr·m / ((1-beta_1^t)(u+epsilon))``, t = iterations + 1."""

from __future__ import annotations

from flexflow_keras.optimizers._more_kernels import update_kernel
from flexflow_keras.optimizers.base import Optimizer


class Adamax(Optimizer):
    """Adam with the infinity norm of past gradients in place of the second moment.

    Args:
        learning_rate: float or schedule, default 0.001 (Keras 2: ``lr=``).
        beta_1: first-moment decay, default 0.9.
        beta_2: infinity-norm decay, default 0.999.
        epsilon: default 1e-7 (None means 1e-7).
        **kwargs: the base optimizer's arguments.

    Example:
        >>> opt = Adamax(learning_rate=0.002)
    """

    family = "adamax"
    sparse_moment = 1

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta_1 = float(beta_1)
        self.beta_2 = float(beta_2)
        self.epsilon = 1e-7 if epsilon is None else float(epsilon)

    def _hyper_names(self):
        return ["beta_1", "beta_2", "epsilon"]

    def _slot_specs(self):
        return [("momentum", 0.0), ("norm", 0.0)]

    def _update(self, backend, step, lr, w, g, slots, gscale, clipvalue, wd_lr, q=None):
        update_kernel(backend, "adamax")(w, g, slots[0], slots[1], lr, self.beta_1, self.beta_2, self.epsilon, step,
                                         gscale, clipvalue, wd_lr, q=q)

    def get_config(self):
        config = super().get_config()
        config.update({"beta_1": self.beta_1, "beta_2": self.beta_2, "epsilon": self.epsilon})
        return config
