"""Keras 3's ``compute_metrics`` override: it runs on each shard's NumPy batch, ``super()`` updates the
compiled metrics, metrics held by the model are logged and reset with them, shards add up, and the same
subclass gives Keras 3's logs."""

import numpy as np
import pytest

import flexflow_keras as ff

RNG = np.random.default_rng(5)
X = RNG.standard_normal((64, 4)).astype(np.float32)
Y = (X[:, 0] + 0.3 * X[:, 1] > 0).astype(np.float32)[:, None]


def model_class(k, flip=False):
    """A Sequential whose compute_metrics also tracks the mean prediction and the mean of x[:, 0]."""

    class Tracked(k.Sequential):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.pred_mean = k.metrics.Mean(name="pred_mean")
            self.x_mean = k.metrics.Mean(name="x_mean")

        def compute_metrics(self, x, y, y_pred, sample_weight=None):
            results = super().compute_metrics(x, y, 1.0 - y_pred if flip else y_pred, sample_weight)
            self.pred_mean.update_state(y_pred)
            self.x_mean.update_state(x[:, 0])
            results["pred_mean"] = self.pred_mean.result()
            results["x_mean"] = self.x_mean.result()
            return results

    return Tracked


def _build(k, flip=False, seed=0):
    if hasattr(k, "utils"):
        k.utils.set_random_seed(seed)
    return model_class(k, flip)([k.Input((4,)), k.layers.Dense(1, activation="sigmoid")])


@pytest.fixture(autouse=True)
def _fresh_config():
    ff.config.reset()
    yield
    ff.config.reset()


def _reference(model, flip=False):
    p = model.predict(X, verbose=0)
    acc = float((((1 - p) if flip else p) > 0.5).astype(np.float32).__eq__(Y).mean())
    return acc, float(p.mean()), float(X[:, 0].mean())


@pytest.mark.parametrize("flip", [False, True])
def test_the_override_updates_compiled_and_held_metrics(flip):
    model = _build(ff, flip)
    model.compile(optimizer=ff.optimizers.SGD(0.0), loss="binary_crossentropy", metrics=["accuracy"])
    hist = model.fit(X, Y, batch_size=16, epochs=2, verbose=0, shuffle=False)
    acc, pm, xm = _reference(model, flip)
    for key, want in (("accuracy", acc), ("pred_mean", pm), ("x_mean", xm)):
        assert hist.history[key] == pytest.approx([want, want], rel=1e-5), key  # reset at each epoch
    got = model.evaluate(X, Y, batch_size=16, verbose=0, return_dict=True)
    assert got["accuracy"] == pytest.approx(acc) and got["pred_mean"] == pytest.approx(pm, rel=1e-5)
    assert got["loss"] == pytest.approx(hist.history["loss"][-1], rel=1e-5)


def test_data_parallel_shards_add_up():
    ff.config.set(only_data_parallel=True, cpus=2, data_parallel_degree=2)
    model = _build(ff)
    model.compile(optimizer="sgd", loss="binary_crossentropy", metrics=["accuracy"])
    got = model.evaluate(X, Y, batch_size=32, verbose=0, return_dict=True)
    assert "[2, 1]" in model._engine.strategy.describe()
    acc, pm, xm = _reference(model)
    assert (got["accuracy"], got["pred_mean"], got["x_mean"]) == pytest.approx((acc, pm, xm), rel=1e-5)


def test_keras2_compiled_metrics_update_inside_the_override():
    class Keras2Style(ff.Sequential):
        def compute_metrics(self, x, y, y_pred, sample_weight):
            self.compiled_metrics.update_state(y, y_pred, sample_weight)
            return super().compute_metrics(x, y, y_pred, sample_weight)

    ff.utils.set_random_seed(0)
    model = Keras2Style([ff.Input((4,)), ff.layers.Dense(1, activation="sigmoid")])
    model.compile(optimizer="sgd", loss="binary_crossentropy", metrics=["accuracy"])
    got = model.evaluate(X, Y, batch_size=16, verbose=0, return_dict=True)
    assert got["accuracy"] == pytest.approx(_reference(model)[0])  # updated twice with the same values


