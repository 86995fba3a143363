"""A subclassed model's layers take `training` as Keras 3 resolves it (layers/node.py KerasTraining,
ops/recorded_mode.py): an explicit argument, else what the layer call before left in the call context,
else the default of the layer's call() signature. So in fit a call() without `training` runs its
BatchNormalization and Dropout in inference (Keras' train_step calls ``self(x)``), a sublayer given
``training=False`` (a frozen base model) turns training off for the layers called after it, and a layer
whose call() defaults to ``training=True`` (the augmentation layers) turns it on for those after it.
These trained their layers before (losses and moving statistics off tf.keras 3.15's)."""

import numpy as np
import pytest

import flexflow_keras as ff

keras = pytest.importorskip("keras")

X = np.random.RandomState(0).rand(16, 6).astype("float32")
Y = np.random.RandomState(1).rand(16, 1).astype("float32")


def _base(lib):
    i = lib.Input((6,))
    return lib.Model(i, lib.layers.BatchNormalization()(lib.layers.Dense(4)(i)))


def _models(lib):
    L = lib.layers

    class Marker(L.Layer):  # an augmentation layer's signature: training=True by default
        def call(self, x, training=True):
            return x

    class NoTraining(lib.Model):
        def __init__(self):
            super().__init__()
            self.d, self.bn, self.o = L.Dense(4), L.BatchNormalization(), L.Dense(1)

        def call(self, x):
            return self.o(self.bn(self.d(x)))

    class FrozenBase(lib.Model):
        def __init__(self):
            super().__init__()
            self.b, self.bn, self.o = _base(lib), L.BatchNormalization(), L.Dense(1)

        def call(self, x, training=None):
            return self.o(self.bn(self.b(x, training=False)))

    class MarkerFirst(lib.Model):
        def __init__(self):
            super().__init__()
            self.m, self.d, self.bn, self.o = Marker(), L.Dense(4), L.BatchNormalization(), L.Dense(1)

        def call(self, x):
            return self.o(self.bn(self.d(self.m(x))))

    class Passed(lib.Model):
        def __init__(self):
            super().__init__()
            self.d, self.bn, self.o = L.Dense(4), L.BatchNormalization(), L.Dense(1)

        def call(self, x, training=None):
            return self.o(self.bn(self.d(x), training=training))

    class NestedMarkerFirst(lib.Model):  # a Sequential whose first layer defaults to training=True
        def __init__(self):
            super().__init__()
            self.pre, self.bn, self.o = lib.Sequential([Marker(), L.Dense(4)]), L.BatchNormalization(), L.Dense(1)

        def call(self, x):
            return self.o(self.bn(self.pre(x)))

    return {"no_training": NoTraining, "frozen_base": FrozenBase, "marker_first": MarkerFirst, "passed": Passed,
            "nested_marker_first": NestedMarkerFirst, "marker": Marker}


def _fit(lib, kind, weights=None):
    model = _models(lib)[kind]()
    model(X[:2])
    if weights is not None:
        model.set_weights(weights)
    model.compile(lib.optimizers.SGD(0.1), "mse")
    losses = [float(np.asarray(model.train_on_batch(X, Y)).reshape(-1)[0]) for _ in range(2)]
    return model, losses


@pytest.mark.parametrize("kind", ["no_training", "frozen_base", "marker_first", "passed", "nested_marker_first"])
def test_fit_trains_the_layers_keras_trains(kind):
    start = _fit_start_weights(kind)
    ours, losses = _fit(ff, kind, start)
    theirs, want = _fit(keras, kind, start)
    np.testing.assert_allclose(losses, want, rtol=1e-5)
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def _fit_start_weights(kind):
    model = _models(ff)[kind]()
    model(X[:2])
    return [w.copy() for w in model.get_weights()]


def test_a_call_without_training_runs_dropout_in_inference_in_fit():
    L = ff.layers

    class WithDropout(ff.Model):
        def __init__(self):
            super().__init__()
            self.d, self.do, self.o = L.Dense(8), L.Dropout(0.5), L.Dense(1)

        def call(self, x):
            return self.o(self.do(self.d(x)))

    model = WithDropout()
    model.compile(ff.optimizers.SGD(0.0), "mse")
    before = model.evaluate(X, Y, verbose=0)
    np.testing.assert_allclose(float(np.asarray(model.train_on_batch(X, Y)).reshape(-1)[0]), before, rtol=1e-6)


@pytest.mark.parametrize("lib", [ff, keras], ids=["ours", "keras"])
def test_an_explicit_false_turns_training_off_for_the_eager_calls_after_it(lib):
    L = lib.layers

    class TwoDropouts(lib.Model):
        def __init__(self, first_off):
            super().__init__()
            self.a, self.b, self.first_off = L.Dropout(0.5), L.Dropout(0.5), first_off

        def call(self, x, training=None):
            return self.b(self.a(x, training=False) if self.first_off else self.a(x))

    ones = np.ones((4, 64), "float32")
    assert not np.all(np.asarray(TwoDropouts(False)(ones, training=True)) == 1)
    assert np.all(np.asarray(TwoDropouts(True)(ones, training=True)) == 1)


@pytest.mark.parametrize("lib", [ff, keras], ids=["ours", "keras"])
def test_an_eager_sequential_call_lets_each_layer_take_its_default(lib):
    """``augment(images)`` on a Sequential of augmentation layers augments in Keras 3 (each layer's call()
    defaults to training=True), and the layers after such a layer train: here a BatchNormalization then
    normalises with the batch's statistics and moves its averages. Ours ran the whole graph in inference."""
    L = lib.layers
    x = X * 10.0
    after = lib.Sequential([_models(lib)["marker"](), L.BatchNormalization()])
    out = np.asarray(after(x))
    np.testing.assert_allclose(out, (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-3), rtol=1e-4, atol=1e-4)
    assert np.abs(np.asarray(after.layers[1].moving_mean)).sum() > 0
    alone = lib.Sequential([L.BatchNormalization()])
    np.testing.assert_allclose(np.asarray(alone(x)), x / np.sqrt(1 + 1e-3), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(after(x, training=False)), (x - np.asarray(after.layers[1].moving_mean)) /
                               np.sqrt(np.asarray(after.layers[1].moving_variance) + 1e-3), rtol=1e-4, atol=1e-4)
