"""TensorFlow's setup calls under `python -m flexflow_keras` (tf_compat.py's `mapped_call` looks here): the few
lines public tf.keras scripts open with, which have an exact meaning here.

- `tf.random.set_seed` (and `tf.compat.v1.set_random_seed`) seeds the framework's generator (initializers,
  dropout, dataset shuffles), as it seeds TensorFlow's ops, and leaves Python's and NumPy's.
- `tf.function` returns the function run as Python (this framework traces the training step itself), which
  checks an `input_signature` and has `python_function`; `get_concrete_function` is an error saying why.
  While it runs, `in_function()` is True: what TensorFlow would run as a graph there (keras_alias' eager
  tf.nn.softmax / sigmoid keep their logits for the crossentropies only in a graph, as TensorFlow's).
- `tf.get_logger()` is flexflow_keras' logger (so ``setLevel("ERROR")`` quiets this framework's messages too);
  `tf.compat.v1.logging.set_verbosity` sets its level and `tf.autograph.set_verbosity` does nothing.
- `tf.executing_eagerly()` is False while a `tf.function` runs, else True (see `executing_eagerly`).
- `tf.config.list_physical_devices("GPU")` lists the GPUs `-ll:gpu` gives (so ``if gpus:`` branches behave;
  `list_logical_devices` names them '/device:GPU:i')
  and `set_memory_growth` does nothing (GPU memory is -ll:fsize's); choosing devices in code
  (`set_visible_devices`, `set_logical_device_configuration`) is an error that names the flags.
- `with tf.device("/CPU:0"):` runs its block as it is: ops are placed by the strategy over the -ll:cpu /
  -ll:gpu processors and host layers (TextVectorization.adapt, lookups) run on the host anyway, as
  TensorFlow's soft placement would run a block naming a device that is not there. The name must be a
  string (or None), as TensorFlow's.
- `tf.config.experimental.enable_op_determinism()`: CPU kernels here give the same numbers run to run (reductions
  run in a fixed order), so on CPU processors it holds without change; CUDA kernels that sum with atomic adds
  (embedding, convolution and batch-norm backward, ...) do not, so with -ll:gpu it logs a warning saying so.
  `disable_op_determinism` and `is_op_determinism_enabled` keep and answer the flag.
- `tf.test.gpu_device_name()` / `is_gpu_available()`: the `-ll:gpu` devices, as the device listing;
  `tf.test.is_built_with_cuda()` is True (every op here has a CUDA kernel; whether a GPU is there is the
  two others' question).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import logging
from collections import namedtuple

import numpy as np

from flexflow_keras.errors import ConfigError

_log = logging.getLogger(__name__)
PhysicalDevice = namedtuple("PhysicalDevice", ["name", "device_type"])
LogicalDevice = namedtuple("LogicalDevice", ["name", "device_type"])
LOG_LEVELS = {"DEBUG": logging.DEBUG, "INFO": logging.INFO, "WARN": logging.WARNING, "WARNING": logging.WARNING,
              "ERROR": logging.ERROR, "FATAL": logging.CRITICAL}


def set_seed(seed) -> None:
    """`tf.random.set_seed(seed)`: TensorFlow takes any integer, and None for an unseeded state."""
    from flexflow_keras.utils import rng

    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer))):
        raise ConfigError(f"tf.random.set_seed expects an integer or None, received {seed!r}.")
    rng.set_framework_seed(None if seed is None else int(seed) % (1 << 63))
    from flexflow_keras import tf_random_init

    tf_random_init.note_global_seed(seed)  # TensorFlow's seeded sampler kernels start again


def memory_growth(device, enable) -> None:
    """GPU memory is the -ll:fsize flag's size, allocated as needed within it: nothing to set."""


def visible_devices(*args, **kwargs):
    """Choosing devices in code: refused, naming the command-line flags that choose them."""
    raise ConfigError("tf.config.set_visible_devices / set_logical_device_configuration: under flexflow_keras "
                      "the devices are the -ll:gpu N and -ll:cpu N command-line flags (and -ll:fsize for GPU "
                      "memory); remove the call and give the flags (e.g. -ll:gpu 1).")


