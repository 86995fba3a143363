"""`keras.datasets.boston_housing`: 13 features of 506 Boston suburbs and the median house price
(thousands of dollars), split by `test_split` (404 + 102 by default), float64.

Reads Keras' ``boston_housing.npz`` (x, y) from the Keras cache, or -d when given (that file, a CSV or
an .npy pair with 13 features; anything else is an error); without it, deterministic
synthetic data with realistic feature scales and a learnable (mostly linear) price.
"""

from __future__ import annotations

import numpy as np

from flexflow_keras.datasets import _common as C
from flexflow_keras.datasets import _flag

SAMPLES, FEATURES = 506, 13
# Rough means and spreads of the real features (crime rate, zoning, ..., LSTAT).
_MEANS = np.array([3.6, 11.4, 11.1, 0.07, 0.55, 6.3, 68.6, 3.8, 9.5, 408.2, 18.5, 356.7, 12.7])
_STDS = np.array([8.6, 23.3, 6.9, 0.25, 0.12, 0.7, 28.1, 2.1, 8.7, 168.5, 2.2, 91.3, 7.1])


def _synthetic():
    rng = np.random.default_rng(7)
    z = rng.standard_normal((SAMPLES, FEATURES))
    x = np.abs(_MEANS + z * _STDS)
    x[:, 3] = (rng.random(SAMPLES) < 0.07).astype(np.float64)  # the river dummy
    coef = np.array([-0.9, 0.4, 0.1, 0.7, -1.5, 3.0, -0.1, -2.5, 1.8, -1.6, -2.0, 0.8, -3.7])
    y = 22.5 + z @ coef + 0.8 * z[:, 5] ** 2 + rng.normal(0, 1.5, SAMPLES)
    return x, np.clip(y, 5.0, 50.0)


def load_data(path="boston_housing.npz", test_split=0.2, seed=113):
    """Loads the Boston Housing dataset (Keras' signature).

    Args:
        path: file name looked up in -d and the Keras cache.
        test_split: fraction of the data kept for testing, in [0, 1).
        seed: shuffling seed.

    Returns:
        ``(x_train, y_train), (x_test, y_test)``: float64 arrays (N, 13) and (N,).
    """
    if not 0 <= test_split < 1:
        raise ValueError(f"Invalid `test_split` argument: {test_split}. It must be between 0 and 1 (exclusive "
                         f"of 1).")
    found, why = C.locate("boston_housing", [path, "boston_housing.npz"])
    if found is not None and found.from_flag:
        x, y = _flag.read_table(_flag.BOSTON, found)
    elif found is not None:
        try:
            with np.load(found.path, allow_pickle=False) as f:
                x, y = f["x"], f["y"]
        except (OSError, ValueError, KeyError) as e:
            raise C.read_error("boston_housing", found.path, e) from None
    else:
        x, y = _synthetic()
    rng = np.random.RandomState(seed)
    indices = np.arange(len(x))
    rng.shuffle(indices)
    x, y = x[indices], y[indices]
    cut = int(len(x) * (1 - test_split))
    detail = f"{cut} train + {len(x) - cut} test samples, {x.shape[1]} features"
    if found is not None:
        C.log_real("boston_housing", found, detail)
    else:
        C.log_synthetic("boston_housing", why, detail)
    return (np.array(x[:cut]), np.array(y[:cut])), (np.array(x[cut:]), np.array(y[cut:]))
