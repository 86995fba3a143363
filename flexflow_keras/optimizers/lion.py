"""Lion (Keras 3's update): ``w -= lr·sign(beta_1·m + (1-beta_1)·g); m = beta_2·m + (1-beta_2)·g``."""

from __future__ import annotations

from flexflow_keras.optimizers._more_kernels import update_kernel
from flexflow_keras.optimizers.base import Optimizer


class Lion(Optimizer):
    """Evolved sign momentum.

    Args:
        learning_rate: float or schedule, default 0.001.
        beta_1: interpolation between momentum and gradient for the sign, in (0, 1], default 0.9.
        beta_2: momentum decay, default 0.99.
        **kwargs: the base optimizer's arguments.

    Example:
        >>> opt = Lion(learning_rate=1e-4)
    """

    family = "lion"

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.99, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        if not 0.0 < float(beta_1) <= 1.0:
            raise ValueError(f"Lion: argument `beta_1` must be in the [0, 1] range. Otherwise, the optimizer degenerates "
                             f"to SignSGD. Received: beta_1={beta_1}.")
        self.beta_1 = float(beta_1)
        self.beta_2 = float(beta_2)

    def _hyper_names(self):
        return ["beta_1", "beta_2"]

    def _slot_specs(self):
        return [("momentum", 0.0)]

    def _update(self, backend, step, lr, w, g, slots, gscale, clipvalue, wd_lr):
        update_kernel(backend, "lion")(w, g, slots[0], lr, self.beta_1, self.beta_2, gscale, clipvalue, wd_lr)

    def get_config(self):
        config = super().get_config()
        config.update({"beta_1": self.beta_1, "beta_2": self.beta_2})
        return config
