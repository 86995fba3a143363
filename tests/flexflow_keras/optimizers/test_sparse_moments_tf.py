"""Embedding tables' sparse gradients as Keras 3's TensorFlow backend updates them (per-lookup moments).

TensorFlow hands an embedding table's gradient to the optimizer as `IndexedSlices`, one row per lookup;
the optimizers square (Adamax: take the absolute value of) those rows before summing a token's lookups.
Here the step computes that moment beside the summed gradient (execution/sparse_moments.py) and the
updates read it (`Optimizer.apply(moments=...)`). These tests compare against TensorFlow itself: the
optimizers on the same IndexedSlices, and whole `fit` runs of an embedding model at degrees 1 and 2.
"""

import sys

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = tf.keras

import flexflow_keras as ff  # noqa: E402
from flexflow_keras import config, optimizers  # noqa: E402

pytestmark = pytest.mark.tf

V, D = 7, 3
CASES = [
    ("Adam", dict(learning_rate=0.01)),
    ("Adam", dict(learning_rate=0.01, amsgrad=True)),
    ("AdamW", dict(learning_rate=0.01)),
    ("RMSprop", dict(learning_rate=0.01)),
    ("RMSprop", dict(learning_rate=0.01, momentum=0.5, centered=True)),
    ("Adagrad", dict(learning_rate=0.05)),
    ("Nadam", dict(learning_rate=0.01)),
    ("Adamax", dict(learning_rate=0.01)),
    ("Adadelta", dict(learning_rate=0.5)),
    ("Ftrl", dict(learning_rate=0.05, l1_regularization_strength=0.001)),
    ("Lamb", dict(learning_rate=0.01)),
    ("Adafactor", dict(learning_rate=0.05)),
    ("ScheduleFreeAdamW", dict(learning_rate=0.01)),
]


def _lookups(rng, steps):
    """Per step: ids with repeats (tokens 0-2 are frequent) and one gradient row per lookup."""
    out = []
    for _ in range(steps):
        ids = np.concatenate([rng.integers(0, 3, 6), rng.integers(0, V, 4)])
        out.append((ids, rng.standard_normal((ids.size, D)).astype(np.float32) * 0.5))
    return out


@pytest.mark.parametrize("name,kwargs", CASES, ids=[f"{n}-{sorted(k)}" for n, k in CASES])
def test_optimizer_reads_the_per_lookup_moment_as_tensorflow(name, kwargs):
    rng = np.random.default_rng(3)
    w0 = rng.standard_normal((V, D)).astype(np.float32)
    steps = _lookups(rng, 5)
    t_opt = getattr(keras.optimizers, name)(**kwargs)
    var = tf.Variable(w0)
    for ids, rows in steps:
        t_opt.apply_gradients([(tf.IndexedSlices(tf.constant(rows), tf.constant(ids), tf.constant([V, D])), var)])
    opt = getattr(optimizers, name)(**kwargs)
    assert opt.sparse_moment_power == (1 if name == "Adamax" else 2)
    w = w0.copy()
    slots = [w.copy() if init is None else np.full(opt.slot_shape(n, w.shape), init, w.dtype)
             for n, init in opt.slot_specs(w.shape, w.dtype)]
    for ids, rows in steps:
        g = np.zeros((V, D), np.float32)
        q = np.zeros((V, D), np.float32)
        np.add.at(g, ids, rows)
        np.add.at(q, ids, np.abs(rows) if name == "Adamax" else rows * rows)
        opt.apply("cpu", opt.iterations, opt.learning_rate_at(opt.iterations), [w], [g], [slots], moments=[q])
        opt.iterations += 1
    np.testing.assert_allclose(w, var.numpy(), rtol=1e-5, atol=1e-6)
    # the dense formula (the square of the sum) is measurably different here: the test can fail
    dense = getattr(optimizers, name)(**kwargs)
    wd = w0.copy()
    dslots = [wd.copy() if init is None else np.full(dense.slot_shape(n, w.shape), init, w.dtype)
              for n, init in dense.slot_specs(w.shape, w.dtype)]
    for ids, rows in steps:
        g = np.zeros((V, D), np.float32)
        np.add.at(g, ids, rows)
        dense.apply("cpu", dense.iterations, dense.learning_rate_at(dense.iterations), [wd], [g], [dslots])
        dense.iterations += 1
    assert np.abs(wd - var.numpy()).max() > 1e-4


@pytest.mark.parametrize("kwargs", [dict(clipnorm=1.0), dict(global_clipnorm=1.0), dict(clipvalue=0.1),
                                    dict(gradient_accumulation_steps=2)])
def test_clipping_and_accumulation_read_the_summed_gradient(kwargs):
    assert optimizers.Adam(**kwargs).sparse_moment_power is None
    assert optimizers.SGD().sparse_moment_power is None and optimizers.Lion().sparse_moment_power is None


@pytest.fixture
def fresh_config(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["pytest"])
    config.reset()
    yield
    config.reset()


def _model(k, T, regularizer=None):
    return k.Sequential([k.Input((T,), dtype="int32"),
                         k.layers.Embedding(40, 6, embeddings_regularizer=regularizer),
                         k.layers.GlobalAveragePooling1D(), k.layers.Dense(3, activation="softmax")])


