"""`keras.optimizers`: SGD, Adam, AdamW, RMSprop, Adagrad, Adadelta, Adamax, Nadam, Ftrl, Lion, Lamb, Adafactor,
ScheduleFreeAdamW, learning-rate `schedules`, and `get`.

See `optimizers/base.py` for the contract with the training loop (`slot_specs`, `apply`,
`learning_rate_at`, `iterations`).
"""

from __future__ import annotations

from flexflow_keras.errors import FlexFlowKerasError
from flexflow_keras.optimizers import schedules
from flexflow_keras.optimizers.adadelta import Adadelta
from flexflow_keras.optimizers.adafactor import Adafactor
from flexflow_keras.optimizers.adagrad import Adagrad
from flexflow_keras.optimizers.adam import Adam, AdamW
from flexflow_keras.optimizers.adamax import Adamax
from flexflow_keras.optimizers.base import Optimizer
from flexflow_keras.optimizers.ftrl import Ftrl
from flexflow_keras.optimizers.lamb import Lamb
from flexflow_keras.optimizers.lion import Lion
from flexflow_keras.optimizers.nadam import Nadam
from flexflow_keras.optimizers.rmsprop import RMSprop
from flexflow_keras.optimizers.schedule_free import ScheduleFreeAdamW
from flexflow_keras.optimizers.sgd import SGD

# Keras 2's lowercase aliases (``keras.optimizers.adam(lr=0.001)``, ``from keras.optimizers import sgd``).
# As package attributes they shadow the modules of the same names, as in Keras 2; those modules stay
# importable by their full names (``flexflow_keras.optimizers.adam``).
sgd, adam, rmsprop, adagrad, adadelta, adamax, nadam = SGD, Adam, RMSprop, Adagrad, Adadelta, Adamax, Nadam

_BUILTIN = {cls.__name__.lower(): cls for cls in (SGD, Adam, AdamW, RMSprop, Adagrad, Adadelta, Adamax, Nadam,
                                                  Ftrl, Lion, Lamb, Adafactor, ScheduleFreeAdamW)}
# Keras optimizers that exist in Keras 3 but not here: named in the error so the user knows why.
_KERAS_ONLY = ("muon", "multioptimizer")


def serialize(optimizer: Optimizer) -> dict:
    """``{"module", "class_name", "config", "registered_name"}`` as Keras 3 writes it."""
    return {"module": "keras.optimizers", "class_name": type(optimizer).__name__,
            "config": optimizer.get_config(), "registered_name": None}


def deserialize(config: dict, custom_objects: dict | None = None) -> Optimizer:
    """Rebuild an optimizer from `serialize`'s dict (class names are case-insensitive)."""
    name = str(config.get("class_name", ""))
    custom = dict(custom_objects or {})
    cls = custom.get(name) or _BUILTIN.get(name.lower())
    if cls is None:
        raise ValueError(_unknown(name))
    return cls.from_config(dict(config.get("config", {})))


def _unknown(identifier) -> str:
    valid = ", ".join(sorted(_BUILTIN))
    if str(identifier).lower() in _KERAS_ONLY:
        return (f"Optimizer {identifier!r} exists in Keras but is not implemented by flexflow_keras. "
                f"Valid optimizers: {valid} (strings, dicts, or instances such as optimizers.Adam()).")
    return (f"Could not interpret optimizer identifier {identifier!r}. Valid optimizers: {valid} "
            f"(strings, config dicts, or instances such as optimizers.Adam()).")


def get(identifier) -> Optimizer | None:
    """An optimizer from a name ('adam'), a config dict or an instance (returned as is).

    Raises:
        ValueError: for anything else, listing the valid names.
    """
    if identifier is None:
        return None
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        cls = _BUILTIN.get(identifier.lower())
        if cls is None:
            raise ValueError(_unknown(identifier))
        return cls()
    if isinstance(identifier, type) and issubclass(identifier, Optimizer):
        return identifier()
    raise ValueError(_unknown(identifier))


class UnsupportedOptimizerError(FlexFlowKerasError, AttributeError):
    """A Keras 3 optimizer class flexflow_keras does not implement (an AttributeError: `hasattr` stays False)."""


_KERAS_ONLY_CLASSES = {"Muon": "muon", "MultiOptimizer": "multioptimizer", "OptimizerMap": "multioptimizer"}


def __getattr__(name: str):
    # keras.optimizers.Muon and the like: say that flexflow_keras lacks them, not a bare AttributeError
    if name in _KERAS_ONLY_CLASSES:
        raise UnsupportedOptimizerError(f"keras.optimizers.{name} is a Keras optimizer flexflow_keras does not have. "
                                        f"Use one of {', '.join(sorted(c.__name__ for c in set(_BUILTIN.values())))}, "
                                        f"or run this script with Keras itself.")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "Nadam", "Ftrl", "Lion",
           "Lamb", "Adafactor", "ScheduleFreeAdamW",
           "schedules", "get", "serialize",
           "deserialize"]
