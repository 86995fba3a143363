"""Hashing, HashedCrossing and Discretization without TensorFlow: the published hash vectors, Keras' own
documented outputs, each layer in front of a model on an Input that trains (and saves and loads), and
the errors users see. Parity with Keras on random data is in test_hashing_discretization_tf.py."""


import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras.errors import ArgumentError, DataError
from flexflow_keras.layers import bin_encoding, string_hash


def test_siphash_gives_the_papers_test_vectors():
    key = (int.from_bytes(bytes(range(8)), "little"), int.from_bytes(bytes(range(8, 16)), "little"))
    got = string_hash.siphash([b"", bytes(range(15)), bytes(range(63))], *key)
    assert [hex(v) for v in got] == ["0x726fdb47dd0e0e31", "0xa129ca6149be45e5", "0x958a324ceb064572"]


def test_fingerprint64_of_each_length_class():
    """Values TensorFlow's tf.fingerprint gives (empty, 1-3, 4-7, 8-16, 17-32, 33-64, over 64 bytes)."""
    strings = [b"", b"a", b"abcd", b"hello world!", b"x" * 20, b"y" * 40, b"z" * 100, "日本語".encode()]
    assert [hex(v) for v in string_hash.fingerprint64(strings)] == [
        "0x9ae16a3b2f90404f", "0xb3454265b6df75e3", "0x1a5502de4a1f8101", "0x3f87e91e111fcf64",
        "0x7241ce1f8ef74dc4", "0x3d596369a03cfde", "0x7ff70a2c3be33a79", "0xd99eeda07b1cb847"]


def test_the_examples_of_keras_docstrings():
    letters = [["A"], ["B"], ["C"], ["D"], ["E"]]
    assert np.asarray(keras.layers.Hashing(num_bins=3)(letters)).ravel().tolist() == [1, 0, 1, 1, 2]
    masked = keras.layers.Hashing(num_bins=3, mask_value="")([["A"], ["B"], [""], ["C"], ["D"]])
    assert np.asarray(masked).ravel().tolist() == [1, 1, 0, 2, 2]
    assert np.asarray(keras.layers.Hashing(num_bins=3, salt=[133, 137])(letters)).ravel().tolist() == [1, 2, 1, 0, 2]
    assert np.asarray(keras.layers.Hashing(num_bins=3, salt=133)(letters)).ravel().tolist() == [0, 0, 2, 1, 0]
    feat1, feat2 = np.array(["A", "B", "A", "B", "A"]), np.array([101, 101, 101, 102, 102])
    assert np.asarray(keras.layers.HashedCrossing(num_bins=5)((feat1, feat2))).tolist() == [1, 4, 1, 1, 3]
    one_hot = keras.layers.HashedCrossing(num_bins=5, output_mode="one_hot")((feat1, feat2))
    assert one_hot.dtype == np.float32 and np.asarray(one_hot).argmax(-1).tolist() == [1, 4, 1, 1, 3]
    x = np.array([[-1.5, 1.0, 3.4, 0.5], [0.0, 3.0, 1.3, 0.0]])
    ids = keras.layers.Discretization(bin_boundaries=[0.0, 1.0, 2.0])(x)
    assert ids.dtype == np.int32 and np.asarray(ids).tolist() == [[0, 2, 3, 1], [1, 3, 2, 1]]
    adapted = keras.layers.Discretization(num_bins=4, epsilon=0.01)
    adapted.adapt(x)
    assert np.asarray(adapted(x)).tolist() == [[0, 2, 3, 2], [1, 3, 3, 1]]