@pytest.mark.parametrize("opt,degree,reg,parts", [("adam", 1, False, False), ("adam", 2, False, False),
                                                  ("rmsprop", 2, False, False), ("adamax", 1, False, False),
                                                  ("adam", 2, True, False), ("adam", 2, False, True)])
def test_fit_trains_an_embedding_model_as_tensorflow(opt, degree, reg, parts, fresh_config, monkeypatch):
    if parts:  # the table's gradient and moment written one part per processor, then summed in tiles
        from flexflow_keras.execution import grad_parts

        monkeypatch.setattr(grad_parts, "PARTS_MIN_ELEMENTS", 1)
    rng = np.random.default_rng(5)
    T, N = 10, 96
    ids = rng.integers(0, 40, (N, T)).astype("int32")
    ids[:, :4] = rng.integers(0, 4, (N, 4))  # frequent tokens: looked up several times per batch
    y = rng.integers(0, 3, N)
    reg_t = keras.regularizers.L2(0.01) if reg else None
    reg_f = ff.regularizers.L2(0.01) if reg else None
    mt, mf = _model(keras, T, reg_t), _model(ff, T, reg_f)
    mf.set_weights(mt.get_weights())
    mt.compile(keras.optimizers.get(opt), "sparse_categorical_crossentropy")
    mf.compile(ff.optimizers.get(opt), "sparse_categorical_crossentropy")
    config.set(cpus=2, data_parallel_degree=degree)
    hf = mf.fit(ids, y, batch_size=32, epochs=3, verbose=0, shuffle=False)
    ht = mt.fit(ids, y, batch_size=32, epochs=3, verbose=0, shuffle=False)
    np.testing.assert_allclose(hf.history["loss"], ht.history["loss"], rtol=2e-5)
    for a, b in zip(mf.get_weights(), mt.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=2e-6)


@pytest.mark.parametrize("name,tied", [("Adam", False), ("Adamax", False), ("RMSprop", False), ("Adam", True)])
def test_custom_training_loop_updates_a_table_as_tensorflow(name, tied):
    # tape.gradient hands a table only lookups read to apply_gradients with its per-lookup moments; a table
    # another term also reads (tied) gets TensorFlow's densified gradient, squared after the sum
    from flexflow_keras import ops
    from flexflow_keras.ops.tape import GradientTape

    rng = np.random.default_rng(0)
    ids = rng.integers(0, 20, (16, 6)).astype("int32")
    ids[:, :3] = rng.integers(0, 3, (16, 3))
    y = rng.integers(0, 3, 16)
    # tf.keras' initial weights (copied into ours) come from Python's random: fixed here, not left to the tests
    # that ran before in this worker (a full run once drew weights where Adam's first steps on a rarely read
    # row, a gradient near 0, differ in rounding by 1.5e-3 of the row's value)
    keras.utils.set_random_seed(3)

    def build(k):
        return k.Sequential([k.Input((6,), dtype="int32"), k.layers.Embedding(20, 4), k.layers.GlobalAveragePooling1D(),
                             k.layers.Dense(3)])

    mt, mf = build(keras), build(ff)
    mf.set_weights(mt.get_weights())
    ot, of = getattr(keras.optimizers, name)(0.05), getattr(optimizers, name)(0.05)
    lt = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    lf = ff.losses.SparseCategoricalCrossentropy(from_logits=True)
    for _ in range(4):
        with tf.GradientTape() as tape:
            loss = lt(y, mt(ids, training=True))
            if tied:
                loss += 0.01 * tf.reduce_sum(tf.square(mt.layers[0].embeddings))
        ot.apply_gradients(zip(tape.gradient(loss, mt.trainable_weights), mt.trainable_weights, strict=True))
        with GradientTape() as tape:
            loss = lf(y, mf(ids, training=True))
            if tied:
                loss += 0.01 * ops.sum(ops.square(mf.layers[0].embeddings))
        grads = tape.gradient(loss, mf.trainable_weights)
        assert hasattr(grads[0], "_ff_lookups") != tied and not hasattr(grads[1], "_ff_lookups")
        of.apply_gradients(zip(grads, mf.trainable_weights, strict=True))
    for a, b in zip(mf.get_weights(), mt.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_a_table_gradient_changed_in_place_reads_the_square_of_its_sum():
    # the lookups' moment belongs to the gradient the tape returned: scaled in place, it no longer does
    from flexflow_keras.ops.tape import GradientTape

    layer = ff.layers.Embedding(6, 2)
    ids = np.array([[1, 1, 2]])
    with GradientTape() as tape:
        loss = ff.ops.sum(ff.ops.square(layer(ids)))
    (g,) = tape.gradient(loss, layer.trainable_weights)
    rows = g._ff_lookups
    table = np.asarray(layer.embeddings)
    want = np.zeros((6, 2), np.float32)
    np.add.at(want, [1, 1, 2], (2 * table[[1, 1, 2]]) ** 2)
    np.testing.assert_allclose(rows.moment(g, 2, np.float32), want, rtol=1e-6)
    g *= 0.5
    assert rows.moment(g, 2, np.float32) is None
