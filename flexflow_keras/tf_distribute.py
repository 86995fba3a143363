"""`tf.distribute` under `python -m flexflow_keras` (tf_compat.py's `mapped_call` looks here).

keras.io scripts build and compile their model inside ``with strategy.scope():`` and scale their batch by
``strategy.num_replicas_in_sync``. Here devices are the -ll:gpu / -ll:cpu flags' and the parallel strategy
(how the batch and the weights are split) is the search's, so a strategy places nothing itself:

- `tf.distribute.get_strategy()` is the strategy of the scope the code runs in, else the default one
  (one replica), as in TensorFlow; `has_strategy()` and `in_cross_replica_context()` are True inside a
  non-default strategy's scope only.
- `OneDeviceStrategy(device)`: one replica. As TensorFlow (soft placement), a device this machine does not
  have is no error: the runtime places the work.
- `MirroredStrategy(devices=None)`: one replica per device named, else per `-ll:gpu` GPU (one when there
  are none, as TensorFlow's falls back to the CPU). fit() on a global batch computes what TensorFlow's
  replicas do together: the gradient of the mean over the whole batch.
- A strategy's `scope()`, `experimental_distribute_dataset(ds)` (the dataset itself) and `run(fn, args)`
  (fn called once; with several replicas TensorFlow returns per-replica values, which this refuses, naming
  the call).
- `tf.distribute.cluster_resolver.TPUClusterResolver()` is the ValueError TensorFlow raises where no TPU is found
  (scripts catch it to fall back to GPUs or the CPU): TPUs are not among this framework's machines.
Other `tf.distribute` names stay refused by keras_alias with the usual message.
"""

from __future__ import annotations

import contextlib

_scopes: list = []  # the strategies whose scope() the code is in, innermost last


class Strategy:
    """A `tf.distribute` strategy: a replica count and a scope; placement is the runtime's."""

    def __init__(self, num_replicas: int, name: str):
        self.num_replicas_in_sync = num_replicas
        self._name = name

    @contextlib.contextmanager
    def _enter(self):
        _scopes.append(self)
        try:
            yield self
        finally:
            _scopes.remove(self)

    def scope(self):
        return self._enter()

    def experimental_distribute_dataset(self, dataset, options=None):
        return dataset

    def run(self, fn, args=(), kwargs=None, options=None):
        if self.num_replicas_in_sync != 1:
            from flexflow_keras.keras_alias import RawTensorFlowError

            raise RawTensorFlowError(
                f"tf.distribute.{self._name}.run: with {self.num_replicas_in_sync} replicas TensorFlow runs fn "
                f"once per replica and returns per-replica values, which flexflow_keras does not have. Train "
                f"with model.fit (the runtime splits the batch over the devices), or call fn on the whole batch.")
        return fn(*args, **(kwargs or {}))

    def __repr__(self) -> str:
        return f"<tf.distribute.{self._name}: {self.num_replicas_in_sync} replica(s), placed by flexflow_keras>"


# TensorFlow's class names (scripts print ``strategy.__class__.__name__``)
class _DefaultDistributionStrategy(Strategy):
    def scope(self):  # TensorFlow's default strategy's scope changes nothing: has_strategy() stays False
        return contextlib.nullcontext(self)


class OneDeviceStrategy(Strategy):
    pass


class MirroredStrategy(Strategy):
    pass


_DEFAULT = _DefaultDistributionStrategy(1, "get_strategy()")


def get_strategy() -> Strategy:
    return _scopes[-1] if _scopes else _DEFAULT


def one_device_strategy(device, *args, **kwargs) -> Strategy:
    if not isinstance(device, str):
        raise TypeError(f"tf.distribute.OneDeviceStrategy expects a device name such as '/gpu:0', received "
                        f"{device!r}.")
    return OneDeviceStrategy(1, "OneDeviceStrategy")


def mirrored_strategy(devices=None, cross_device_ops=None) -> Strategy:
    if devices is None:
        from flexflow_keras.tf_setup import devices as listed

        count = max(1, len(listed("GPU")))
    else:
        count = len(list(devices))
    return MirroredStrategy(count, "MirroredStrategy")


def tpu_cluster_resolver(tpu=None, *args, **kwargs):
    """`TPUClusterResolver(tpu)`: TensorFlow's ValueError on a machine without a TPU, always here."""
    from flexflow_keras.errors import ConfigError

    raise ConfigError(f"tf.distribute.cluster_resolver.TPUClusterResolver(tpu={tpu!r}): no TPU to connect to; "
                      f"flexflow_keras runs on the CPUs and GPUs that -ll:cpu / -ll:gpu give. Catch this "
                      f"ValueError (as TensorFlow raises one without a TPU) and use tf.distribute.get_strategy() "
                      f"or MirroredStrategy.")


CALLS = {
    "tf.distribute.cluster_resolver.TPUClusterResolver": tpu_cluster_resolver,
    "tf.distribute.get_strategy": get_strategy,
    "tf.distribute.has_strategy": lambda: bool(_scopes),
    "tf.distribute.in_cross_replica_context": lambda: bool(_scopes),
    "tf.distribute.OneDeviceStrategy": one_device_strategy,
    "tf.distribute.MirroredStrategy": mirrored_strategy,
}

__all__ = ["CALLS", "Strategy", "get_strategy"]
