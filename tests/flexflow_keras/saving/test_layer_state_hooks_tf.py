"""Keras 3's per-layer saving hooks in a ``.keras`` file: ``save_own_variables(store)`` /
``load_own_variables(store)`` (Layer has the defaults, an override decides what its entry holds) and
``save_assets(dir)`` / ``load_assets(dir)`` (files under ``assets/<layer path>/``). keras.io's "customizing
saving" guide keeps an extra variable through them and a vocabulary file: flexflow_keras never called the
overrides, so the restored variable was a fresh random one and the vocabulary was never read. Files move
between flexflow_keras and tf.keras 3.15 both ways."""

import os

import numpy as np
import pytest

keras_ref = pytest.importorskip("keras")
pytest.importorskip("tensorflow")

import flexflow_keras as ff  # noqa: E402

pytestmark = pytest.mark.tf
X = np.random.default_rng(0).random((6, 5)).astype("float32")


def _classes(lib):
    class WithState(lib.layers.Dense):
        def __init__(self, units, **kwargs):
            super().__init__(units, **kwargs)
            self.extra = np.random.default_rng(1).random(3).astype("float32")

        def save_own_variables(self, store):
            super().save_own_variables(store)
            store["extra"] = self.extra

        def load_own_variables(self, store):
            self.extra = np.asarray(store["extra"])
            for i, v in enumerate(self.weights):
                v.assign(store[f"{i}"])

    class WithAssets(lib.layers.Dense):
        def __init__(self, vocab=None, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.vocab = vocab

        def save_assets(self, inner_path):
            with open(os.path.join(inner_path, "vocabulary.txt"), "w") as f:
                f.write(self.vocab)

        def load_assets(self, inner_path):
            with open(os.path.join(inner_path, "vocabulary.txt")) as f:
                self.vocab = f.read().replace("<unk>", "little")

    return {"WithState": WithState, "WithAssets": WithAssets}


def _save(lib, path):
    c = _classes(lib)
    m = lib.Sequential([lib.Input((5,)), c["WithState"](2, name="state"), c["WithAssets"](
        vocab="Mary had a <unk> lamb.", units=3, name="assets")])
    m.set_weights([np.full(w.shape, 0.1 * (i + 1), "float32") for i, w in enumerate(m.get_weights())])
    m.layers[0].extra = np.array([7.0, 8.0, 9.0], "float32")
    m.save(path)
    return np.asarray(m(X))


def _load(lib, path):
    m = lib.models.load_model(path, custom_objects=_classes(lib))
    return m, np.asarray(m(X))


@pytest.mark.parametrize("writer,reader", [(ff, ff), (keras_ref, ff), (ff, keras_ref)],
                         ids=["ff-ff", "tf-ff", "ff-tf"])
def test_own_variables_and_assets_round_trip(tmp_path, writer, reader):
    path = str(tmp_path / "m.keras")
    want = _save(writer, path)
    m, got = _load(reader, path)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(m.layers[0].extra), [7.0, 8.0, 9.0])
    assert m.layers[1].vocab == "Mary had a little lamb."


def test_the_default_hooks_store_the_weights_as_tf_keras():
    for lib in (ff, keras_ref):
        layer = lib.layers.BatchNormalization()
        layer.build((None, 3))
        layer.set_weights([np.arange(3, dtype="float32") + k for k in range(4)])
        store = {}
        layer.save_own_variables(store)
        assert sorted(store) == ["0", "1", "2", "3"]
        np.testing.assert_array_equal(np.asarray(store["2"]), np.arange(3) + 2)  # moving_mean, after gamma/beta
        other = lib.layers.BatchNormalization()
        other.build((None, 3))
        other.load_own_variables(store)
        for a, b in zip(other.get_weights(), layer.get_weights(), strict=True):
            np.testing.assert_array_equal(a, b)
        with pytest.raises(ValueError):
            other.load_own_variables({"0": store["0"]})