@pytest.mark.tf
def test_the_same_subclass_matches_keras3():
    keras = pytest.importorskip("keras")
    pytest.importorskip("tensorflow")
    model = _build(ff)
    model.compile(optimizer=ff.optimizers.SGD(0.1), loss="binary_crossentropy", metrics=["accuracy"])
    ref = _build(keras)
    ref.set_weights(model.get_weights())
    ref.compile(optimizer=keras.optimizers.SGD(0.1), loss="binary_crossentropy", metrics=["accuracy"])
    kw = dict(batch_size=16, epochs=2, verbose=0, shuffle=False)
    got, want = model.fit(X, Y, **kw).history, ref.fit(X, Y, **kw).history
    for key in ("loss", "accuracy", "pred_mean", "x_mean"):
        assert got[key] == pytest.approx(want[key], rel=1e-4, abs=1e-6), key


def test_metrics_and_metrics_names_follow_the_logs():
    model = _build(ff)
    model.compile(optimizer="sgd", loss="binary_crossentropy", metrics=["accuracy"])
    assert model.metrics_names == []  # Keras 2: empty until the first fit or evaluate
    values = model.evaluate(X, Y, batch_size=16, verbose=0)
    logs = model.evaluate(X, Y, batch_size=16, verbose=0, return_dict=True)
    assert model.metrics_names == ["loss", "accuracy", "pred_mean", "x_mean"]
    assert list(logs) == sorted(model.metrics_names)  # Keras 3 returns its logs sorted by name
    assert dict(zip(model.metrics_names, values, strict=True)) == pytest.approx(logs)
    assert [m.name for m in model.metrics] == ["loss", "accuracy", "pred_mean", "x_mean"]  # the tracker first
    model.metrics = [model.pred_mean]  # a script may set the list itself
    assert model.metrics == [model.pred_mean]


def penalized_class(k):
    class Penalized(k.Sequential):
        def compute_metrics(self, x, y, y_pred, sample_weight=None):
            metrics = super().compute_metrics(x, y, y_pred, sample_weight)
            metrics["loss"] += 0.5
            metrics["penalty"] = 0.5
            return metrics

    return Penalized


def test_what_the_override_returns_reaches_the_logs():
    ff.utils.set_random_seed(0)
    model = penalized_class(ff)([ff.Input((4,)), ff.layers.Dense(1, activation="sigmoid")])
    model.compile(optimizer="sgd", loss="binary_crossentropy", metrics=["accuracy"])
    got = model.evaluate(X, Y, batch_size=16, verbose=0, return_dict=True)
    p = model.predict(X, verbose=0).astype(np.float64)
    bce = float(np.mean(-(Y * np.log(p) + (1 - Y) * np.log(1 - p))))
    assert got["loss"] == pytest.approx(bce + 0.5, rel=1e-5) and got["penalty"] == 0.5
    assert got["accuracy"] == pytest.approx(_reference(model)[0])


@pytest.mark.tf
def test_the_returned_dict_matches_keras3():
    keras = pytest.importorskip("keras")
    pytest.importorskip("tensorflow")
    ff.utils.set_random_seed(0)
    model = penalized_class(ff)([ff.Input((4,)), ff.layers.Dense(1, activation="sigmoid")])
    ref = penalized_class(keras)([keras.Input((4,)), keras.layers.Dense(1, activation="sigmoid")])
    ref.set_weights(model.get_weights())
    for m, opt in ((model, ff.optimizers.SGD(0.1)), (ref, keras.optimizers.SGD(0.1))):
        m.compile(optimizer=opt, loss="binary_crossentropy", metrics=["accuracy"])
    kw = dict(batch_size=16, epochs=2, verbose=0, shuffle=False)
    got, want = model.fit(X, Y, **kw).history, ref.fit(X, Y, **kw).history
    for key in ("loss", "accuracy", "penalty"):
        assert got[key] == pytest.approx(want[key], rel=1e-4, abs=1e-6), key
