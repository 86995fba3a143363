"""The framework's random state: one NumPy generator that unseeded initializers and layers draw from.

`set_random_seed(s)` seeds Python's `random`, NumPy's global state and this generator, so a script that
calls it builds the same initial weights and dropout seeds on every run. A forked worker (a loader's
decoder process) takes its own draw stream (`set_process_stream`), so that the random layers it runs
eagerly draw other numbers than its siblings, which inherited the same state.
"""

from __future__ import annotations

import logging
import random

import numpy as np

log = logging.getLogger("flexflow_keras")

_generator = np.random.default_rng()
_seeded_by_script = False  # set_random_seed / tf.random.set_seed: the script's own seed decides
_flag_applied = False  # --seed (config.seed) considered, once, before the first draw


def set_random_seed(seed: int) -> None:
    """Seed Python, NumPy and flexflow_keras' own generator (initializers, dropout seeds).

    Args:
        seed: a non-negative integer.

    Example:
        >>> from flexflow_keras import utils
        >>> utils.set_random_seed(1337)
    """
    global _generator, _seeded_by_script
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"set_random_seed expects a non-negative integer seed, received seed={seed!r} "
                         f"(of type {type(seed).__name__}).")
    seed = int(seed)
    _seeded_by_script = True
    random.seed(seed)
    np.random.seed(seed % (2 ** 32))
    _generator = np.random.default_rng(seed)


def set_framework_seed(seed: int | None, by_script: bool = True) -> None:
    """Seed only flexflow_keras' own generator (initializers, dropout, shuffles), leaving Python's and
    NumPy's global states; None: a fresh unseeded generator. `by_script=False`: a seed of the framework's
    own (the MPI ranks' shared one), which --seed still replaces."""
    global _generator, _seeded_by_script
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0):
        raise ValueError(f"set_framework_seed expects a non-negative integer or None, received {seed!r}.")
    _generator = np.random.default_rng(None if seed is None else int(seed))
    _seeded_by_script = _seeded_by_script or by_script


def _apply_seed_flag() -> None:
    """Before the first draw: `--seed N` (FF_SEED, config.set(seed=)) seeds the generator, so the initial
    weights repeat too, unless the script seeded it itself (keras.utils.set_random_seed, tf.random.set_seed),
    whose seed then decides them (the log says so)."""
    global _generator, _flag_applied
    _flag_applied = True
    from flexflow_keras import config

    seed = config.get().seed
    if seed is None:
        return
    if _seeded_by_script:
        log.info("--seed %d: the script seeds the framework's generator itself (keras.utils.set_random_seed or "
                 "tf.random.set_seed), so its seed decides the initial weights; --seed fixes the data order, "
                 "dropout, synthetic data and the search", seed)
        return
    _generator = np.random.default_rng(int(seed))
    log.info("--seed %d seeds the initial weights, dropout and the data order", seed)


def generator() -> np.random.Generator:
    """The shared generator (re-created by `set_random_seed`; seeded by --seed before its first use)."""
    if not _flag_applied:
        _apply_seed_flag()
    return _generator


def make_seed() -> int:
    """A fresh 31-bit seed drawn from the shared generator (for layers given no seed)."""
    if not _flag_applied:
        _apply_seed_flag()
    return int(_generator.integers(0, 2 ** 31 - 1))


def default_seed(python_draw: bool = True) -> int:
    """The seed of an unseeded initializer, `SeedGenerator` or random layer (dropout, noise, augmentation,
    RNN cells), wherever Keras 3 calls its `make_default_seed`: `make_seed()`, after one draw of Python's
    global `random` (`randint(1, 10**9)`, discarded), as Keras takes that seed from it. Building the same
    layers then leaves Python's random state where tf.keras leaves it, so a script's own `random.shuffle`
    or `random.sample` after building a model (of its file lists, its validation split) gives tf.keras'
    order. The seed itself stays the framework's, so `tf.random.set_seed` and the ranks of an MPI run
    keep deciding the weights (`set_framework_seed`). `python_draw=False` where Keras draws none (a
    Dropout of rate 0 makes no SeedGenerator)."""
    if python_draw:
        keras_draw()
    return make_seed()


def keras_draw() -> None:
    """One draw of Python's global `random`, where Keras 3 takes one and flexflow_keras needs no seed (a
    sub-layer's clone of an unseeded initializer, see `default_seed`)."""
    random.randint(1, int(1e9))


_stream = 0


def set_process_stream(stream: int) -> None:
    """In a forked worker: draw from stream `stream` (> 0; the program is 0), and reseed NumPy's global state
    from the program's, so sibling workers draw apart and the same run draws the same."""
    global _stream, _generator
    _stream = int(stream)
    base = int(_generator.integers(0, 2 ** 31 - 1))
    _generator = np.random.default_rng([base, _stream])
    np.random.seed((base * 1000003 + _stream) % (2 ** 32))


def process_stream() -> int:
    """The draw stream of this process (0 in the program, k + 1 in decoder process k)."""
    return _stream
