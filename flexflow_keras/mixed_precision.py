"""`keras.mixed_precision`: the dtype policy. flexflow_keras computes and keeps weights in float32, so the
"float32" policy is the one there is; asking for float16 or bfloat16 compute (``"mixed_float16"``, the GPU
speed-up scripts turn on) is a clear error, never a silent float32 run that the script believes is mixed.
"""

from __future__ import annotations

from flexflow_keras.errors import ConfigError


def _check(name) -> str:
    name = getattr(name, "name", name)
    if name != "float32":
        raise ConfigError(
            f"dtype policy {name!r}: flexflow_keras computes and keeps weights in float32 only (its kernels "
            f"are float32). Remove the set_global_policy / set_dtype_policy / Policy call (or give "
            f"'float32'); the script then trains in float32.")
    return name


class DTypePolicy:
    """The float32 policy: `name`, `compute_dtype` and `variable_dtype` are "float32".

    Args:
        name: "float32" (another name is a ConfigError, see the module docstring).
    """

    def __init__(self, name="float32"):
        self.name = _check(name)
        self.compute_dtype = self.variable_dtype = "float32"

    @classmethod
    def of_dtype(cls, dtype: str) -> DTypePolicy:
        """The policy of a layer whose dtype is `dtype` (a float64 layer's is "float64", as in Keras 3);
        only for reading a layer's `dtype_policy`, so not checked."""
        policy = object.__new__(cls)
        policy.name = policy.compute_dtype = policy.variable_dtype = str(dtype)
        return policy

    def __repr__(self) -> str:
        return f'<DTypePolicy "{self.name}">'

    def get_config(self) -> dict:
        return {"name": self.name}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


Policy = DTypePolicy  # Keras 2 / TensorFlow's name


def set_global_policy(policy) -> None:
    """Only "float32" (or its policy) is accepted; see the module docstring."""
    _check(policy)


def global_policy() -> DTypePolicy:
    """The policy layers use: float32."""
    return DTypePolicy("float32")


set_dtype_policy, dtype_policy = set_global_policy, global_policy  # Keras 3's keras.config spellings


class LossScaleOptimizer:
    """Loss scaling serves float16 training, which flexflow_keras does not do: constructing one is a clear
    error (a class, so ``isinstance(opt, LossScaleOptimizer)`` checks still run, and are False)."""

    def __new__(cls, inner_optimizer=None, *args, **kwargs):
        raise ConfigError("keras.mixed_precision.LossScaleOptimizer: flexflow_keras trains in float32, where "
                          "losses need no scaling. Pass the inner optimizer to compile() directly.")


__all__ = ["DTypePolicy", "Policy", "set_global_policy", "global_policy", "set_dtype_policy", "dtype_policy",
           "LossScaleOptimizer"]
