"""Metrics written the Keras way (``add_variable``/``add_weight``, an ``update_state`` that assigns to
them, a ``result`` that reads them, metrics held as attributes) in compile(metrics=[...]): per-epoch
resets, data-parallel shards, eager use, and Keras 3 parity."""

import numpy as np
import pytest

import flexflow_keras as ff

RNG = np.random.default_rng(3)
X = RNG.standard_normal((96, 6)).astype(np.float32)
IDS = (X[:, :3].sum(1) > 0).astype(np.int32) + (X[:, 3] > 0.5).astype(np.int32)
SW = RNG.uniform(0.2, 2.0, 96).astype(np.float32)


def true_positives_class(k):
    """keras.io's CategoricalTruePositives, in Keras 3's spelling, for the keras module `k`."""

    class CategoricalTruePositives(k.metrics.Metric):
        def __init__(self, name="categorical_true_positives", **kwargs):
            super().__init__(name=name, **kwargs)
            self.true_positives = self.add_variable(shape=(), name="ctp", initializer="zeros")

        def update_state(self, y_true, y_pred, sample_weight=None):
            y_pred = k.ops.reshape(k.ops.argmax(y_pred, axis=1), (-1, 1))
            values = k.ops.cast(y_true, "int32") == k.ops.cast(y_pred, "int32")
            values = k.ops.cast(values, "float32")
            if sample_weight is not None:
                values = k.ops.multiply(values, k.ops.reshape(k.ops.cast(sample_weight, "float32"), (-1, 1)))
            self.true_positives.assign_add(k.ops.sum(values))

        def result(self):
            return self.true_positives

    return CategoricalTruePositives


class Keras2TruePositives(ff.metrics.Metric):
    """The Keras 2 spelling: add_weight(name, initializer) and a reset_state that assigns."""

    def __init__(self, name="tp2", **kwargs):
        super().__init__(name=name, **kwargs)
        self.hits = self.add_weight(name="hits", initializer="zeros")
        self.seen = self.add_weight(name="seen", initializer="zeros")

    def update_state(self, y_true, y_pred, sample_weight=None):
        hit = ff.backend.cast(ff.backend.equal(ff.backend.argmax(y_pred, axis=-1),
                                               ff.backend.cast(ff.backend.flatten(y_true), "int64")), "float32")
        self.hits.assign_add(ff.backend.sum(hit))
        self.seen.assign_add(ff.backend.cast(ff.backend.shape(hit)[0], "float32"))

    def result(self):
        return self.hits / (self.seen + ff.backend.epsilon())

    def reset_state(self):
        self.hits.assign(0.0)
        self.seen.assign(0.0)


class F1FromHeld(ff.metrics.Metric):
    """A metric built from metrics it holds (a common F1 recipe)."""

    def __init__(self, name="f1", **kwargs):
        super().__init__(name=name, **kwargs)
        self.precision = ff.metrics.Precision()
        self.recall = ff.metrics.Recall()

    def update_state(self, y_true, y_pred, sample_weight=None):
        self.precision.update_state(y_true, y_pred, sample_weight)
        self.recall.update_state(y_true, y_pred, sample_weight)

    def result(self):
        p, r = self.precision.result(), self.recall.result()
        return 2 * p * r / (p + r + ff.backend.epsilon())


def _model(seed=0):
    ff.utils.set_random_seed(seed)
    model = ff.Sequential([ff.Input((6,)), ff.layers.Dense(8, activation="relu"),
                           ff.layers.Dense(3, activation="softmax")])
    return model


def _hits(model, sample_weight=None):
    pred = model.predict(X, batch_size=32, verbose=0).argmax(1)
    hit = (pred == IDS).astype(np.float64)
    return float(hit.sum() if sample_weight is None else (hit * sample_weight).sum())


@pytest.fixture(autouse=True)
def _fresh_config():
    ff.config.reset()
    yield
    ff.config.reset()


def test_a_keras3_metric_counts_each_epoch_from_zero():
    model = _model()
    model.compile(optimizer=ff.optimizers.SGD(0.0), loss="sparse_categorical_crossentropy",
                  metrics=[true_positives_class(ff)()])
    hist = model.fit(X, IDS[:, None], batch_size=32, epochs=2, verbose=0, shuffle=False)
    want = _hits(model)
    assert hist.history["categorical_true_positives"] == [want, want]  # reset at each epoch, not summed on
    got = model.evaluate(X, IDS[:, None], batch_size=32, verbose=0, return_dict=True)
    assert got["categorical_true_positives"] == want