_IN_FUNCTION: contextvars.ContextVar[bool] = contextvars.ContextVar("ff_in_tf_function", default=False)


def in_function() -> bool:
    """Whether a `tf.function` is running (TensorFlow would be running its graph)."""
    return _IN_FUNCTION.get()


def function(func=None, input_signature=None, *args, **kwargs):
    """`tf.function` as a decorator (bare or with arguments) or a call: the function, run as Python (this
    framework traces the training step itself), that checks its `input_signature` as TensorFlow does (a
    TypeError for an incompatible argument) and answers `python_function`; asking for TensorFlow's graph
    (`get_concrete_function`) is an error that says so."""
    if func is None or not callable(func):
        return lambda f: function(f, input_signature)
    specs = None if input_signature is None else list(input_signature)

    @functools.wraps(func)
    def run(*call_args, **call_kwargs):
        if specs is not None:
            _check_signature(func, specs, call_args[len(call_args) - len(specs):] if call_args else ())
        token = _IN_FUNCTION.set(True)
        try:
            return _as_tensors(func(*call_args, **call_kwargs))
        finally:
            _IN_FUNCTION.reset(token)

    def no_graph(*_args, **_kwargs):
        from flexflow_keras.keras_alias import RawTensorFlowError

        raise RawTensorFlowError(
            f"tf.function '{func.__name__}'.get_concrete_function: concrete functions and their graphs "
            f"(graph.get_operations(), function_def) are TensorFlow's; under `python -m flexflow_keras` a "
            f"tf.function runs its Python function as it is (flexflow_keras traces the training step "
            f"itself). Call the function directly, or run the script with TensorFlow to inspect its graph.")

    run.python_function = func
    run.input_signature = input_signature
    run.get_concrete_function = no_graph
    return run


def _as_tensors(value):
    """A tf.function's result as TensorFlow returns it: Python and NumPy numbers and arrays become tensors
    (``tf_cube(2)`` is an int32 tensor), in the same tuple / list / dict; other values stay as they are."""
    from flexflow_keras.ops.eager_tensor import EagerTensor
    from flexflow_keras.tf_tensor_basics import _constant

    if isinstance(value, bool | int | float | np.generic) or (isinstance(value, np.ndarray)
                                                              and not isinstance(value, EagerTensor)):
        return _constant(value)
    if isinstance(value, tuple | list):
        return type(value)(_as_tensors(v) for v in value) if not hasattr(value, "_fields") else \
            type(value)(*(_as_tensors(v) for v in value))
    if isinstance(value, dict):
        return type(value)((k, _as_tensors(v)) for k, v in value.items())
    return value


def _check_signature(func, specs, args) -> None:
    """TensorFlow's binding of `args` to a tf.function's input_signature: same count, rank, known dims and
    dtype, else a TypeError."""
    if len(args) != len(specs):
        raise TypeError(f"tf.function '{func.__name__}' takes {len(specs)} argument(s) by its input_signature, "
                        f"received {len(args)}.")
    for i, (arg, spec) in enumerate(zip(args, specs, strict=True)):
        value = np.asarray(arg)
        shape = tuple(getattr(spec, "shape", ()) or ())
        dtype = str(getattr(spec, "dtype", value.dtype))
        ok = len(shape) == value.ndim and all(d is None or d == n for d, n in zip(shape, value.shape, strict=True))
        # a Python value converts to the spec's dtype, as TensorFlow converts it; an array keeps its own
        if not ok or (isinstance(arg, np.ndarray) and value.dtype.kind in "fiub" and str(value.dtype) != dtype):
            raise TypeError(f"Binding inputs to tf.function `{func.__name__}` failed: argument {i} of shape "
                            f"{value.shape} and dtype {value.dtype} is not compatible with its input_signature "
                            f"TensorSpec(shape={shape}, dtype={dtype}).")


def logger() -> logging.Logger:
    """`tf.get_logger()`: flexflow_keras' logger."""
    return logging.getLogger("flexflow_keras")


def set_verbosity(level) -> None:
    """`tf.compat.v1.logging.set_verbosity(level)`: the level of flexflow_keras' logger."""
    logger().setLevel(int(level))


