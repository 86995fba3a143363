"""steps_per_epoch=0, validation_steps=0 and evaluate's / predict's steps=0 mean a whole pass in tf.keras 3.15
(its EpochIterator runs ``steps or the data's batches``). ZTM's TensorFlow course notebook 05 validates with
``validation_steps=int(0.25 * len(test_data))``, 0 for a test set of at most 3 batches: ours then skipped
validation (no val_loss, so its plot_loss_curves stopped with a KeyError), trained no step for
steps_per_epoch=0, and evaluate gave [] and predict refused the data."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
tk = pytest.importorskip("keras")

import flexflow_keras as ff  # noqa: E402

pytestmark = pytest.mark.tf
X = np.random.default_rng(0).random((40, 3), dtype=np.float32)
Y = X.sum(1, keepdims=True)


def _model(K):
    model = K.Sequential([K.Input((3,)), K.layers.Dense(1)])
    model.compile(K.optimizers.SGD(0.05), "mse")
    model.set_weights([np.full((3, 1), 0.1, np.float32), np.zeros(1, np.float32)])
    return model


def _run(K, data):
    """fit (validation_steps=0; a dataset also steps_per_epoch=0), evaluate(steps=0) and predict(steps=0)."""
    out = {}
    model = _model(K)
    if data is None:  # arrays
        h = model.fit(X, Y, batch_size=8, epochs=2, verbose=0, shuffle=False, validation_data=(X[:16], Y[:16]),
                      validation_steps=0)
        ev, pred = model.evaluate(X, Y, batch_size=8, steps=0, verbose=0), model.predict(X, steps=0, verbose=0)
    else:
        h = model.fit(data(X, Y), epochs=2, verbose=0, shuffle=False, steps_per_epoch=0,
                      validation_data=data(X[:16], Y[:16]),
                      validation_steps=0)
        ev, pred = model.evaluate(data(X, Y), steps=0, verbose=0), model.predict(data(X, None), steps=0, verbose=0)
    out["history"] = {k: np.asarray(v, np.float64) for k, v in h.history.items()}
    out["evaluate"], out["predict"] = np.asarray(ev, np.float64), np.asarray(pred, np.float64)
    return out


def _tf_dataset(x, y):
    return tf.data.Dataset.from_tensor_slices((x, y) if y is not None else x).batch(8)


def _ff_dataset(x, y):
    return _Batched(x, y)


class _Batched(ff.utils.PyDataset):
    def __init__(self, x, y):
        super().__init__()
        self.x, self.y = x, y

    def __len__(self):
        return len(self.x) // 8

    def __getitem__(self, i):
        s = slice(8 * i, 8 * (i + 1))
        return (self.x[s], self.y[s]) if self.y is not None else (self.x[s],)


@pytest.mark.parametrize("kind", ["arrays", "dataset"])
def test_zero_steps_are_a_whole_pass_as_tf_keras(kind):
    if kind == "arrays":
        want, got = _run(tk, None), _run(ff, None)
    else:
        want, got = _run(tk, _tf_dataset), _run(ff, _ff_dataset)
    assert sorted(got["history"]) == sorted(want["history"]) == ["loss", "val_loss"]
    for key in ("loss", "val_loss"):
        np.testing.assert_allclose(got["history"][key], want["history"][key], rtol=1e-5)
    np.testing.assert_allclose(got["evaluate"], want["evaluate"], rtol=1e-5)
    assert got["predict"].shape == want["predict"].shape == (40, 1)
    np.testing.assert_allclose(got["predict"], want["predict"], rtol=1e-5)
