"""keras.ops' branches, loops and scans in a model's graph (ops/control_flow.py, ops/control_scan.py): a
layer's call() using them, inside a functional model, predicts and trains one SGD step as Keras 3 on
TensorFlow does from the same weights, unsplit and split along the batch (data-parallel degree 1 and 2)."""

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras import config
from flexflow_keras.ops.control_flow import ControlFlowError


def _block(k, kind):
    """A layer of Keras module `k` (ours or Keras 3's) whose call() runs `kind` with a scalar weight s."""
    ops = k.ops

    class Block(k.layers.Layer):
        def build(self, input_shape):
            self.s = self.add_weight(shape=(), initializer="zeros", name="s")

        def call(self, x):  # x: (batch, 4, 3)
            s = self.s
            if kind == "cond":  # a symbolic predicate: both computed, one selected
                return ops.cond(ops.greater(s, 0.0), lambda: ops.tanh(x * s), lambda: x - s * s)
            if kind == "cond_host":  # a Python predicate: one branch only
                return ops.cond(True, lambda: x * s, lambda: ops.log(x))
            if kind == "switch":
                index = ops.cast(ops.floor(s * 2.0), "int32")
                branches = [lambda v: v * s, lambda v: ops.sin(v) + s, lambda v: v - s * 3.0]
                return ops.switch(index, branches, x)
            if kind == "while":  # a symbolic condition, bounded by maximum_iterations
                _, out = ops.while_loop(lambda i, v: i * s < 2.5, lambda i, v: (i + 1.0, ops.tanh(v * 1.5 + s)),
                                        (0.0, x), maximum_iterations=6)
                return out
            if kind == "while_host":
                _, out = ops.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, ops.tanh(v + s)), (0, x))
                return out
            if kind == "fori":
                return ops.fori_loop(0, 3, lambda i, v: ops.tanh(v * s + ops.cast(i, "float32")), x)
            ts = ops.transpose(x, (1, 0, 2))  # time steps first: (4, batch, 3)
            if kind == "scan":
                def step(c, xt):
                    c = ops.tanh(c * s + xt)
                    return c, c
                last, ys = ops.scan(step, x[:, 0] * 0.0, ts, reverse=False)
                return ops.transpose(ys, (1, 0, 2)) + last[:, None, :]
            if kind == "scan_reverse":
                last, ys = ops.scan(lambda c, xt: (c * s + xt, c * s + xt), x[:, 0] * 0.0, ts, reverse=True)
                return ops.transpose(ys, (1, 0, 2)) * last[:, None, :]
            if kind == "map":
                return ops.transpose(ops.map(lambda r: ops.sin(r * s), ts), (1, 0, 2))
            if kind == "vectorized_map":
                return ops.transpose(ops.vectorized_map(lambda r: r * s + 1.0, ts), (1, 0, 2))
            if kind == "associative_scan":  # length 3: Keras' TensorFlow graph fails on longer ones (next test)
                return ops.associative_scan(lambda a, b: a * s + b, x, axis=-1)
            if kind == "associative_scan_reverse":
                a, b = ops.associative_scan(lambda p, q: (p[0] + q[0], p[1] * q[1]), (x, ops.sigmoid(x) + s),
                                            reverse=True, axis=2)
                return a * b
            raise AssertionError(kind)

    return Block()


KINDS = ["cond", "cond_host", "switch", "while", "while_host", "fori", "scan", "scan_reverse", "map",
         "vectorized_map", "associative_scan", "associative_scan_reverse"]


def _model(k, kind):
    inp = k.Input((4, 3))
    h = k.layers.Dense(3, name="d1")(inp)
    h = _block(k, kind)(h)
    return k.Model(inp, k.layers.Dense(2, name="d2")(k.layers.Flatten()(h)))


@pytest.fixture(autouse=True)
def _reset(request):
    request.addfinalizer(config.reset)


@pytest.mark.parametrize("s", [0.7, -0.4])
@pytest.mark.parametrize("kind", KINDS)
def test_block_predicts_and_trains_as_keras_on_tensorflow(kind, s):
    tf = pytest.importorskip("tensorflow")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 4, 3)).astype("float32")
    y = rng.standard_normal((8, 2)).astype("float32")
    theirs = _model(tf.keras, kind)
    weights = [w * 0.5 for w in theirs.get_weights()]
    weights[2] = np.float32(s)  # the block's scalar (d1 kernel, d1 bias, s, d2 kernel, d2 bias)
    theirs.set_weights(weights)
    want = theirs.predict(x, verbose=0)
    theirs.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss="mse")
    theirs.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    want_w = theirs.get_weights()
    for degree in (1, 2):
        config.set(cpus=2, data_parallel_degree=degree)
        ours = _model(keras, kind)
        ours.set_weights(weights)
        np.testing.assert_allclose(ours.predict(x, verbose=0), want, rtol=1e-5, atol=1e-6, err_msg=f"{degree}")
        ours.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
        ours.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
        for got, w, name in zip(ours.get_weights(), want_w, ["d1k", "d1b", "s", "d2k", "d2b"], strict=True):
            np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-6, err_msg=f"{name} at degree {degree}")
        config.reset()


def test_host_predicate_builds_only_the_branch_taken():
    inp = keras.Input((3,))
    called = []
    out = keras.ops.cond(False, lambda: called.append("true") or inp, lambda: inp * 2.0)
    assert called == [] and out.shape == (None, 3)
    out = keras.ops.switch(7, [lambda v: called.append(0) or v, lambda v: v + 1.0], inp)  # clamped to 1
    assert called == [] and out.shape == (None, 3)


