"""Keras-style automatic names: `dense`, `dense_1`, ... from a process-wide counter per prefix.

`backend.clear_session()` resets the counters, as in Keras.
"""

from __future__ import annotations

import collections
import re

_uids: collections.defaultdict[str, int] = collections.defaultdict(int)


def to_snake_case(name: str) -> str:
    """`BatchNormalization` -> `batch_normalization`, `Conv2D` -> `conv2d` (Keras' rule)."""
    name = re.sub(r"\W+", "", name)
    name = re.sub("(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", name).lower()


def uniquify(name: str) -> str:
    """The first request for `name` returns it unchanged, later ones `name_1`, `name_2`, ..."""
    unique = f"{name}_{_uids[name]}" if name in _uids else name
    _uids[name] += 1
    return unique


def auto_name(class_name: str) -> str:
    """A fresh name for an object of class `class_name`."""
    return uniquify(to_snake_case(class_name))


def get_uid(prefix: str = "") -> int:
    """Increment and return the counter of `prefix` (Keras' `backend.get_uid`)."""
    _uids[prefix] += 1
    return _uids[prefix]


def reset_uids() -> None:
    """Forget every counter (names start again at `dense`)."""
    _uids.clear()


def unique_in(name: str, used: dict[str, int]) -> str:
    """Like `uniquify` but against a local counter `used` (weights-file group names)."""
    if name in used:
        out = f"{name}_{used[name]}"
        used[name] += 1
        return out
    used[name] = 1
    return name
