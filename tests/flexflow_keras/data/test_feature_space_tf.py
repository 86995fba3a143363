"""keras.utils.FeatureSpace against Keras 3's (TensorFlow backend): the same FeatureSpace adapted on the same
data gives the same encodings for every feature type, crosses, both output modes, single samples and values
never seen in adapt; the symbolic path of an end-to-end model predicts what tf.keras' does with the same
weights; and .keras files written by either load in the other."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import flexflow_keras as ff  # noqa: E402
from flexflow_keras.data.slices import SliceDataset  # noqa: E402

pytestmark = pytest.mark.tf


def _data(n=150, seed=0):
    rng = np.random.default_rng(seed)
    words = np.array(["red", "green", "blue", "cyan", "gold", "grey"])
    return {"f": rng.normal(3, 2, n), "n": rng.normal(-5, 10, n), "r": rng.uniform(0, 9, n),
            "d": rng.gamma(2.0, 3.0, n),
            "i": rng.choice([3, 7, 7, 11, 11, 11, 40, 40, 40, 40], n).astype("int64"),
            "s": words[rng.choice(6, n, p=[0.3, 0.25, 0.2, 0.15, 0.07, 0.03])], "h": words[rng.integers(0, 6, n)],
            "k": rng.integers(-50, 50, n)}


def _unseen():
    return {"f": np.array([0.5, -3.0]), "n": np.array([100.0, -7.5]), "r": np.array([4.0, 12.0]),
            "d": np.array([0.0, 99.0]), "i": np.array([7, 1234]), "s": np.array(["blue", "violet"]),
            "h": np.array(["violet", "red"]), "k": np.array([0, 999])}


def _adapt_both(make, data, batch=16):
    """(ours, Keras') FeatureSpace made by `make(FeatureSpace)`, adapted on `data` batched by `batch`
    (None: the dict itself, which both batch by 32)."""
    theirs, ours = make(keras.utils.FeatureSpace), make(ff.utils.FeatureSpace)
    if batch is None:
        theirs.adapt(data)
        ours.adapt(data)
    else:
        theirs.adapt(tf.data.Dataset.from_tensor_slices(data).batch(batch))
        ours.adapt(SliceDataset.from_tensor_slices(data).batch(batch))
    return ours, theirs


def _same(ours, theirs):
    if isinstance(theirs, dict):
        assert sorted(ours) == sorted(theirs)
        for key in theirs:
            _same(ours[key], theirs[key])
        return
    want = np.asarray(theirs)
    got = np.asarray(ours)
    assert got.shape == want.shape
    assert got.dtype.kind == want.dtype.kind
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


PRESETS = {
    "float": lambda FS: "float",
    "float_normalized": lambda FS: "float_normalized",
    "float_rescaled": lambda FS: FS.float_rescaled(scale=0.5, offset=-1.0),
    "float_discretized": lambda FS: FS.float_discretized(num_bins=5),
    "float_discretized_default_bins": lambda FS: "float_discretized",
    "integer_categorical": lambda FS: "integer_categorical",
    "integer_categorical_max_tokens_two_oov": lambda FS: FS.integer_categorical(max_tokens=4, num_oov_indices=2),
    "integer_categorical_no_oov_int": lambda FS: FS.integer_categorical(num_oov_indices=0, output_mode="int"),
    "string_categorical": lambda FS: "string_categorical",
    "string_categorical_max_tokens": lambda FS: FS.string_categorical(max_tokens=3),
    "integer_hashed": lambda FS: FS.integer_hashed(num_bins=7),
    "string_hashed": lambda FS: "string_hashed",
}
COLUMN = {"float": "f", "float_normalized": "n", "float_rescaled": "r", "float_discretized": "d",
          "float_discretized_default_bins": "d", "integer_categorical": "i",
          "integer_categorical_max_tokens_two_oov": "i", "integer_categorical_no_oov_int": "i",
          "string_categorical": "s", "string_categorical_max_tokens": "s", "integer_hashed": "k",
          "string_hashed": "h"}


@pytest.mark.parametrize("preset", sorted(PRESETS))
@pytest.mark.parametrize("batch", [16, None], ids=["batched", "dict"])
def test_each_feature_type_encodes_as_keras(preset, batch):
    col = COLUMN[preset]
    data = {col: _data()[col]}
    mode = "dict" if preset.endswith("_int") else "concat"

    def make(FS):
        return FS({col: PRESETS[preset](FS)}, output_mode=mode, hashing_dim=16)

    ours, theirs = _adapt_both(make, data, batch)
    _same(ours(data), theirs(data))
    single = {col: data[col][5]}
    _same(ours(single), theirs(single))
    if preset != "integer_categorical_no_oov_int":  # unseen values: an error with no OOV index, in both
        unseen = {col: _unseen()[col]}
        _same(ours(unseen), theirs(unseen))
    got, want = ours.get_encoded_features(), theirs.get_encoded_features()
    if mode == "concat":
        assert got.shape == want.shape


CROSSED = ("s", "i", "d", "h", "n", "k")


def _crossed(FS, output_mode="concat"):
    int_cross = output_mode == "dict"
    return FS({"s": "string_categorical", "i": "integer_categorical", "d": FS.float_discretized(num_bins=4),
               "h": "string_hashed", "n": "float_normalized", "k": FS.integer_hashed(num_bins=5)},
              crosses=[("s", "i"), FS.cross(("d", "h"), crossing_dim=16), ("k", "i"),
                       FS.cross(("s", "d"), crossing_dim=8, output_mode="int" if int_cross else "one_hot")],
              crossing_dim=24, hashing_dim=8, output_mode=output_mode)


@pytest.mark.parametrize("output_mode", ["concat", "dict"])
def test_crosses_and_the_order_of_the_concatenation_as_keras(output_mode):
    data = {k: v for k, v in _data().items() if k in CROSSED}
    ours, theirs = _adapt_both(lambda FS: _crossed(FS, output_mode), data, batch=32)
    _same(ours(data), theirs(data))
    unseen = {k: v for k, v in _unseen().items() if k in CROSSED}
    _same(ours(unseen), theirs(unseen))
    one = {k: v[0] for k, v in data.items()}
    _same(ours(one), theirs(one))
    got, want = ours.get_encoded_features(), theirs.get_encoded_features()
    if output_mode == "dict":
        assert sorted(got) == sorted(want)
        assert {k: tuple(v.shape) for k, v in got.items()} == {k: tuple(v.shape) for k, v in want.items()}
    else:
        assert tuple(got.shape) == tuple(want.shape)


def test_an_end_to_end_model_predicts_as_keras_with_the_same_weights():
    data = {k: v for k, v in _data().items() if k in CROSSED}
    ours_fs, theirs_fs = _adapt_both(_crossed, data)

    def model(lib, fs):
        inputs = fs.get_inputs()
        out = lib.layers.Dense(1, activation="sigmoid")(fs.get_encoded_features())
        return lib.Model(inputs, out)

    ours, theirs = model(ff, ours_fs), model(keras, theirs_fs)
    ours.layers[-1].set_weights(theirs.layers[-1].get_weights())
    raw = {k: v for k, v in _unseen().items() if k in CROSSED}
    want = theirs.predict({k: tf.constant(v[:, None]) for k, v in raw.items()}, verbose=0)
    np.testing.assert_allclose(ours.predict(raw, verbose=0), want, rtol=1e-5, atol=1e-6)


def test_keras_files_load_both_ways(tmp_path):
    data = {k: v for k, v in _data().items() if k in CROSSED}
    unseen = {k: v for k, v in _unseen().items() if k in CROSSED}
    ours, theirs = _adapt_both(_crossed, data)
    ours.save(str(tmp_path / "ours.keras"))
    theirs.save(str(tmp_path / "theirs.keras"))
    ours_in_keras = keras.models.load_model(str(tmp_path / "ours.keras"))
    theirs_here = ff.models.load_model(str(tmp_path / "theirs.keras"))
    _same(ours_in_keras(data), theirs(data))
    _same(theirs_here(data), theirs(data))
    _same(theirs_here(unseen), theirs(unseen))


def test_a_custom_text_feature_as_keras_documents_it():
    """Keras' docstring example: FeatureSpace.feature with a TextVectorization in tf_idf mode, adapted on a
    dict of lists. The end-to-end model works here too (Keras 3.15's symbolic output is (None, 1, 7))."""
    data = {"text": ["1st string", "2nd string", "3rd string is longer string"]}

    def make(FS, lib):
        vectorize = lib.layers.TextVectorization(output_mode="tf_idf")
        return FS({"text": FS.feature(preprocessor=vectorize, dtype="string", output_mode="float")})

    theirs, ours = make(keras.utils.FeatureSpace, keras), make(ff.utils.FeatureSpace, ff)
    theirs.adapt(data)
    ours.adapt(data)
    _same(ours(data), theirs(data))
    model = ff.Model(ours.get_inputs(), ours.get_encoded_features())
    np.testing.assert_allclose(model.predict({"text": np.array(data["text"])}, verbose=0), theirs(data), rtol=1e-6)
