"""Adadelta (Keras 3's update): ``ag = rho·ag + (1-rho)·g²; d = -sqrt(ad+eps)·g/sqrt(ag+eps);
ad = rho·ad + (1-rho)·d²; w += lr·d``."""

from __future__ import annotations

from flexflow_keras.optimizers._more_kernels import update_kernel
from flexflow_keras.optimizers.base import Optimizer


class Adadelta(Optimizer):
    """Adaptive learning rate per dimension from running averages of squared gradients and updates.

    Args:
        learning_rate: float or schedule, default 0.001 (Keras 2: ``lr=``, default 1.0 there).
        rho: decay of the running averages, default 0.95.
        epsilon: default 1e-7 (None means 1e-7).
        **kwargs: the base optimizer's arguments.

    Example:
        >>> opt = Adadelta(learning_rate=1.0)
    """

    family = "adadelta"
    sparse_moment = 2

    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-7, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.rho = float(rho)
        self.epsilon = 1e-7 if epsilon is None else float(epsilon)

    def _hyper_names(self):
        return ["rho", "epsilon"]

    def _slot_specs(self):
        return [("accumulated_grad", 0.0), ("accumulated_delta_var", 0.0)]

    def _update(self, backend, step, lr, w, g, slots, gscale, clipvalue, wd_lr, q=None):
        update_kernel(backend, "adadelta")(w, g, slots[0], slots[1], lr, self.rho, self.epsilon, gscale, clipvalue,
                                           wd_lr, q=q)

    def get_config(self):
        config = super().get_config()
        config.update({"rho": self.rho, "epsilon": self.epsilon})
        return config
