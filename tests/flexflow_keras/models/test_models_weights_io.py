"""save_weights / load_weights without TensorFlow: .weights.h5 and .npz round trips and clear errors."""

import numpy as np
import pytest

import flexflow_keras as keras
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


def test_recurrent_weights_live_on_the_cell_and_old_files_still_load(tmp_path):
    """Keras 3 keeps an LSTM's weights at <layer>/cell/vars; files flexflow_keras wrote before with them at
    <layer>/vars still load."""
    import h5py

    def build():
        return keras.Sequential([keras.Input((5, 3)), keras.layers.LSTM(4), keras.layers.Dense(1)])

    m = build()
    x = np.ones((2, 5, 3), np.float32)
    m.save_weights(tmp_path / "new.weights.h5")
    with h5py.File(tmp_path / "new.weights.h5", "r") as f:
        assert f["layers/lstm/cell/vars"].attrs["name"] == "lstm_cell" and len(f["layers/lstm/cell/vars"]) == 3
        assert len(f["layers/lstm/vars"]) == 0
        with h5py.File(tmp_path / "old.weights.h5", "w") as old:  # the earlier layout
            for name, group in (("layers/lstm/vars", f["layers/lstm/cell/vars"]), ("layers/dense/vars",
                                                                                  f["layers/dense/vars"])):
                for i in range(len(group)):
                    old.create_dataset(f"{name}/{i}", data=group[str(i)][()])
            old.create_group("vars")
    for name in ("new", "old"):
        fresh = build()
        fresh.load_weights(tmp_path / f"{name}.weights.h5")
        np.testing.assert_array_equal(fresh.predict(x, verbose=0), m.predict(x, verbose=0))
