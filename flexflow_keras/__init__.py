"""flexflow_keras: a Keras-compatible training framework that picks the parallelization strategy.

`import flexflow_keras as keras` gives the tf.keras surface (layers, models, optimizers, losses, metrics,
callbacks, datasets, utils, backend, ...). Models train through the Legion-shaped task runtime in
`runtime/`, with operator kernels from `kernels/`.
"""

from __future__ import annotations

import logging as _logging
import os as _os

__version__ = "0.1.0"


def _check_siblings() -> None:
    # `runtime` and `kernels` are top-level packages with common names: make sure we got ours.
    import importlib

    here = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
    for name in ("runtime", "kernels"):
        mod = importlib.import_module(name)
        if getattr(mod, "__flexflow_component__", None) != name:
            where = getattr(mod, "__file__", None) or list(getattr(mod, "__path__", []))
            raise ImportError(
                f"flexflow_keras needs its own '{name}' package (expected next to {here}), but Python "
                f"imported a different '{name}' from {where}. Uninstall or rename the other package, or "
                f"run from a checkout where flexflow_keras, runtime and kernels sit side by side "
                f"(pip install -e .).")


_check_siblings()



def _setup_logging() -> None:
    # The log states the data source, the chosen strategy and overrides: show it by default, on stderr,
    # unless the application configured logging itself. FF_LOG_LEVEL=WARNING quiets it.
    logger = _logging.getLogger("flexflow_keras")
    if logger.handlers or _logging.getLogger().handlers:
        return
    handler = _logging.StreamHandler()
    handler.setFormatter(_logging.Formatter("[flexflow_keras] %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(_os.environ.get("FF_LOG_LEVEL", "INFO").upper())


_setup_logging()

from flexflow_keras.utils import cli_errors as _cli_errors  # noqa: E402

_cli_errors.install()

from flexflow_keras.utils import interrupts as _interrupts  # noqa: E402

_interrupts.guard_finalizers()  # a Ctrl-C that lands in a finalizer is raised again, not swallowed

from flexflow_keras.execution import distributed as _distributed  # noqa: E402

_distributed.start()  # under mpiexec: join the job (one node per rank); else nothing

from flexflow_keras import (  # noqa: E402
    activations,
    applications,
    backend,
    callbacks,
    config,  # noqa: E402
    datasets,
    experimental,
    initializers,
    layers,
    losses,
    metrics,
    mixed_precision,
    models,
    ops,
    optimizers,
    preprocessing,
    random,
    regularizers,
    saving,
    tree,
    utils,
)
from flexflow_keras.initializers import Initializer  # noqa: E402
from flexflow_keras.layers import Input, InputSpec, Layer  # noqa: E402
from flexflow_keras.losses import Loss  # noqa: E402
from flexflow_keras.metrics import Metric  # noqa: E402
from flexflow_keras.mixed_precision import DTypePolicy  # noqa: E402
from flexflow_keras.models import Model, Sequential  # noqa: E402
from flexflow_keras.ops.graph import KerasTensor  # noqa: E402
from flexflow_keras.ops.strategy import ParallelConfig, Strategy  # noqa: E402
from flexflow_keras.optimizers import Optimizer  # noqa: E402
from flexflow_keras.regularizers import Regularizer  # noqa: E402
from flexflow_keras.variables import Variable  # noqa: E402


def version() -> str:
    """This package's version, as `keras.version()` gives Keras'. Under ``python -m flexflow_keras`` the
    script imports us as keras, and the version is that of the Keras API we follow, with ours as its
    local label ("3.15.1+flexflow.0.1.0"): scripts that branch on Keras 3 take their Keras 3 path."""
    return __version__


__all__ = [
    "activations", "applications", "backend", "callbacks", "config", "datasets", "experimental", "initializers", "layers", "losses",
    "metrics", "mixed_precision", "models", "ops", "optimizers", "preprocessing", "random", "regularizers",
    "saving", "tree", "utils",
    "Input", "Model", "Sequential", "Variable", "version",
    # Keras 3's top-level classes (keras.Layer is keras.layers.Layer, ...)
    "DTypePolicy", "Initializer", "InputSpec", "KerasTensor", "Layer", "Loss", "Metric", "Optimizer", "Regularizer",
    "ParallelConfig", "Strategy",
]