def test_sample_weights_reach_a_weighted_custom_metric():
    model = _model()
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy",
                  weighted_metrics=[true_positives_class(ff)()])
    got = model.evaluate(X, IDS[:, None], sample_weight=SW, batch_size=32, verbose=0, return_dict=True)
    assert got["categorical_true_positives"] == pytest.approx(_hits(model, SW), rel=1e-5)


def test_keras2_spelling_and_its_reset_state_override():
    metric = Keras2TruePositives()
    model = _model()
    model.compile(optimizer=ff.optimizers.SGD(0.0), loss="sparse_categorical_crossentropy", metrics=[metric])
    hist = model.fit(X, IDS, batch_size=32, epochs=2, verbose=0)
    want = _hits(model) / len(X)
    assert hist.history["tp2"] == pytest.approx([want, want], rel=1e-5)
    assert [v.name for v in metric.variables] == ["hits", "seen"]


def test_a_metric_holding_metrics_combines_their_states():
    ff.utils.set_random_seed(1)
    model = ff.Sequential([ff.Input((6,)), ff.layers.Dense(1, activation="sigmoid")])
    y = (X[:, 0] > 0).astype(np.float32)[:, None]
    model.compile(optimizer="sgd", loss="binary_crossentropy", metrics=[F1FromHeld()])
    got = model.evaluate(X, y, batch_size=32, verbose=0, return_dict=True)
    pred = model.predict(X, verbose=0) > 0.5
    tp, fp, fn = (pred & (y > 0)).sum(), (pred & (y == 0)).sum(), (~pred & (y > 0)).sum()
    p, r = tp / (tp + fp), tp / (tp + fn)
    assert got["f1"] == pytest.approx(2 * p * r / (p + r), rel=1e-5)


def test_data_parallel_shards_add_up_to_the_whole_batch():
    ff.config.set(only_data_parallel=True, cpus=2, data_parallel_degree=2)
    model = _model()
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy", metrics=[true_positives_class(ff)()])
    got = model.evaluate(X, IDS[:, None], batch_size=32, verbose=0, return_dict=True)
    assert "[2, 1]" in model._engine.strategy.describe()  # the metric really ran on two pieces
    assert got["categorical_true_positives"] == _hits(model)


def test_eager_update_result_and_reset():
    metric = true_positives_class(ff)()
    probs = np.eye(3, dtype=np.float32)[[0, 1, 2, 2]]
    metric.update_state(np.array([[0], [1], [1], [2]]), probs)
    assert float(metric.result()) == 3.0
    metric.update_state(np.array([[0]]), probs[:1])
    assert float(metric(np.array([[0]]), probs[:1])) == 5.0  # __call__: update, then result
    metric.reset_state()
    assert float(metric.result()) == 0.0
    assert [v.shape for v in metric.variables] == [()]


def test_a_variable_created_in_update_state_is_named():
    class Lazy(ff.metrics.Metric):
        def update_state(self, y_true, y_pred, sample_weight=None):
            self.add_variable(shape=(), initializer="zeros", name="late")

        def result(self):
            return 0.0

    model = _model()
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy", metrics=[Lazy(name="lazy")])
    with pytest.raises(Exception, match="Metric .lazy. .*create every variable in __init__"):  # noqa: PT011
        model.evaluate(X, IDS, batch_size=32, verbose=0)


@pytest.mark.tf
def test_the_same_metric_class_matches_keras3():
    keras = pytest.importorskip("keras")
    pytest.importorskip("tensorflow")
    model = _model()
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy",
                  weighted_metrics=[true_positives_class(ff)()])
    ref = keras.Sequential([keras.Input((6,)), keras.layers.Dense(8, activation="relu"),
                            keras.layers.Dense(3, activation="softmax")])
    ref.set_weights(model.get_weights())
    ref.compile(optimizer="sgd", loss="sparse_categorical_crossentropy",
                weighted_metrics=[true_positives_class(keras)()])
    kw = dict(sample_weight=SW, batch_size=32, verbose=0, return_dict=True)
    got, want = model.evaluate(X, IDS[:, None], **kw), ref.evaluate(X, IDS[:, None], **kw)
    assert got["categorical_true_positives"] == pytest.approx(want["categorical_true_positives"], rel=1e-5)
    assert got["loss"] == pytest.approx(want["loss"], rel=1e-5)
