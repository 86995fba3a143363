"""Adam and AdamW (Keras 3's update formulas; epsilon outside the square root).

``m += (g-m)(1-beta_1); v += (g²-v)(1-beta_2); w -= m·alpha/(sqrt(v)+epsilon)`` with
``alpha = lr·sqrt(1-beta_2^t)/(1-beta_1^t)``, ``t = iterations + 1``; AMSGrad keeps
``v_hat = max(v_hat, v)`` and divides by ``sqrt(v_hat)``. AdamW is Adam with ``weight_decay=0.004``.
"""

from __future__ import annotations

from flexflow_keras.optimizers.base import Optimizer, _kernels


class Adam(Optimizer):
    """Adaptive moment estimation.

    Args:
        learning_rate: float or schedule, default 0.001 (Keras 2: ``lr=``).
        beta_1: first-moment decay, default 0.9.
        beta_2: second-moment decay, default 0.999.
        epsilon: default 1e-7 (None, as Keras 2 allowed, means 1e-7).
        amsgrad: use AMSGrad, default False.
        **kwargs: the base optimizer's arguments.

    Example:
        >>> opt = Adam(learning_rate=1e-3)
    """

    family = "adam"
    sparse_moment = 2

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, amsgrad=False, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta_1 = float(beta_1)
        self.beta_2 = float(beta_2)
        self.epsilon = 1e-7 if epsilon is None else float(epsilon)
        self.amsgrad = bool(amsgrad)

    def _hyper_names(self):
        return ["beta_1", "beta_2", "epsilon", "amsgrad"]

    def _slot_specs(self):
        specs = [("momentum", 0.0), ("velocity", 0.0)]
        if self.amsgrad:
            specs.append(("velocity_hat", 0.0))
        return specs

    def _update(self, backend, step, lr, w, g, slots, gscale, clipvalue, wd_lr, q=None):
        vhat = slots[2] if self.amsgrad else None
        _kernels(backend).update("adam")(w, g, slots[0], slots[1], vhat, lr, self.beta_1, self.beta_2,
                                         self.epsilon, step, gscale, clipvalue, wd_lr, q=q)

    def get_config(self):
        config = super().get_config()
        config.update({"beta_1": self.beta_1, "beta_2": self.beta_2, "epsilon": self.epsilon,
                       "amsgrad": self.amsgrad})
        return config


class AdamW(Adam):
    """Adam with decoupled weight decay, default ``weight_decay=0.004`` (Keras 3's AdamW).

    Args:
        learning_rate, weight_decay, beta_1, beta_2, epsilon, amsgrad: as `Adam`.
        **kwargs: the base optimizer's arguments.
    """

    def __init__(self, learning_rate=0.001, weight_decay=0.004, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 amsgrad=False, **kwargs):
        if weight_decay is None:
            raise ValueError("AdamW expects a float weight_decay, received weight_decay=None. Use Adam "
                             "for no weight decay.")
        super().__init__(learning_rate=learning_rate, beta_1=beta_1, beta_2=beta_2, epsilon=epsilon,
                         amsgrad=amsgrad, weight_decay=weight_decay, **kwargs)
