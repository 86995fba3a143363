"""Optimizer updates against tf.keras (Keras 3) on the same weights and gradients, several steps."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = tf.keras

from flexflow_keras import optimizers  # noqa: E402

pytestmark = pytest.mark.tf

CASES = [
    ("SGD", dict(learning_rate=0.05)),
    ("SGD", dict(learning_rate=0.05, momentum=0.9)),
    ("SGD", dict(learning_rate=0.05, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("Adam", dict()),
    ("Adam", dict(learning_rate=0.01, amsgrad=True)),
    ("Adam", dict(learning_rate=0.01, clipnorm=0.5)),
    ("Adam", dict(learning_rate=0.01, global_clipnorm=0.7)),
    ("Adam", dict(learning_rate=0.01, weight_decay=0.05, clipvalue=0.2)),
    ("AdamW", dict(learning_rate=0.01)),
    ("RMSprop", dict()),
    ("RMSprop", dict(learning_rate=0.01, momentum=0.5, centered=True)),
    ("Adagrad", dict(learning_rate=0.05)),
    ("Adam", dict(learning_rate=0.01, gradient_accumulation_steps=2)),
    ("SGD", dict(learning_rate=0.1, momentum=0.9, loss_scale_factor=4.0)),
    ("Lamb", dict(learning_rate=0.01)),
    ("Lamb", dict(learning_rate=0.01, weight_decay=0.05, clipnorm=0.5)),
    ("Adafactor", dict()),
    ("Adafactor", dict(learning_rate=0.05, clip_threshold=0.5, weight_decay=0.02, clipvalue=0.3)),
    ("Adafactor", dict(learning_rate=0.05, beta_2_decay=-0.5, epsilon_2=0.01, global_clipnorm=1.0)),
    ("ScheduleFreeAdamW", dict()),
    ("ScheduleFreeAdamW", dict(learning_rate=0.01, warmup_steps=3, weight_decay=0.01, clipvalue=0.5)),
]


def _run_tf(name, kwargs, w0, grads):
    opt = getattr(keras.optimizers, name)(**kwargs)
    vs = [tf.Variable(w) for w in w0]
    for step_grads in grads:
        opt.apply_gradients(zip([tf.constant(g) for g in step_grads], vs, strict=True))
    return [v.numpy() for v in vs]


def _run_ours(name, kwargs, w0, grads):
    opt = getattr(optimizers, name)(**kwargs)
    ws = [w.copy() for w in w0]
    slots = [[w.copy() if init is None else np.full(opt.slot_shape(name, w.shape), init, w.dtype)
              for name, init in opt.slot_specs(w.shape, w.dtype)] for w in ws]
    for step_grads in grads:  # as the training loop: `_iterations` counts its steps
        lr = opt.learning_rate_at(opt._iterations)
        opt.apply("cpu", opt._iterations, lr, ws, [g.copy() for g in step_grads], slots)
        opt._iterations += 1
    return ws


@pytest.mark.parametrize("name,kwargs", CASES, ids=[f"{n}-{sorted(k)}" for n, k in CASES])
def test_matches_tf_keras(name, kwargs):
    rng = np.random.default_rng(1)
    shapes = [(6, 4), (4,), (3, 3, 2)]
    w0 = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    grads = [[rng.standard_normal(s).astype(np.float32) * (0.1 if t % 2 else 2.0) for s in shapes]
             for t in range(6)]
    want = _run_tf(name, kwargs, w0, grads)
    got = _run_ours(name, kwargs, w0, grads)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-7)


def test_schedule_matches_tf_keras():
    sched_tf = keras.optimizers.schedules.ExponentialDecay(0.1, decay_steps=2, decay_rate=0.5)
    sched = optimizers.schedules.ExponentialDecay(0.1, decay_steps=2, decay_rate=0.5)
    rng = np.random.default_rng(2)
    w0 = [rng.standard_normal((5,)).astype(np.float32)]
    grads = [[rng.standard_normal((5,)).astype(np.float32)] for _ in range(5)]
    opt_tf = keras.optimizers.SGD(learning_rate=sched_tf, momentum=0.9)
    v = tf.Variable(w0[0])
    for g in grads:
        opt_tf.apply_gradients([(tf.constant(g[0]), v)])
    got = _run_ours("SGD", dict(learning_rate=sched, momentum=0.9), w0, grads)
    np.testing.assert_allclose(got[0], v.numpy(), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("make", [
    lambda m: m.ExponentialDecay(0.1, 3, 0.7, staircase=True),
    lambda m: m.PiecewiseConstantDecay([2, 5], [0.1, 0.05, 0.01]),
    lambda m: m.PolynomialDecay(0.1, 6, 0.001, power=2.0),
    lambda m: m.PolynomialDecay(0.1, 4, 0.001, cycle=True),
    lambda m: m.InverseTimeDecay(0.1, 2, 0.5),
    lambda m: m.CosineDecay(0.1, 6, alpha=0.1),
    lambda m: m.CosineDecay(0.0, 6, warmup_target=0.1, warmup_steps=3),
    lambda m: m.CosineDecayRestarts(0.1, 3, t_mul=2.0, m_mul=0.8, alpha=0.05),
])
def test_schedule_values_match_tf_keras(make):
    ours, theirs = make(optimizers.schedules), make(keras.optimizers.schedules)
    for step in range(12):
        assert ours(step) == pytest.approx(float(theirs(step)), rel=1e-6, abs=1e-9), step


@pytest.mark.parametrize("make", [
    lambda m: m.ExponentialDecay(0.1, 3, 0.7, staircase=True),
    lambda m: m.PiecewiseConstantDecay([2, 5], [0.1, 0.05, 0.01]),
    lambda m: m.PolynomialDecay(0.1, 4, 0.001, cycle=True),
    lambda m: m.InverseTimeDecay(0.001, 20, 1),
    lambda m: m.CosineDecay(0.1, 6, alpha=0.1),
    lambda m: m.CosineDecayRestarts(0.1, 3, t_mul=2.0, m_mul=0.8, alpha=0.05),
])
def test_schedule_on_an_array_of_steps_gives_a_float32_tensor_as_tf_keras(make):
    # TensorFlow's overfit tutorial plots ``lr_schedule(np.linspace(0, 100000))``
    steps = np.linspace(0, 11, 23).reshape(23, 1)
    ours, theirs = make(optimizers.schedules), make(keras.optimizers.schedules)
    got, want = ours(steps), np.asarray(theirs(steps))
    assert got.shape == want.shape == (23, 1)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("name", ["Lamb", "Adafactor"])
@pytest.mark.parametrize("degree", [1, 2])
def test_fit_with_whole_variable_optimizers_matches_tf_keras(name, degree, monkeypatch):
    # their updates read whole-variable norms and Adafactor's factored slots have shapes of their own: the
    # step updates each variable in one task, wherever its gradient was computed
    import sys

    import flexflow_keras as ff
    from flexflow_keras import config

    monkeypatch.setattr(sys, "argv", ["pytest"])
    config.reset()
    config.set(cpus=2, data_parallel_degree=degree)
    try:
        rng = np.random.default_rng(4)
        x = rng.standard_normal((64, 6, 6, 2)).astype("float32")
        y = rng.integers(0, 3, 64)

        def build(k):
            return k.Sequential([k.Input((6, 6, 2)), k.layers.Conv2D(4, 3, activation="relu"), k.layers.Flatten(),
                                 k.layers.Dense(3, activation="softmax")])

        theirs, ours = build(keras), build(ff)
        ours.set_weights(theirs.get_weights())
        theirs.compile(getattr(keras.optimizers, name)(learning_rate=0.02), "sparse_categorical_crossentropy")
        ours.compile(getattr(optimizers, name)(learning_rate=0.02), "sparse_categorical_crossentropy")
        ht = theirs.fit(x, y, batch_size=16, epochs=2, verbose=0, shuffle=False)
        hf = ours.fit(x, y, batch_size=16, epochs=2, verbose=0, shuffle=False)
        np.testing.assert_allclose(hf.history["loss"], ht.history["loss"], rtol=1e-5)
        for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=2e-6)
    finally:
        config.reset()


def test_schedule_free_fit_starts_z_at_the_weights_as_keras_apply_gradients_does(monkeypatch):
    # Keras 3.15's build copies each weight into z (as the reference implementation); its compiled fit loses
    # that copy (z starts at 0 and the first step resets every weight to about +-lr), its apply_gradients
    # keeps it. Ours trains from the copy in fit too: the same weights as a TensorFlow GradientTape loop.
    import sys

    import flexflow_keras as ff
    from flexflow_keras import config

    monkeypatch.setattr(sys, "argv", ["pytest"])
    config.reset()
    config.set(cpus=2, data_parallel_degree=2)
    try:
        rng = np.random.default_rng(4)
        x = rng.standard_normal((32, 5)).astype("float32")
        y = rng.standard_normal((32, 2)).astype("float32")
        theirs = keras.Sequential([keras.Input((5,)), keras.layers.Dense(4, activation="tanh"), keras.layers.Dense(2)])
        ours = ff.Sequential([ff.Input((5,)), ff.layers.Dense(4, activation="tanh"), ff.layers.Dense(2)])
        ours.set_weights(theirs.get_weights())
        t_opt = keras.optimizers.ScheduleFreeAdamW(learning_rate=0.02, warmup_steps=2)
        for _ in range(2):
            for k in range(0, 32, 8):
                with tf.GradientTape() as tape:
                    loss = tf.reduce_mean(tf.square(theirs(x[k:k + 8]) - y[k:k + 8]))
                grads = tape.gradient(loss, theirs.trainable_variables)
                t_opt.apply_gradients(zip(grads, theirs.trainable_variables, strict=True))
        ours.compile(optimizers.ScheduleFreeAdamW(learning_rate=0.02, warmup_steps=2), "mse")
        ours.fit(x, y, batch_size=8, epochs=2, verbose=0, shuffle=False)
        for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=2e-6)
    finally:
        config.reset()
