"""`tf.data.Options` and its enums (`tf.data.experimental.AutoShardPolicy`, ...) for `Dataset.with_options`.

Scripts set a few of them (``options.experimental_distribute.auto_shard_policy = AutoShardPolicy.DATA``,
``options.experimental_deterministic = False``) before `fit` on a distribution strategy. A single-process
pipeline has nothing to shard, thread or autotune, so here they are kept and handed back by
`Dataset.options()`, with TensorFlow 2.21's names and defaults, and change nothing. They carry along a
dataset's own chain (map, batch, ...) but not into datasets made from it (interleave, zip, ...: there
`options()` starts from the defaults, where TensorFlow merges the inputs'). Setting a name TensorFlow's
Options does not have is an error, as in TensorFlow.
"""

from __future__ import annotations

import copy
import enum

from flexflow_keras.errors import DataError


class AutoShardPolicy(enum.IntEnum):
    OFF, AUTO, FILE, DATA, HINT = -1, 0, 1, 2, 3


class ExternalStatePolicy(enum.IntEnum):
    WARN, IGNORE, FAIL = 0, 1, 2


class AutotuneAlgorithm(enum.IntEnum):
    DEFAULT, HILL_CLIMB, GRADIENT_DESCENT, MAX_PARALLELISM, STAGE_BASED = 0, 1, 2, 3, 4


class _OptionGroup:
    """A set of named options, each None (unset) until a script sets it; `_DEFAULTS` names them."""

    _DEFAULTS: dict = {}
    _ALIASES: dict = {}  # TensorFlow's deprecated spelling -> the option it sets

    def __init__(self):
        for name, value in self._DEFAULTS.items():
            object.__setattr__(self, name, value() if isinstance(value, type) else value)

    def __getattr__(self, name: str):
        if name in type(self)._ALIASES:
            return getattr(self, type(self)._ALIASES[name])
        raise AttributeError(f"'{type(self).__name__}' object has no attribute {name!r}")

    def __setattr__(self, name: str, value) -> None:
        name = self._ALIASES.get(name, name)
        if name not in self._DEFAULTS:
            raise DataError(f"tf.data.{type(self).__name__} has no option {name!r}; its options are "
                            f"{sorted(self._DEFAULTS) + sorted(self._ALIASES)}. Check the spelling against "
                            f"TensorFlow's tf.data.Options.")
        if isinstance(self._DEFAULTS[name], type) and not isinstance(value, self._DEFAULTS[name]):
            raise DataError(f"tf.data.Options.{name} is a group of options ({self._DEFAULTS[name].__name__}); set "
                            f"its fields (options.{name}.<field> = ...), received {value!r}.")
        object.__setattr__(self, name, value)

    def _merged(self, other: _OptionGroup) -> _OptionGroup:
        """These options with `other`'s set ones over them (TensorFlow's `Options.merge`)."""
        out = copy.deepcopy(self)
        for name, default in self._DEFAULTS.items():
            mine, theirs = getattr(out, name), getattr(other, name)
            if isinstance(default, type):
                object.__setattr__(out, name, mine._merged(theirs))
            elif theirs is not None and theirs != _initial(default):
                object.__setattr__(out, name, theirs)
        return out

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._ALIASES))

    def merge(self, options: _OptionGroup) -> _OptionGroup:
        return self._merged(options)

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and all(getattr(self, n) == getattr(other, n) for n in self._DEFAULTS)

    __hash__ = None  # mutable, as TensorFlow's

    def __repr__(self) -> str:
        fields = ", ".join(f"{n}={getattr(self, n)!r}" for n in self._DEFAULTS)
        return f"{type(self).__name__}({fields})"


def _initial(default):
    return None if isinstance(default, type) else default


def _unset(*names: str) -> dict:
    return dict.fromkeys(names)


class DistributeOptions(_OptionGroup):
    _DEFAULTS = {"auto_shard_policy": AutoShardPolicy.AUTO, "num_devices": None}


class OptimizationOptions(_OptionGroup):
    _DEFAULTS = _unset("apply_default_optimizations", "filter_fusion", "filter_parallelization", "inject_prefetch",
                       "map_and_batch_fusion", "map_and_filter_fusion", "map_fusion", "map_parallelization",
                       "noop_elimination", "parallel_batch", "seq_interleave_prefetch", "shuffle_and_repeat_fusion")


class ThreadingOptions(_OptionGroup):
    _DEFAULTS = _unset("max_intra_op_parallelism", "private_threadpool_size")


class AutotuneOptions(_OptionGroup):
    _DEFAULTS = _unset("autotune_algorithm", "cpu_budget", "enabled", "initial_parallelism", "min_parallelism",
                       "ram_budget")


class ServiceOptions(_OptionGroup):
    _DEFAULTS = _unset("pinned")


class Options(_OptionGroup):
    """`tf.data.Options()`: kept by `Dataset.with_options`, returned by `Dataset.options()` (no effect here)."""

    _DEFAULTS = {"autotune": AutotuneOptions, "dataset_name": None, "deterministic": None,
                 "experimental_distribute": DistributeOptions, "experimental_external_state_policy": None,
                 "experimental_optimization": OptimizationOptions, "experimental_service": ServiceOptions,
                 "experimental_slack": None,
                 "experimental_symbolic_checkpoint": None, "experimental_warm_start": None,
                 "framework_type": None, "threading": ThreadingOptions}
    _ALIASES = {"experimental_deterministic": "deterministic", "experimental_threading": "threading"}