def test_output_modes_and_shapes():
    ids = np.array([[0, 2], [1, 1]])
    assert bin_encoding.encode(ids, "one_hot", 3, "float32").shape == (2, 2, 3)
    assert bin_encoding.encode(ids, "count", 3, "int64").tolist() == [[1, 0, 1], [0, 2, 0]]
    assert bin_encoding.encode(ids, "multi_hot", 3, "int64").tolist() == [[1, 0, 1], [0, 1, 0]]
    assert bin_encoding.encode(ids[0], "count", 3, "int64").tolist() == [1, 0, 1]  # rank 1: one sample
    assert bin_encoding.encode(ids[None], "count", 3, "int64").tolist() == [[[1, 1, 0], [0, 1, 1]]]  # axis 1
    for shape in [(), (4,), (4, 1), (4, 2), (1, 4, 2)]:
        for mode in ("int", "one_hot", "multi_hot", "count"):
            got = bin_encoding.encode(np.zeros(shape, np.int64), mode, 3, "float32").shape
            assert got == bin_encoding.encoded_shape(shape, mode, 3), (shape, mode)
    hashing = keras.layers.Hashing(num_bins=4, output_mode="one_hot")
    assert hashing.compute_output_shape((None, 1)) == (None, 4) and hashing(np.array([["a"], ["b"]])).shape == (2, 4)


def test_many_repeated_strings_hash_once_each(monkeypatch):
    from flexflow_keras.layers import string_hash

    hashed = []
    for name in ("fingerprint64", "siphash"):
        real = getattr(string_hash, name)
        monkeypatch.setattr(string_hash, name, lambda data, *a, _real=real: hashed.append(len(data)) or _real(data, *a))
    x = np.array(["red", "green", "a much longer category name " * 3] * 100_000)
    out = keras.layers.Hashing(num_bins=50)(x)
    assert out.shape == x.shape and len(set(np.asarray(out).tolist())) <= 3
    salted = keras.layers.Hashing(num_bins=50, salt=9)(x.reshape(-1, 3))
    assert salted.shape == (100_000, 3)
    assert hashed == [3, 3]  # each distinct value once, not 300,000 times


def _trains(model, x, y, epochs=25):
    model.compile(keras.optimizers.SGD(0.5), "binary_crossentropy")
    hist = model.fit(x, y, epochs=epochs, batch_size=8, verbose=0).history
    assert hist["loss"][-1] < 0.4 * hist["loss"][0], hist["loss"]


def test_hashing_in_front_of_a_model():
    words = keras.Input(shape=(1,), dtype="string")
    hashing = keras.layers.Hashing(num_bins=16, output_mode="one_hot", salt=7)
    model = keras.Model(words, keras.layers.Dense(1, activation="sigmoid")(hashing(words)))
    x = np.array([["cat"], ["dog"], ["bird"], ["fish"]] * 8)
    assert len(set(np.asarray(hashing(x[:4])).argmax(-1).tolist())) == 4  # no collision among the four
    _trains(model, x, np.array([1, 0, 1, 0] * 8, np.float32))
    assert model.predict(np.array([["cat"], ["unseen"]]), verbose=0).shape == (2, 1)


def test_hashed_crossing_in_front_of_a_model_learns_a_cross():
    """Label = color XOR size: no single feature predicts it, their cross does."""
    color = keras.Input(shape=(1,), dtype="string", name="color")
    size = keras.Input(shape=(1,), dtype="int64", name="size")
    crossed = keras.layers.HashedCrossing(num_bins=16, output_mode="one_hot")([color, size])
    model = keras.Model([color, size], keras.layers.Dense(1, activation="sigmoid")(crossed))
    colors, sizes = np.array([["red"], ["red"], ["blue"], ["blue"]] * 8), np.array([[1], [2], [1], [2]] * 8)
    _trains(model, [colors, sizes], np.array([1, 0, 0, 1] * 8, np.float32))
    pred = model.predict({"color": colors[:4], "size": sizes[:4]}, verbose=0).ravel()
    assert (pred > 0.5).tolist() == [True, False, False, True]


def test_discretization_in_front_of_a_model():
    values = keras.Input(shape=(1,))
    buckets = keras.layers.Discretization(num_bins=3, output_mode="one_hot")
    buckets.adapt(np.arange(90.0))
    assert buckets.bin_boundaries == [29.0, 59.0]  # as Keras: the values at 1/3 and 2/3 of the weight
    model = keras.Model(values, keras.layers.Dense(1, activation="sigmoid")(buckets(values)))
    x = np.array([[5.0], [45.0], [80.0]] * 8, np.float32)
    _trains(model, x, np.array([1, 0, 1] * 8, np.float32))


