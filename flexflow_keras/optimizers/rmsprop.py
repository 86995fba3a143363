"""RMSprop, optionally centered and with momentum (Keras 3's update formula; epsilon inside the root).

``vel = rho·vel + (1-rho)·g²``; centered: ``avg = rho·avg + (1-rho)·g`` and the denominator is
``vel - avg² + epsilon``, else ``vel + epsilon``; ``inc = lr·g/sqrt(denominator)``; with momentum
``mom = momentum·mom + inc; w -= mom``, else ``w -= inc``.
"""

from __future__ import annotations

from flexflow_keras.optimizers.base import Optimizer, _kernels


class RMSprop(Optimizer):
    """Root-mean-square propagation.

    Args:
        learning_rate: float or schedule, default 0.001 (Keras 2: ``lr=``).
        rho: squared-gradient decay, default 0.9.
        momentum: default 0.0.
        epsilon: default 1e-7 (None means 1e-7).
        centered: normalise by the gradient's estimated variance, default False.
        **kwargs: the base optimizer's arguments.

    Example:
        >>> opt = RMSprop(learning_rate=1e-3, rho=0.9)
    """

    family = "rmsprop"
    sparse_moment = 2

    def __init__(self, learning_rate=0.001, rho=0.9, momentum=0.0, epsilon=1e-7, centered=False, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.rho = float(rho)
        self.momentum = float(momentum)
        self.epsilon = 1e-7 if epsilon is None else float(epsilon)
        self.centered = bool(centered)

    def _hyper_names(self):
        return ["rho", "momentum", "epsilon", "centered"]

    def _slot_specs(self):
        specs = [("velocity", 0.0)]
        if self.momentum > 0:
            specs.append(("momentum", 0.0))
        if self.centered:
            specs.append(("average_gradient", 0.0))
        return specs

    def _update(self, backend, step, lr, w, g, slots, gscale, clipvalue, wd_lr, q=None):
        k = 1
        mom = None
        if self.momentum > 0:
            mom, k = slots[1], 2
        avg = slots[k] if self.centered else None
        _kernels(backend).update("rmsprop")(w, g, slots[0], mom, avg, lr, self.rho, self.momentum,
                                            self.epsilon, gscale, clipvalue, wd_lr, q=q)

    def get_config(self):
        config = super().get_config()
        config.update({"rho": self.rho, "momentum": self.momentum, "epsilon": self.epsilon,
                       "centered": self.centered})
        return config
