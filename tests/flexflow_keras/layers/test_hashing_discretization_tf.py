"""Hashing, HashedCrossing and Discretization against Keras 3 (TensorFlow backend), and their hashes against
TensorFlow's ops: FarmHash Fingerprint64 (`tf.fingerprint`, `to_hash_bucket_fast`), SipHash-2-4
(`to_hash_bucket_strong`) and the crossing of `tf.sparse.cross_hashed`, bit for bit on many strings;
bins, output modes, dtypes, configs, argument checks and adapt's boundaries on the same data."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import flexflow_keras as ff  # noqa: E402
from flexflow_keras.layers import string_hash  # noqa: E402

pytestmark = pytest.mark.tf


def _random_strings(seed=0):
    rng = np.random.default_rng(seed)
    raw = [b""] + [bytes(rng.integers(0, 256, n, dtype=np.uint8)) for n in list(range(1, 301)) * 2]
    words = ["é", "naïve", "日本語のテキスト", "emoji 🎉🎉", "a" * 64, "b" * 65, "c" * 128, "d" * 129]
    return raw + [w.encode() for w in words] + [("ü✓" * k).encode() for k in range(1, 60)]


def test_fingerprint64_is_tensorflows_on_random_strings():
    strings = _random_strings()
    theirs = tf.fingerprint(tf.constant(strings)).numpy().view("<u8")[:, 0]
    np.testing.assert_array_equal(string_hash.fingerprint64(strings), theirs)
    buckets = tf.strings.to_hash_bucket_fast(tf.constant(strings), 1_000_003).numpy()
    np.testing.assert_array_equal((string_hash.fingerprint64(strings) % np.uint64(1_000_003)).astype(np.int64),
                                  buckets)


@pytest.mark.parametrize("key", [(133, 137), (0, 0), (-1, 2**62 + 12345), (7, -(2**63))])
def test_siphash_is_tensorflows_strong_hash(key):
    strings = _random_strings(seed=1)
    ours = string_hash.siphash(strings, *key)
    for modulus in (2**62, 2**63 - 1):
        theirs = tf.strings.to_hash_bucket_strong(tf.constant(strings), modulus, key=list(key)).numpy()
        np.testing.assert_array_equal((ours % np.uint64(modulus)).astype(np.int64), theirs)


def _same(ours_layer, theirs_layer, x):
    theirs = np.asarray(theirs_layer(x))
    ours = np.asarray(ours_layer(x))
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype, (ours.shape, ours.dtype, theirs.shape,
                                                                       theirs.dtype)
    np.testing.assert_array_equal(ours, theirs)


def _both(name, **kwargs):
    return getattr(ff.layers, name)(**kwargs), getattr(keras.layers, name)(**kwargs)


STRINGS = [np.array(["A", "B", "C", "", "é"]), np.array([["A"], ["B"], ["C"]]), np.array([["A", "B"], ["C", "A"]]),
           np.array([[["A", "B", "A"], ["C", "A", "A"]]]), np.array([[["a"]], [["b"]]]), [["x"], ["y"]]]
HASHING = [dict(num_bins=5), dict(num_bins=5, mask_value="A"), dict(num_bins=5, salt=[3, -7]),
           dict(num_bins=7, salt=133, mask_value=""), dict(num_bins=1, mask_value="A"),
           dict(num_bins=9, dtype="int32")]


@pytest.mark.parametrize("mode", ["int", "one_hot", "multi_hot", "count"])
@pytest.mark.parametrize("kwargs", HASHING, ids=[str(k) for k in HASHING])
def test_hashing_matches_keras_on_strings(kwargs, mode):
    if mode != "int" and kwargs.get("dtype") == "int32":
        kwargs = dict(kwargs, dtype="float32")
    ours, theirs = _both("Hashing", output_mode=mode, **kwargs)
    for x in STRINGS:
        _same(ours, theirs, x)


@pytest.mark.parametrize("x", [np.array([1, -2, 300, 0, 2**62, -(2**63)]), np.array([[1], [200]], np.uint8),
                               np.array([1, 7, 1000], np.int32), np.array([True, False]),
                               np.array([1.7, -2.5, 300.0, 0.2, 1.0, np.nan, np.inf, 1e30]),
                               np.array([b"a", b"\xff\xfe"]), np.array(["é", b"a"], dtype=object), "A", 12],
                         ids=["int64", "uint8", "int32", "bool", "float", "bytes", "mixed-object", "scalar",
                              "python-int"])
def test_hashing_matches_keras_on_numbers_and_bytes(x):
    for kwargs in (dict(num_bins=1000), dict(num_bins=1000, salt=(11, 12))):
        _same(*_both("Hashing", **kwargs), x)
    if isinstance(x, np.ndarray) and x.dtype.kind in "iuf":
        _same(*_both("Hashing", num_bins=10, mask_value=1), x)  # compared before the int cast: 1.0 is masked


def test_hashing_on_many_repeated_strings_matches_keras():
    rng = np.random.default_rng(2)
    x = rng.choice(np.array(["red", "green", "blue", "", "a much longer category name " * 4]), (500, 3))
    _same(*_both("Hashing", num_bins=97), x)
    _same(*_both("Hashing", num_bins=97, salt=5, output_mode="count"), x)


CROSS_INPUTS = [(np.array(["A", "B", "A"]), np.array([101, 101, 102])),
                [np.array([["A"], ["B"], ["é"]]), np.array([[1], [-5], [2**40]])],
                (np.array("A"), np.array(-5)),
                (np.array([3, 4, 5]), np.array(["x", "y", "z"]), np.array([7, 8, 9], np.int32)),
                (np.array(["p", "q"]), np.array(["r", ""]))]


@pytest.mark.parametrize("kwargs", [dict(num_bins=7), dict(num_bins=7, output_mode="one_hot"), dict(num_bins=0),
                                    dict(num_bins=2**40), dict(num_bins=5, dtype="float32"),
                                    dict(num_bins=5, output_mode="one_hot", dtype="int32")],
                         ids=["int", "one_hot", "zero-bins", "big", "float-ids", "int-one-hot"])
def test_hashed_crossing_matches_keras(kwargs):
    ours, theirs = _both("HashedCrossing", **kwargs)
    for inputs in CROSS_INPUTS:
        if kwargs["num_bins"] == 0 and kwargs.get("output_mode") == "one_hot":
            continue
        _same(ours, theirs, inputs)


X = np.array([[-1.5, 1.0, 3.4, 0.5], [0.0, 3.0, 1.3, 0.0]])


@pytest.mark.parametrize("mode", ["int", "one_hot", "multi_hot", "count"])
def test_discretization_matches_keras(mode):
    ours, theirs = _both("Discretization", bin_boundaries=[0.0, 1.0, 2.0], output_mode=mode)
    for x in (X, X[0], X[:, :1], X[None], np.array(0.5), [0.0, 1.0, 2.0, 0.5], np.array([1, 2, -3]),
              np.array([0.1, np.float32(0.1), 1.0000001, np.nan, np.inf, -np.inf])):
        _same(ours, theirs, x)


def test_discretization_compares_in_float32_as_keras():
    """A value equal to a boundary goes right; float64 inputs and big integers compare as float32."""
    _same(*_both("Discretization", bin_boundaries=[0.1, 0.7]), np.array([0.1, np.float32(0.1), 0.7, 0.69999999]))
    _same(*_both("Discretization", bin_boundaries=[16777217.0]), np.array([16777216, 16777217, 16777218]))
    _same(*_both("Discretization", bin_boundaries=[]), X)
    _same(*_both("Discretization", bin_boundaries=[0.0, 1.0], output_mode="one_hot", dtype="float64"), X[0])


def _datasets():
    rng = np.random.default_rng(0)
    return {"small": X, "normal": rng.normal(size=1000), "repeats": np.repeat([1.0, 2.0, 3.0], [500, 5, 200]),
            "few-ints": rng.integers(0, 5, size=(300, 3)), "2d-exponential": rng.exponential(size=(50, 40)),
            "list-of-batches": [rng.normal(size=64) for _ in range(20)],
            "int-batches": [rng.integers(0, 4, size=(37, 2)) for _ in range(9)], "constant": np.zeros(100),
            "tiny": np.arange(7.0), "big-float32": rng.normal(size=100_000).astype(np.float32)}


@pytest.mark.parametrize("name", list(_datasets()))
def test_discretization_adapt_gives_keras_boundaries(name):
    data = _datasets()[name]
    for num_bins in (1, 2, 4, 10, 33):
        for epsilon in (0.01, 0.1, 0.001, 1 / 3):
            ours, theirs = _both("Discretization", num_bins=num_bins, epsilon=epsilon)
            ours.adapt(data)
            theirs.adapt(data)
            assert ours.bin_boundaries == list(theirs.bin_boundaries), (num_bins, epsilon)
    _same(ours, theirs, np.linspace(-3, 3, 50))


def test_discretization_adapt_on_a_dataset_of_batches_and_steps():
    arr = np.random.default_rng(3).normal(size=3000)
    batches = np.array_split(arr, range(128, 3000, 128))
    for steps in (None, 5):
        theirs = keras.layers.Discretization(num_bins=8)
        theirs.adapt(tf.data.Dataset.from_tensor_slices(arr).batch(128), steps=steps)
        ours = ff.layers.Discretization(num_bins=8)
        ours.adapt((b for b in batches), steps=steps)
        assert ours.bin_boundaries == list(theirs.bin_boundaries)
        ours_again = ff.layers.Discretization(num_bins=8)
        ours_again.adapt(batches, steps=steps)  # a list: batch by batch too
        assert ours_again.bin_boundaries == ours.bin_boundaries


def _config(layer):
    config = dict(layer.get_config())
    config.pop("name")
    dtype = config.pop("dtype")
    return config, dtype if isinstance(dtype, str) else dtype["config"]["name"]


@pytest.mark.parametrize("name,kwargs", [("Hashing", dict(num_bins=4)), ("Hashing", dict(num_bins=4, salt=3)),
                                         ("Hashing", dict(num_bins=4, salt=(1, 2), mask_value="",
                                                          output_mode="count")),
                                         ("HashedCrossing", dict(num_bins=4)),
                                         ("HashedCrossing", dict(num_bins=4, output_mode="one_hot")),
                                         ("Discretization", dict(bin_boundaries=[0.0, 1.5], output_mode="one_hot")),
                                         ("Discretization", dict(num_bins=3, epsilon=0.1))])
def test_configs_match_keras_and_rebuild_there(name, kwargs):
    ours, theirs = _both(name, **kwargs)
    if name == "Discretization" and "num_bins" in kwargs:
        ours.adapt(X)
        theirs.adapt(X)
    if "trainable" in theirs.get_config():
        assert ours.get_config()["trainable"] == theirs.get_config()["trainable"]
    assert _config(ours) == _config(theirs)
    rebuilt = getattr(keras.layers, name).from_config(ours.get_config())
    assert _config(rebuilt) == _config(ours)
    again = type(ours).from_config(ours.get_config())
    assert again.get_config() == ours.get_config()


BAD = [("Hashing", dict(num_bins=0)), ("Hashing", dict(num_bins=None)), ("Hashing", dict(num_bins=3, salt="a")),
       ("Hashing", dict(num_bins=3, salt=(1, 2, 3))), ("Hashing", dict(num_bins=3, salt=1.5)),
       ("Hashing", dict(num_bins=3, output_mode="tf_idf")), ("Hashing", dict(num_bins=3, sparse=True)),
       ("Hashing", dict(num_bins=3, dtype="float32")),
       ("HashedCrossing", dict(num_bins=3, output_mode="multi_hot")),
       ("Discretization", dict()), ("Discretization", dict(bin_boundaries=[1.0], num_bins=3)),
       ("Discretization", dict(num_bins=-1)), ("Discretization", dict(num_bins=3, output_mode="tf_idf")),
       ("Discretization", dict(num_bins=3, sparse=True))]


@pytest.mark.parametrize("name,kwargs", BAD, ids=[f"{n}-{k}" for n, k in BAD])
def test_argument_checks_match_keras(name, kwargs):
    with pytest.raises(ValueError):
        getattr(keras.layers, name)(**kwargs)
    with pytest.raises(ff.errors.ArgumentError, match=f"{name} '"):
        getattr(ff.layers, name)(**kwargs)


@pytest.mark.parametrize("name,kwargs,x", [
    ("Hashing", dict(num_bins=3, mask_value=0), np.array(["1", "0"])),
    ("Hashing", dict(num_bins=3, mask_value="0"), np.array([1, 0])),
    ("HashedCrossing", dict(num_bins=3), np.array(["a"])),
    ("HashedCrossing", dict(num_bins=3), (np.array(["a"]),)),
    ("HashedCrossing", dict(num_bins=3), (np.array([["a", "b"]]), np.array([[1, 2]]))),
    ("HashedCrossing", dict(num_bins=3), (np.array(["a", "b"]), np.array([1]))),
    ("HashedCrossing", dict(num_bins=3), (np.array(["a"]), np.array([1.5]))),
    ("Discretization", dict(num_bins=3), X),
])
def test_data_checks_match_keras(name, kwargs, x):
    with pytest.raises((ValueError, TypeError)):
        getattr(keras.layers, name)(**kwargs)(x)
    with pytest.raises(ff.errors.DataError, match=f"{name} '"):
        getattr(ff.layers, name)(**kwargs)(x)
