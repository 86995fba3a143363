"""save_weights / load_weights without TensorFlow: .weights.h5 and .npz round trips and clear errors."""

import numpy as np
import pytest

from flexflow_keras import layers, models
from flexflow_keras.errors import DataError


def build():
    return models.Sequential([layers.Input((4,)), layers.Dense(3), layers.BatchNormalization(), layers.Dense(2)])


@pytest.mark.parametrize("suffix", [".weights.h5", ".npz"])
def test_round_trip(tmp_path, suffix):
    if suffix.endswith("h5"):
        pytest.importorskip("h5py")
    a, b = build(), build()
    path = tmp_path / f"m{suffix}"
    a.save_weights(path)
    b.load_weights(str(path))
    for x, y in zip(a.get_weights(), b.get_weights(), strict=True):
        np.testing.assert_array_equal(x, y)


def test_errors(tmp_path):
    a = build()
    with pytest.raises(ValueError, match=r"must end in `\.weights\.h5` \(or `\.npz`, or `\.h5` for Keras 2"):
        a.save_weights(tmp_path / "m.weights")
    with pytest.raises(DataError, match="missing.npz does not exist"):
        a.load_weights(tmp_path / "missing.npz")
    a.save_weights(tmp_path / "m.npz")
    with pytest.raises(FileExistsError):
        a.save_weights(tmp_path / "m.npz", overwrite=False)
    other = models.Sequential([layers.Input((4,)), layers.Dense(5), layers.BatchNormalization(), layers.Dense(2)])
    with pytest.raises(ValueError, match=r"weight 'sequential_1/dense_2/kernel' of layer 'dense_2' has shape \(4, 5\)"):
        other.load_weights(tmp_path / "m.npz")
    other.load_weights(tmp_path / "m.npz", skip_mismatch=True)  # skips the mismatched layers
    np.testing.assert_array_equal(other.layers[2].kernel.numpy().shape, (5, 2))
    with pytest.raises(ValueError, match="has not been built"):
        models.Sequential([layers.Dense(2)]).save_weights(tmp_path / "x.npz")
