"""Lamb (Keras 3's update): Adam's moments and a per-variable trust ratio.

``m += (g-m)(1-beta_1); v += (g²-v)(1-beta_2); u = (m/(1-beta_1^t)) / (sqrt(v/(1-beta_2^t)) + epsilon)``,
``w -= (||w|| / ||u||) · lr · u`` (ratio 1 when either norm is 0). The norms are whole-variable, so a
weight is never updated in pieces (`elementwise_update` False).
"""

from __future__ import annotations

from flexflow_keras.optimizers.base import Optimizer


class Lamb(Optimizer):
    """Layer-wise adaptive moments (You et al., 2019), as Keras 3 computes them.

    Args:
        learning_rate: float or schedule, default 0.001.
        beta_1: first-moment decay, default 0.9.
        beta_2: second-moment decay, default 0.999.
        epsilon: default 1e-7.
        **kwargs: the base optimizer's arguments.

    Example:
        >>> opt = Lamb(learning_rate=1e-3)
    """

    family = "lamb"
    sparse_moment = 2
    elementwise_update = False

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta_1 = float(beta_1)
        self.beta_2 = float(beta_2)
        self.epsilon = float(epsilon)

    def _hyper_names(self):
        return ["beta_1", "beta_2", "epsilon"]

    def _slot_specs(self):
        return [("momentum", 0.0), ("velocity", 0.0)]

    def _update(self, backend, step, lr, w, g, slots, gscale, clipvalue, wd_lr, q=None):
        from kernels import optimizers_norms as k

        fn = k.lamb_update_cpu if backend == "cpu" else k.lamb_update_cuda
        fn(w, g, slots[0], slots[1], lr, self.beta_1, self.beta_2, self.epsilon, step, gscale, clipvalue, wd_lr, q=q)

    def get_config(self):
        config = super().get_config()
        config.update({"beta_1": self.beta_1, "beta_2": self.beta_2, "epsilon": self.epsilon})
        return config