def test_graph_loops_and_branches_that_cannot_be_built_say_why():
    x = keras.Input((4, 3))
    s = keras.ops.mean(x) > 0
    cases = [
        (lambda: keras.ops.while_loop(lambda v: keras.ops.sum(v) < 1.0, lambda v: v * 2.0, x), "maximum_iterations"),
        (lambda: keras.ops.while_loop(lambda i: i < 5000, lambda i: i + 1 + x[:, 0, 0] * 0, 0), "at most 1000"),
        (lambda: keras.ops.fori_loop(0, 1001, lambda i, v: v, x), "1001 iterations"),
        (lambda: keras.ops.fori_loop(0, keras.ops.shape(x)[0], lambda i, v: v, x), "must be known when the model"),
        (lambda: keras.ops.scan(lambda c, r: (c, r), 0.0, x), "batch dim"),
        (lambda: keras.ops.map(lambda r: r, x), "batch dim"),
        (lambda: keras.ops.vectorized_map(lambda r: r, x), "call it on the batch directly"),
        (lambda: keras.ops.associative_scan(lambda a, b: a + b, x), "batch dim"),
        (lambda: keras.ops.cond(s, lambda: x, lambda: x[:, 0]), r"shape \(None, 4, 3\) float32 and false_fn"),
        (lambda: keras.ops.cond(s, lambda: (x, x), lambda: [x, x]), "same structure"),
        (lambda: keras.ops.cond(s, lambda: x, lambda: keras.ops.cast(x, "int32")), "int32"),
        (lambda: keras.ops.cond(x[:, 0, 0] > 0, lambda: x, lambda: x), "keras.ops.where"),
        (lambda: keras.ops.switch(keras.ops.cast(x[:, 0, 0], "int32"), [lambda: x], ), "scalar index"),
    ]
    for build, match in cases:
        with pytest.raises(ControlFlowError, match=match):
            build()


def test_a_scan_over_time_of_a_transposed_input_gives_its_rows():
    x = keras.Input((4, 3))
    rows = keras.ops.map(lambda r: r * 1.0, keras.ops.transpose(x, (1, 0, 2)))
    out = keras.ops.transpose(rows, (1, 0, 2))
    model = keras.Model(x, out)
    xv = np.arange(24, dtype="float32").reshape(2, 4, 3)
    np.testing.assert_array_equal(model.predict(xv, verbose=0), xv)


@pytest.mark.parametrize("degree", [1, 2])
def test_a_long_associative_scan_in_a_model_is_the_cumulative_sum(degree):
    """Lengths past 3 take the recursion (pairs combined, odd elements scanned, interleaved), which Keras 3's
    TensorFlow backend cannot trace with a batch dim (unknown shapes): checked against TensorFlow eagerly and
    trained against ops.cumsum."""
    tf = pytest.importorskip("tensorflow")
    config.set(cpus=2, data_parallel_degree=degree)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((8, 7, 2)).astype("float32")
    y = rng.standard_normal((8, 2)).astype("float32")

    def model(scan):
        inp = keras.Input((7, 2))
        h = keras.layers.Dense(2, name="d1")(inp)
        h = keras.layers.Lambda(scan)(h)
        return keras.Model(inp, keras.layers.Dense(2, name="d2")(keras.layers.Flatten()(h)))

    ours = model(lambda h: keras.ops.associative_scan(lambda a, b: a + b, h, axis=1))
    ref = model(lambda h: keras.ops.cumsum(h, axis=1))
    ref.set_weights(ours.get_weights())
    hidden = keras.Model(ours.inputs, ours.layers[2].output).predict(x, verbose=0)
    d1 = x @ ours.get_weights()[0] + ours.get_weights()[1]
    want = tf.keras.ops.associative_scan(lambda a, b: a + b, d1, axis=1).numpy()
    np.testing.assert_allclose(hidden, want, rtol=1e-6, atol=1e-6)
    for m in (ours, ref):
        m.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
        m.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    for a, b in zip(ours.get_weights(), ref.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_a_choice_made_in_the_graph_warns_that_every_branch_is_computed(monkeypatch, caplog):
    """A symbolic predicate builds both branches: the log says how a branch that is not finite in its
    backward pass where it is not taken (sqrt at 0) would poison the gradient, once per function."""
    import logging

    from flexflow_keras.ops import control_flow

    monkeypatch.setattr(control_flow, "_WARNED", set())
    i = keras.Input((4,))
    with caplog.at_level(logging.WARNING, logger="flexflow_keras"):
        out = keras.ops.cond(keras.ops.mean(i) > 0.0, lambda: keras.ops.sqrt(keras.ops.relu(i)), lambda: i * 2.0)
        keras.ops.cond(keras.ops.mean(i) > 1.0, lambda: i, lambda: i * 3.0)
        keras.ops.switch(keras.ops.cast(keras.ops.mean(i), "int32"), [lambda: i, lambda: i + 1.0])
    assert tuple(out.shape) == (None, 4)
    assert caplog.text.count("keras.ops.cond with a predicate or index computed in the model") == 1
    assert caplog.text.count("keras.ops.switch with a predicate or index computed in the model") == 1
    assert "sqrt, log or a division at 0" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="flexflow_keras"):
        keras.ops.cond(True, lambda: i, lambda: i * 2.0)  # chosen on the host: one branch, no warning
    assert "every branch is computed" not in caplog.text
