"""Adafactor (Keras 3's update): second moments factored over a variable's last two axes.

For a variable of rank >= 2 the optimizer keeps r (the mean over the last axis, shape ``shape[:-1]``) and c
(the mean over the second-to-last, shape ``shape[:-2] + shape[-1:]``) and rebuilds the second moment from
them; a variable of rank < 2 keeps it whole (its r and c are 0-d placeholders, as in Keras). Step t: ``rho = min(lr, 1/sqrt(t))``, ``alpha = max(epsilon_2,
rms(w)) · rho``, the moments decay by ``1 - t^beta_2_decay``, ``u = g / sqrt(v)`` is clipped to
``max(1, rms(u) / clip_threshold)`` and ``w -= alpha · u``. Keras' slots in its order: r, c and velocity
per variable. Whole-variable statistics: `elementwise_update` False.
"""

from __future__ import annotations

from flexflow_keras.optimizers.base import Optimizer


class Adafactor(Optimizer):
    """Adafactor (Shazeer and Stern, 2018), as Keras 3 computes it.

    Args:
        learning_rate: float or schedule, default 0.001 (capped at 1/sqrt(step), as Keras does).
        beta_2_decay: the second moment's decay exponent, default -0.8.
        epsilon_1: added to the squared gradient, default 1e-30.
        epsilon_2: the floor of the weight's root mean square, default 1e-3.
        clip_threshold: the update's root mean square is clipped to it, default 1.0.
        relative_step: accepted as Keras does (its cap on the rate applies either way), default True.
        **kwargs: the base optimizer's arguments.

    Example:
        >>> opt = Adafactor(learning_rate=1e-2)
    """

    family = "adafactor"
    sparse_moment = 2
    elementwise_update = False

    def __init__(self, learning_rate=0.001, beta_2_decay=-0.8, epsilon_1=1e-30, epsilon_2=1e-3, clip_threshold=1.0,
                 relative_step=True, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta_2_decay = float(beta_2_decay)
        self.epsilon_1 = float(epsilon_1)
        self.epsilon_2 = float(epsilon_2)
        self.clip_threshold = float(clip_threshold)
        self.relative_step = bool(relative_step)

    def _hyper_names(self):
        return ["beta_2_decay", "epsilon_1", "epsilon_2", "clip_threshold", "relative_step"]

    def _slot_specs(self):
        return [("r", 0.0), ("c", 0.0), ("velocity", 0.0)]

    def slot_shape(self, slot_name, shape):
        shape = tuple(int(s) for s in shape)
        if slot_name in ("r", "c") and len(shape) < 2:  # nothing to factor: Keras' 0-d placeholders
            return ()
        if slot_name == "r":
            return shape[:-1]
        if slot_name == "c":
            return shape[:-2] + shape[-1:]
        return shape

    def _update(self, backend, step, lr, w, g, slots, gscale, clipvalue, wd_lr, q=None):
        from kernels import optimizers_norms as k

        r, c, v = (slots[0], slots[1], slots[2]) if w.ndim >= 2 else (None, None, slots[2])
        fn = k.adafactor_update_cpu if backend == "cpu" else k.adafactor_update_cuda
        fn(w, g, r, c, v, lr, step, self.beta_2_decay, self.epsilon_1, self.epsilon_2, self.clip_threshold,
           gscale, clipvalue, wd_lr, q=q)

    def get_config(self):
        config = super().get_config()
        config.update({name: getattr(self, name) for name in self._hyper_names()})
        return config
