"""The Keras 3 `keras.config` functions that are not run settings: traceback filtering and the numeric
settings `keras.config` shares with `keras.backend` (backend, floatx, epsilon, image data format), and the dtype
policy (`set_dtype_policy`, `dtype_policy`: mixed_precision.py).

`flexflow_keras.config` re-exports these so that `keras.config.disable_traceback_filtering()` and
`keras.config.floatx()` work under `python -m flexflow_keras`. Traceback filtering maps onto the one-block
error report of the command line: filtering on (the default) prints one clean block for a user error,
filtering off prints the whole traceback, exactly as `--debug` / `FF_DEBUG=1` do.
"""

from __future__ import annotations

import os
import sys

from flexflow_keras.backend import (
    backend,
    epsilon,
    floatx,
    image_data_format,
    set_epsilon,
    set_floatx,
    set_image_data_format,
)
from flexflow_keras.mixed_precision import dtype_policy, set_dtype_policy

__all__ = ["backend", "disable_traceback_filtering", "dtype_policy", "enable_traceback_filtering", "epsilon", "floatx",
           "image_data_format", "is_traceback_filtering_enabled", "set_dtype_policy", "set_epsilon",
           "set_floatx", "set_image_data_format"]

_DEBUG_ENV = "FF_DEBUG"


def disable_traceback_filtering() -> None:
    """Show whole tracebacks for user errors (the same as `--debug` or `FF_DEBUG=1`)."""
    os.environ[_DEBUG_ENV] = "1"


def enable_traceback_filtering() -> None:
    """Report user errors as one clean block again (undoes `disable_traceback_filtering`; a `--debug`
    flag on the command line still wins)."""
    os.environ[_DEBUG_ENV] = "0"


def is_traceback_filtering_enabled() -> bool:
    """True unless `disable_traceback_filtering()`, `FF_DEBUG` or `--debug` asked for whole tracebacks."""
    env_off = os.environ.get(_DEBUG_ENV, "") not in ("", "0")
    return not (env_off or any(a == "--debug" or a.startswith("--debug=") for a in sys.argv))
