"""tf.data.Dataset.from_tensor_slices under `python -m flexflow_keras` (data/slices.py): the chain's
batches as TensorFlow gives them, shuffling per pass and repeatable from a seed, and fit/evaluate/predict
on it."""

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras.errors import DataError
from flexflow_keras.keras_alias import _TensorFlow
from flexflow_keras.utils import tree

tf_stand_in = _TensorFlow("tensorflow")
X = np.arange(40, dtype=np.float32).reshape(20, 2)
Y = np.arange(20, dtype=np.int32)


def _chain(data):
    ds = data.Dataset.from_tensor_slices((X, Y)).skip(1).map(lambda a, b: (a * 2.0, b + 1))
    return ds.batch(3, drop_remainder=True).map(lambda a, b: (a - 1.0, b)).take(4).prefetch(data.AUTOTUNE)


def test_chain_gives_the_batches_in_order():
    got = list(_chain(tf_stand_in.data))
    assert len(got) == 4 and len(_chain(tf_stand_in.data)) == 4
    for k, (a, b) in enumerate(got):
        rows = np.arange(1 + 3 * k, 4 + 3 * k)
        np.testing.assert_array_equal(a.numpy(), X[rows] * 2 - 1)
        np.testing.assert_array_equal(b.numpy(), Y[rows] + 1)


@pytest.mark.tf
def test_chain_matches_tensorflow():
    tf = pytest.importorskip("tensorflow")
    ours = [tuple(np.asarray(t) for t in item) for item in _chain(tf_stand_in.data)]
    theirs = [tuple(t.numpy() for t in item) for item in _chain(tf.data)]
    assert len(ours) == len(theirs)
    for (a, b), (c, d) in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(a, c)
        np.testing.assert_array_equal(b, d)


def test_shuffle_reorders_each_pass_and_repeats_from_the_seed():
    def orders(seed):
        ds = tf_stand_in.data.Dataset.from_tensor_slices(Y).shuffle(20, seed=seed).batch(20)
        return [next(iter(ds)).numpy().tolist() for _ in range(2)]

    first, second = orders(3)
    assert sorted(first) == list(range(20)) and first != second  # a new order each pass
    assert orders(3) == [first, second]  # the same orders from the same seed
    tf_stand_in.random.set_seed(7)
    a = next(iter(tf_stand_in.data.Dataset.from_tensor_slices(Y).shuffle(20).batch(20))).numpy()
    tf_stand_in.random.set_seed(7)
    b = next(iter(tf_stand_in.data.Dataset.from_tensor_slices(Y).shuffle(20).batch(20))).numpy()
    np.testing.assert_array_equal(a, b)  # without a seed, tf.random.set_seed makes it repeat


def test_fit_evaluate_predict_on_a_sliced_dataset_match_arrays():
    x = np.random.default_rng(0).random((64, 4)).astype(np.float32)
    y = (x.sum(axis=1) > 2).astype(np.int32)

    def model():
        keras.utils.set_random_seed(1)
        m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2, activation="softmax")])
        m.compile(keras.optimizers.SGD(0.1), "sparse_categorical_crossentropy")
        return m

    ds = tf_stand_in.data.Dataset.from_tensor_slices((x, y)).batch(16)
    a, b = model(), model()
    h1 = a.fit(ds, epochs=2, verbose=0).history["loss"]
    h2 = b.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0).history["loss"]
    np.testing.assert_allclose(h1, h2, rtol=1e-5)  # fit(shuffle=True) leaves the dataset's own order
    np.testing.assert_allclose(a.evaluate(ds, verbose=0), b.evaluate(x, y, verbose=0), rtol=1e-5)
    np.testing.assert_allclose(a.predict(ds, verbose=0), b.predict(x, verbose=0), rtol=1e-5)


def test_endless_repeat_and_mismatched_slices_are_clear_errors():
    endless = tf_stand_in.data.Dataset.from_tensor_slices(Y).repeat()
    with pytest.raises(DataError, match=r"drop \.repeat\(\)"):
        len(endless)
    # a custom loop's `ds.repeat().shuffle(n).batch(b)` then `ds.take(steps)`: the take ends it
    taken = endless.shuffle(7).batch(3).take(25)
    batches = list(taken)
    assert len(batches) == 25 and all(b.shape == (3,) for b in batches)
    assert set(np.concatenate(batches).tolist()) <= set(np.asarray(Y).tolist())
    assert len(tf_stand_in.data.Dataset.from_tensor_slices(Y).batch(5).repeat(2)) == 8
    with pytest.raises(DataError, match="same first dimension"):
        tf_stand_in.data.Dataset.from_tensor_slices((X, Y[:5]))


def test_endless_repeat_batched_past_the_data_gives_full_batches_as_tensorflow():
    # 10 elements, batches of 32: a batch runs on across the data's end (each was cut at one pass of the data)
    ds = tf_stand_in.data.Dataset.from_tensor_slices(np.arange(10)).repeat().batch(32).take(2)
    batches = [np.asarray(b) for b in ds]
    assert [b.shape for b in batches] == [(32,), (32,)]
    np.testing.assert_array_equal(np.concatenate(batches), np.tile(np.arange(10), 7)[:64])


def test_element_spec_gives_the_shapes_and_dtypes_tensorflow_gives():
    # TensorFlow's time-series tutorial prints ``w2.train.element_spec``
    tf = pytest.importorskip("tensorflow")
    x, text = np.zeros((5, 3), "float32"), np.array(["a", "bc", "d", "e", "f"])
    for build in (lambda D: D.from_tensor_slices((x, text)),
                  lambda D: D.from_tensor_slices({"x": x, "n": np.arange(5)}).batch(2),
                  lambda D: D.from_tensor_slices(x).map(lambda v: v[:2] * 2)):
        ours, theirs = build(tf_stand_in.data.Dataset).element_spec, build(tf.data.Dataset).element_spec
        flat_ours, flat_theirs = tree.flatten(ours), tf.nest.flatten(theirs)
        assert sorted((s.shape, s.dtype) for s in flat_ours) == \
            sorted((tuple(t.shape), t.dtype.name) for t in flat_theirs)
    with pytest.raises(DataError, match="empty"):
        tf_stand_in.data.Dataset.from_tensor_slices(x).take(0).element_spec  # noqa: B018


def test_cardinality_and_the_numpy_iterator_as_the_tensorflow_tutorials_use_them():
    """`tf.data.experimental.cardinality(ds)` (with .numpy(), //, %d), `ds.as_numpy_iterator().next()`,
    and the GPU probes of `tf.test` answer from the -ll:gpu devices."""
    ds = tf_stand_in.data.Dataset.from_tensor_slices((X, Y)).batch(6)
    n = tf_stand_in.data.experimental.cardinality(ds)
    assert n.numpy() == 4 and n // 2 == 2 and f"{int(n)}" == "4" and ds.take(n // 2).cardinality().numpy() == 2
    it = ds.as_numpy_iterator()
    first, second = it.next(), next(it)
    np.testing.assert_array_equal(first[0], X[:6])
    np.testing.assert_array_equal(second[1], Y[6:12])
    folder = keras.utils.timeseries_dataset_from_array(X, None, sequence_length=4, batch_size=5)
    assert folder.as_numpy_iterator().next().shape == (5, 4, 2)
    assert tf_stand_in.test.gpu_device_name() == "" and tf_stand_in.test.is_gpu_available() is False
    with pytest.raises(TypeError, match="expects a dataset"):
        tf_stand_in.data.experimental.cardinality([1, 2])
