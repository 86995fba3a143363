"""Nadam (Keras 3's update): Adam with Nesterov momentum through the schedule
``u_t = beta_1·(1 - 0.5·0.96^t)``; the product of the schedule up to step t (Keras' `_u_product`) is
recomputed from the step, so it follows `iterations` (a restored optimizer continues exactly)."""

from __future__ import annotations

import numpy as np

from flexflow_keras.optimizers._more_kernels import update_kernel
from flexflow_keras.optimizers.base import Optimizer


class Nadam(Optimizer):
    """Nesterov-accelerated Adam.

    Args:
        learning_rate: float or schedule, default 0.001 (Keras 2: ``lr=``, default 0.002 there).
        beta_1: first-moment decay, default 0.9.
        beta_2: second-moment decay, default 0.999.
        epsilon: default 1e-7 (None means 1e-7).
        **kwargs: the base optimizer's arguments.

    Example:
        >>> opt = Nadam(learning_rate=0.002)
    """

    family = "nadam"
    sparse_moment = 2

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta_1 = float(beta_1)
        self.beta_2 = float(beta_2)
        self.epsilon = 1e-7 if epsilon is None else float(epsilon)
        self._u_products = [1.0]  # _u_products[t]: the schedule's product for steps 1..t

    def _hyper_names(self):
        return ["beta_1", "beta_2", "epsilon"]

    def _slot_specs(self):
        return [("momentum", 0.0), ("velocity", 0.0)]

    def keras_state_variables(self):
        loaded = self.__dict__.get("_ff_keras_state")  # read from a file at this many iterations: as read
        if loaded is not None and loaded[0] == self._iterations:
            return list(loaded[1])
        return [np.asarray(self.u_product(self._iterations), dtype=np.float32)]

    def u_product(self, step: int) -> float:
        """The product of ``beta_1·(1 - 0.5·0.96^k)`` for k = 1..step (memoized)."""
        while len(self._u_products) <= step:
            k = len(self._u_products)
            self._u_products.append(self._u_products[-1] * self.beta_1 * (1.0 - 0.5 * 0.96 ** k))
        return self._u_products[step]

    def _update(self, backend, step, lr, w, g, slots, gscale, clipvalue, wd_lr, q=None):
        update_kernel(backend, "nadam")(w, g, slots[0], slots[1], lr, self.beta_1, self.beta_2, self.epsilon, step,
                                        self.u_product(step), gscale, clipvalue, wd_lr, q=q)

    def get_config(self):
        config = super().get_config()
        config.update({"beta_1": self.beta_1, "beta_2": self.beta_2, "epsilon": self.epsilon})
        return config