@pytest.mark.parametrize("kind", ["hashing", "crossing", "discretization"])
def test_models_starting_with_them_save_and_load(tmp_path, kind):
    if kind == "hashing":
        inputs = keras.Input(shape=(1,), dtype="string")
        x = keras.layers.Hashing(8, output_mode="one_hot", salt=(1, 2))(inputs)
        data = np.array([["a"], ["b"]])
    elif kind == "crossing":
        inputs = [keras.Input(shape=(1,), dtype="string", name="a"), keras.Input(shape=(1,), dtype="int64", name="b")]
        x = keras.layers.HashedCrossing(8, output_mode="one_hot")(inputs)
        data = [np.array([["a"], ["b"]]), np.array([[1], [2]])]
    else:
        inputs = keras.Input(shape=(1,))
        layer = keras.layers.Discretization(num_bins=4, output_mode="one_hot")
        layer.adapt(np.arange(50.0))
        x = layer(inputs)
        data = np.array([[3.0], [40.0]], np.float32)
    model = keras.Model(inputs, keras.layers.Dense(1)(x))
    want = model.predict(data, verbose=0)
    model.save(tmp_path / "m.keras")
    again = keras.models.load_model(tmp_path / "m.keras")
    np.testing.assert_allclose(again.predict(data, verbose=0), want, rtol=1e-6)
    tf = pytest.importorskip("tensorflow")
    theirs = pytest.importorskip("keras").models.load_model(tmp_path / "m.keras")
    given = [tf.constant(d) for d in data] if isinstance(data, list) else tf.constant(data)
    np.testing.assert_allclose(theirs.predict(given, verbose=0), want, rtol=1e-5)


def test_discretization_config_after_adapt_round_trips():
    layer = keras.layers.Discretization(num_bins=3, epsilon=0.1)
    layer.adapt([np.arange(10.0), np.arange(5.0)])  # a list: two batches
    config = layer.get_config()
    assert config["num_bins"] == 3 and len(config["bin_boundaries"]) == 2
    again = keras.layers.Discretization.from_config(config)
    assert again.get_config() == config
    np.testing.assert_array_equal(again(np.arange(10.0)), layer(np.arange(10.0)))


def test_errors_say_who_what_and_how_to_fix():
    with pytest.raises(ArgumentError, match=r"Hashing 'h': num_bins must be a positive integer, received num_bins=0"):
        keras.layers.Hashing(num_bins=0, name="h")
    with pytest.raises(ArgumentError, match=r"salt must be an int or a tuple of 2 ints, received salt='x'"):
        keras.layers.Hashing(num_bins=3, salt="x")
    with pytest.raises(ArgumentError, match="in int64's range"):
        keras.layers.Hashing(num_bins=3, salt=2**64 - 1)
    with pytest.raises(ArgumentError, match="sparse=True is not supported.*leave sparse=False"):
        keras.layers.Hashing(num_bins=3, output_mode="count", sparse=True)
    with pytest.raises(DataError, match="mask_value=0 is not a string, but the inputs are strings"):
        keras.layers.Hashing(num_bins=3, mask_value=0)(np.array(["a"]))
    with pytest.raises(DataError, match=r"called on a list or tuple of inputs .* layer\(\(feature_a, feature_b\)\)"):
        keras.layers.HashedCrossing(num_bins=3)(np.array(["a"]))
    with pytest.raises(DataError, match="cast floats or booleans to int first"):
        keras.layers.HashedCrossing(num_bins=3)((np.array(["a"]), np.array([True])))
    with pytest.raises(ArgumentError, match="give either num_bins .* or bin_boundaries, not both"):
        keras.layers.Discretization(bin_boundaries=[1.0], num_bins=2)
    with pytest.raises(ArgumentError, match="must be a sorted list of numbers"):
        keras.layers.Discretization(bin_boundaries=[2.0, 1.0])
    with pytest.raises(DataError, match="no boundaries yet: .* call adapt"):
        keras.layers.Discretization(num_bins=3)(np.array([1.0]))
    with pytest.raises(ArgumentError, match="made with bin_boundaries; adapt needs num_bins"):
        keras.layers.Discretization(bin_boundaries=[1.0]).adapt(np.array([1.0]))
    with pytest.raises(DataError, match="buckets numbers; received an array of <U1"):
        keras.layers.Discretization(bin_boundaries=[1.0])(np.array(["a"]))
