"""Schedule-Free AdamW (Keras 3's update; Defazio et al., 2024): no learning-rate schedule, an average of
the iterates instead. The weight is the interpolation ``y`` the gradient is taken at; the momentum slot
holds ``z`` (it starts as the weight, as Keras copies it), the velocity Adam's second moment, and the
average ``x`` follows from both. See kernels/optimizers_more.py for the step.

One difference from tf.keras, on purpose: Keras 3's build copies each weight into z (as the reference
implementation does), and its `apply_gradients` starts from that copy, but its compiled `fit` loses it
(z starts at 0, and the first step sets every weight to about plus or minus the learning rate). Here `fit`
starts from the copy too, so it trains as a TensorFlow GradientTape loop with this optimizer does.
"""

from __future__ import annotations

from flexflow_keras.optimizers._more_kernels import update_kernel
from flexflow_keras.optimizers.base import Optimizer


class ScheduleFreeAdamW(Optimizer):
    """Schedule-Free AdamW, as Keras 3 computes it.

    Args:
        learning_rate: float or schedule, default 0.0025.
        beta_1: interpolation between z and the average, default 0.9.
        beta_2: second-moment decay, default 0.999.
        epsilon: default 1e-8.
        warmup_steps: the rate rises linearly over this many steps, default 0.
        **kwargs: the base optimizer's arguments (weight_decay is decoupled, as AdamW's).

    Example:
        >>> opt = ScheduleFreeAdamW(learning_rate=0.0025, warmup_steps=100)
    """

    family = "schedule_free_adamw"
    sparse_moment = 2

    def __init__(self, learning_rate=0.0025, beta_1=0.9, beta_2=0.999, epsilon=1e-8, warmup_steps=0, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta_1 = float(beta_1)
        self.beta_2 = float(beta_2)
        self.epsilon = float(epsilon)
        self.warmup_steps = int(warmup_steps)

    def _hyper_names(self):
        return ["beta_1", "beta_2", "epsilon", "warmup_steps"]

    def _slot_specs(self):
        return [("momentum", None), ("velocity", 0.0)]  # None: a copy of the variable (Keras' build)

    def _update(self, backend, step, lr, w, g, slots, gscale, clipvalue, wd_lr, q=None):
        update_kernel(backend, "schedule_free_adamw")(w, g, slots[0], slots[1], lr, self.beta_1, self.beta_2,
                                                      self.epsilon, step, self.warmup_steps, gscale, clipvalue,
                                                      wd_lr, q=q)

    def get_config(self):
        config = super().get_config()
        config.update({name: getattr(self, name) for name in self._hyper_names()})
        return config
