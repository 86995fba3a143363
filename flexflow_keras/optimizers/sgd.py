"""SGD with optional momentum and Nesterov momentum (Keras 3's update formula).

``m = momentum*m - lr*g; w += m`` (Nesterov: ``w += momentum*m - lr*g``); plain ``w -= lr*g`` without
momentum, when no slot is allocated.
"""

from __future__ import annotations

from flexflow_keras.optimizers.base import Optimizer, _kernels


class SGD(Optimizer):
    """Gradient descent with momentum.

    Args:
        learning_rate: float or schedule, default 0.01 (Keras 2: ``lr=``).
        momentum: float in [0, 1], default 0.0.
        nesterov: use Nesterov momentum, default False.
        **kwargs: the base optimizer's arguments (weight_decay, clipnorm, ..., decay=).

    Example:
        >>> opt = SGD(learning_rate=0.1, momentum=0.9, nesterov=True)
    """

    family = "sgd"

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        if isinstance(momentum, bool) or not isinstance(momentum, (int, float)) or not 0 <= momentum <= 1:
            raise ValueError(f"SGD expects momentum to be a float in [0, 1], received momentum={momentum!r}.")
        self.momentum = float(momentum)
        self.nesterov = bool(nesterov)

    def _hyper_names(self):
        return ["momentum", "nesterov"]

    def _slot_specs(self):
        return [("momentum", 0.0)] if self.momentum != 0 else []

    def _update(self, backend, step, lr, w, g, slots, gscale, clipvalue, wd_lr):
        m = slots[0] if self.momentum != 0 else None
        _kernels(backend).update("sgd")(w, g, m, lr, self.momentum, self.nesterov, gscale, clipvalue, wd_lr)

    def get_config(self):
        config = super().get_config()
        config.update({"momentum": self.momentum, "nesterov": self.nesterov})
        return config
