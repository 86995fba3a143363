"""Keras 3 lists a layer's Metric attributes and its sublayers' (recursively) in ``Layer.metrics``, and
``Model.metrics`` adds those of every layer under the model (a nested model's compiled ones not, its layers'
yes, a metric two levels down twice); fit and evaluate reset all of them at the start of each epoch.
keras.io's forward-forward example keeps a loss Mean in each layer and logs its result from train_step: ours
had no Layer.metrics and never reset them, so its logged loss drifted from tf.keras' from epoch 2 on.
Compared with tf.keras 3.15."""

import numpy as np
import pytest

import flexflow_keras as ff

tf = pytest.importorskip("tensorflow")
X = np.linspace(-1, 1, 32, dtype="float32").reshape(8, 4)
Y = np.linspace(0, 1, 8, dtype="float32").reshape(8, 1)


def _layers(lib):
    class Inner(lib.layers.Layer):
        def __init__(self, **kw):
            super().__init__(**kw)
            self.m_inner = lib.metrics.Mean(name="m_inner")

        def call(self, x):
            return x

    class Outer(lib.layers.Layer):
        def __init__(self, **kw):
            super().__init__(**kw)
            self.m_outer = lib.metrics.Mean(name="m_outer")
            self.inner = Inner()
            self.dense = lib.layers.Dense(1)
            self.pair = [lib.metrics.Sum(name="m_list")]

        def call(self, x):
            return self.dense(self.inner(x))

    return Inner, Outer


def _names(ms):
    return [m.name for m in ms if m.name.startswith("m_")]


def _nested(lib):
    _, Outer = _layers(lib)

    class Net(lib.Model):
        def __init__(self):
            super().__init__()
            self.m_model = lib.metrics.Mean(name="m_model")
            self.outer = Outer()
            a = lib.Input((4,))
            sub = lib.Model(a, Outer()(a))
            sub.compile("sgd", "mse", metrics=[lib.metrics.MeanAbsoluteError(name="m_sub_compiled")])
            self.sub = sub

        def call(self, x):
            return self.outer(x) + self.sub(x)

    return Net()


def test_layer_and_model_metrics_list_as_tf_keras():
    for lib in (ff, tf.keras):
        _, Outer = _layers(lib)
        layer = Outer()
        assert _names(layer.metrics) == ["m_outer", "m_list", "m_inner"], lib
    ours, theirs = _nested(ff), _nested(tf.keras)
    for m in (ours, theirs):
        m(X)
        m.compile("sgd", "mse")
    assert _names(ours.metrics) == _names(theirs.metrics)
    assert "m_sub_compiled" not in _names(ours.metrics)


def _eager(lib):
    class Counting(lib.layers.Layer):
        def __init__(self, **kw):
            super().__init__(**kw)
            self.dense = lib.layers.Dense(1)
            self.seen = lib.metrics.Sum(name="seen")

        def call(self, x):
            return self.dense(x)

    class Net(lib.Model):
        def __init__(self):
            super().__init__()
            self.block = Counting()

        def call(self, x):
            return self.block(x)

        def train_step(self, data):
            x, y = data
            self.block.seen.update_state(lib.ops.mean(y) + lib.ops.mean(x))
            return {"seen": self.block.seen.result()}

    return Net()


def test_eager_fit_resets_the_layers_metrics_each_epoch():
    hist = []
    for lib in (ff, tf.keras):
        model = _eager(lib)
        model(X[:1])
        model.compile("sgd", "mse")
        hist.append(model.fit(X, Y, batch_size=2, epochs=3, shuffle=False, verbose=0).history["seen"])
    np.testing.assert_allclose(hist[0], hist[1], rtol=1e-6)
    assert hist[0][0] == pytest.approx(hist[0][2])  # the same batches each epoch: the same sum


def _graph(lib):
    _, Outer = _layers(lib)
    a = lib.Input((4,))
    layer = Outer()
    model = lib.Model(a, layer(a))
    model.compile("sgd", "mse")
    return model, layer


def _run_graph(lib):
    model, layer = _graph(lib)
    seen = []

    class Count(lib.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            layer.m_outer.update_state(float(batch + 1))
            layer.pair[0].update_state(1.0)

        def on_epoch_end(self, epoch, logs=None):
            seen.append((float(layer.m_outer.result()), float(layer.pair[0].result())))

    model.fit(X, Y, batch_size=4, epochs=2, shuffle=False, verbose=0, callbacks=[Count()])
    layer.m_outer.update_state(100.0)
    model.evaluate(X, Y, verbose=0)
    seen.append(float(layer.m_outer.result()))
    return seen


def test_graph_fit_and_evaluate_reset_them_too():
    ours = _run_graph(ff)
    assert ours == _run_graph(tf.keras)
    assert ours == [(1.5, 2.0), (1.5, 2.0), 0.0]