def _no_op(*args, **kwargs) -> None:
    return None


def devices(device_type=None) -> list:
    """`tf.config.list_physical_devices(device_type)`: the `-ll:gpu` GPUs and one CPU."""
    from flexflow_keras import config

    gpus = [PhysicalDevice(f"/physical_device:GPU:{i}", "GPU") for i in range(config.get().gpus)]
    cpus = [PhysicalDevice("/physical_device:CPU:0", "CPU")]
    kind = (device_type or "").upper()
    return gpus if kind == "GPU" else cpus if kind == "CPU" else cpus + gpus


def logical_devices(device_type=None) -> list:
    """`tf.config.list_logical_devices(device_type)`: TensorFlow's logical devices, one per physical device
    here (no virtual devices: `set_logical_device_configuration` is refused), named '/device:CPU:0',
    '/device:GPU:i' as TensorFlow names them."""
    return [LogicalDevice(d.name.replace("/physical_device:", "/device:"), d.device_type)
            for d in devices(device_type)]


def executing_eagerly() -> bool:
    """`tf.executing_eagerly()`: False while a `tf.function` runs (TensorFlow runs its graph there), else True.
    A layer's call that flexflow_keras traces into its graph (functional construction, fit's step) runs
    once on symbolic tensors, where TensorFlow would answer False; this answers True there."""
    return not in_function()


@contextlib.contextmanager
def device(device_name):
    """`tf.device(name)`: a block that runs as it is (see the module docstring)."""
    if device_name is not None and not isinstance(device_name, str):
        raise ConfigError(f"tf.device expects a device name string such as '/CPU:0' or '/GPU:0' (or None), "
                          f"received {type(device_name).__name__} {device_name!r}.")
    _log.debug("tf.device(%r): placement comes from the strategy and the -ll flags; the block runs as is",
               device_name)
    yield


_determinism = [False]


def enable_op_determinism() -> None:
    """`tf.config.experimental.enable_op_determinism()` (see the module docstring)."""
    _determinism[0] = True
    if devices("GPU"):
        _log.warning("tf.config.experimental.enable_op_determinism(): CPU kernels here are deterministic, but the "
                     "CUDA kernels that sum with atomic adds (embedding, convolution and batch-norm gradients, "
                     "among others) may differ run to run in the last bits; run with -ll:gpu 0 for results "
                     "that repeat exactly.")


def disable_op_determinism() -> None:
    _determinism[0] = False


def gpu_device_name() -> str:
    """`tf.test.gpu_device_name()`: the first `-ll:gpu` device's name, or "" without GPUs (as TensorFlow)."""
    return "/device:GPU:0" if devices("GPU") else ""


CALLS = {
    "tf.random.set_seed": set_seed, "tf.compat.v1.set_random_seed": set_seed,
    "tf.function": function,
    "tf.get_logger": logger,
    "tf.compat.v1.logging.set_verbosity": set_verbosity, "tf.autograph.set_verbosity": _no_op,
    "tf.config.list_physical_devices": devices, "tf.config.experimental.list_physical_devices": devices,
    "tf.config.list_logical_devices": logical_devices, "tf.config.experimental.list_logical_devices": logical_devices,
    "tf.executing_eagerly": executing_eagerly, "tf.compat.v1.executing_eagerly": executing_eagerly,
    "tf.config.experimental.set_memory_growth": memory_growth,
    "tf.config.set_visible_devices": visible_devices, "tf.config.experimental.set_visible_devices": visible_devices,
    "tf.config.set_logical_device_configuration": visible_devices,
    "tf.test.gpu_device_name": gpu_device_name, "tf.test.is_gpu_available": lambda *a, **k: bool(devices("GPU")),
    "tf.test.is_built_with_cuda": lambda: True,
    "tf.device": device,
    "tf.config.experimental.enable_op_determinism": enable_op_determinism,
    "tf.config.experimental.disable_op_determinism": disable_op_determinism,
    "tf.config.experimental.is_op_determinism_enabled": lambda: _determinism[0],
}
CONSTANTS = {f"tf.compat.v1.logging.{k}": v for k, v in LOG_LEVELS.items()}
