"""keras.utils.FeatureSpace (utils/feature_space.py) on its own: the encoding's layout, the eager and symbolic
paths agreeing, an end-to-end model trained and predicting on dicts of raw values, datasets, configs and
.keras files, argument and data errors, and keras.io's "structured data classification with FeatureSpace"
under `python -m flexflow_keras`. Parity with tf.keras is in test_feature_space_tf.py."""

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras import backend
from flexflow_keras.data.slices import SliceDataset
from flexflow_keras.errors import ArgumentError, DataError

FeatureSpace = keras.utils.FeatureSpace


@pytest.fixture(autouse=True)
def _fresh_names():
    backend.clear_session()


def _data(n=120, seed=0):
    rng = np.random.default_rng(seed)
    thal = rng.choice(["normal", "fixed", "reversible"], n)
    sex = rng.integers(0, 2, n)
    age = rng.uniform(30, 75, n)
    chol = rng.normal(240, 40, n)
    y = ((thal == "reversible") ^ (sex == 1) ^ (age > 55)).astype("float32")
    return {"thal": thal, "sex": sex, "age": age, "chol": chol}, y


def _space(**kwargs):
    return FeatureSpace({"thal": "string_categorical", "sex": "integer_categorical",
                         "age": FeatureSpace.float_discretized(num_bins=4), "chol": "float_normalized"},
                        crosses=[("sex", "age"), FeatureSpace.cross(("thal", "sex"), crossing_dim=8)], **kwargs)


def test_the_layout_is_sorted_features_then_sorted_crosses():
    x, _ = _data()
    fs = _space(crossing_dim=16)
    fs.adapt(SliceDataset.from_tensor_slices(x).batch(32))
    out = fs(x)
    assert out.shape == (120, 4 + 1 + 3 + 4 + 16 + 8) and out.dtype == np.float32
    age, chol, sex, thal, sex_x_age, thal_x_sex = np.split(np.asarray(out), np.cumsum([4, 1, 3, 4, 16]), axis=1)
    assert (age.sum(1) == 1).all() and (sex.sum(1) == 1).all() and (thal.sum(1) == 1).all()
    assert (sex_x_age.sum(1) == 1).all() and (thal_x_sex.sum(1) == 1).all()
    assert chol.mean() == pytest.approx(0, abs=1e-5) and chol.std() == pytest.approx(1, abs=1e-3)
    assert thal[:, 0].sum() == 0  # the OOV column: every value was seen
    vocab = fs.preprocessors["thal"].get_vocabulary()
    np.testing.assert_array_equal(thal.argmax(1), [vocab.index(t) for t in x["thal"]])
    ids = np.asarray(fs.crossers["sex_X_age"]([fs.preprocessors["sex"](x["sex"][:, None]),
                                               fs.preprocessors["age"](x["age"][:, None].astype("float32"))]))
    np.testing.assert_array_equal(sex_x_age.argmax(1), ids[:, 0])
    single = fs({k: v[0] for k, v in x.items()})
    assert single.shape == (out.shape[1],)
    np.testing.assert_allclose(single, out[0], rtol=1e-6)


def test_dict_mode_and_int_outputs():
    x, _ = _data()
    fs = FeatureSpace({"thal": FeatureSpace.string_categorical(output_mode="int"), "sex": "integer_categorical",
                       "h": FeatureSpace.string_hashed(num_bins=5), "r": FeatureSpace.float_rescaled(2.0, 1.0),
                       "f": "float"},
                      crosses=[FeatureSpace.cross(("thal", "sex"), crossing_dim=8, output_mode="int")],
                      output_mode="dict")
    data = {"thal": x["thal"], "sex": x["sex"], "h": x["thal"], "r": x["age"], "f": x["chol"]}
    fs.adapt(data)
    out = fs(data)
    assert sorted(out) == ["f", "h", "r", "sex", "thal", "thal_X_sex"]
    assert out["thal"].shape == (120, 1) and out["thal"].dtype == np.int64
    assert out["h"].shape == (120, 5) and out["sex"].shape == (120, 3)
    np.testing.assert_allclose(out["r"][:, 0], x["age"] * 2 + 1, rtol=1e-6)
    np.testing.assert_allclose(out["f"][:, 0], x["chol"].astype("float32"))
    assert out["thal_X_sex"].dtype == np.int64 and out["thal_X_sex"].max() < 8
    one = fs({k: v[3] for k, v in data.items()})
    assert one["thal"].shape == (1,) and one["sex"].shape == (3,)
    symbolic = fs.get_encoded_features()
    assert sorted(symbolic) == sorted(out) and symbolic["h"].shape == (None, 5)
    with pytest.raises(ArgumentError, match="cannot concatenate feature 'thal'.*output_mode='dict'"):
        FeatureSpace({"thal": FeatureSpace.string_categorical(output_mode="int")}).adapt({"thal": x["thal"]})


def test_three_way_crosses_and_given_bin_boundaries():
    """Beyond Keras 3, whose HashedCrossing takes two features when called symbolically and whose
    FeatureSpace tries to adapt a Discretization given its boundaries (and fails)."""
    x, _ = _data()
    data = {k: x[k] for k in ("thal", "sex", "age")}
    fs = FeatureSpace({"thal": "string_categorical", "sex": "integer_categorical",
                       "age": FeatureSpace.float_discretized(num_bins=None, bin_boundaries=[40.0, 50.0, 60.0])},
                      crosses=[FeatureSpace.cross(("thal", "sex", "age"), crossing_dim=8)])
    fs.adapt(data)
    out = np.asarray(fs(data))
    assert out.shape == (120, 4 + 3 + 4 + 8)
    np.testing.assert_array_equal(out[:, :4].argmax(1), np.searchsorted([40, 50, 60], data["age"], side="right"))
    ids = keras.layers.HashedCrossing(8)([fs.preprocessors[k](data[k][:, None]) for k in ("thal", "sex", "age")])
    np.testing.assert_array_equal(out[:, 11:].argmax(1), np.asarray(ids)[:, 0])
    encoder = keras.Model(fs.get_inputs(), fs.get_encoded_features())
    np.testing.assert_allclose(encoder.predict(data, verbose=0), out)


def test_end_to_end_model_trains_on_raw_dicts_and_matches_the_eager_encoding():
    x, y = _data(240)
    fs = _space()
    fs.adapt(SliceDataset.from_tensor_slices(x).batch(32))
    inputs = fs.get_inputs()
    encoded = fs.get_encoded_features()
    assert set(inputs) == set(x) and encoded.shape == (None, fs(x).shape[1])
    hidden = keras.layers.Dense(16, activation="relu")(encoded)
    out = keras.layers.Dense(1, activation="sigmoid")(hidden)
    model = keras.Model(inputs, out)
    model.compile(optimizer=keras.optimizers.Adam(0.02), loss="binary_crossentropy")
    history = model.fit(x, y, batch_size=32, epochs=25, verbose=0)
    losses = history.history["loss"]
    assert losses[-1] < 0.75 * losses[0], losses
    trained_on_vectors = keras.Model(encoded, out)
    raw = {"thal": np.array(["fixed", "normal", "unseen"]), "sex": np.array([1, 0, 1]),
           "age": np.array([60, 40, 50]), "chol": np.array([233, 250, 190])}
    np.testing.assert_allclose(model.predict(raw, verbose=0), trained_on_vectors.predict(fs(raw), verbose=0),
                               rtol=1e-5, atol=1e-6)
    one = model.predict({k: np.array([v[0]]) for k, v in raw.items()}, verbose=0)
    np.testing.assert_allclose(one, model.predict(raw, verbose=0)[:1], rtol=1e-5, atol=1e-6)


def test_datasets_map_before_and_after_batch():
    x, y = _data(40)
    fs = _space()
    fs.adapt(SliceDataset.from_tensor_slices((x, y)).map(lambda f, _: f))  # single values: batched by 32
    whole = np.asarray(fs(x))
    per_element = SliceDataset.from_tensor_slices((x, y)).map(lambda f, t: (fs(f), t)).batch(16)
    per_batch = SliceDataset.from_tensor_slices((x, y)).batch(16).map(lambda f, t: (fs(f), t))
    for ds in (per_element, per_batch):
        got = np.concatenate([np.asarray(b[0]) for b in ds])
        np.testing.assert_allclose(got, whole, rtol=1e-6)
    unlabeled = SliceDataset.from_tensor_slices(x).batch(8).map(fs)
    assert next(iter(unlabeled)).shape == (8, whole.shape[1])


def test_config_round_trip_and_keras_file(tmp_path):
    x, _ = _data()
    fs = _space(name="heart")
    fs.adapt(x)
    config = fs.get_config()
    again = FeatureSpace.from_config(config)
    assert again.name == "heart" and again.get_config() != config  # Normalization is built by adapt
    again.build_from_config(fs.get_build_config())
    assert again.get_config() == config
    assert config["features"]["sex"]["class_name"] == "Feature"
    assert config["features"]["sex"]["config"]["preprocessor"]["class_name"] == "IntegerLookup"
    assert config["crosses"][1]["config"] == {"feature_names": ["thal", "sex"], "crossing_dim": 8,
                                              "output_mode": "one_hot"}
    path = str(tmp_path / "fs.keras")
    fs.save(path)
    loaded = keras.models.load_model(path)
    assert isinstance(loaded, FeatureSpace)
    np.testing.assert_allclose(loaded(x), fs(x), rtol=1e-6)
    with pytest.raises(ArgumentError, match="writes a .keras file"):
        fs.save(str(tmp_path / "fs.h5"))


def test_argument_errors():
    with pytest.raises(ArgumentError, match="non-empty dict"):
        FeatureSpace({})
    with pytest.raises(ArgumentError, match="unknown type 'float_normalised'"):
        FeatureSpace({"a": "float_normalised"})
    with pytest.raises(ArgumentError, match="output_mode must be one of"):
        FeatureSpace({"a": "float"}, output_mode="stack")
    with pytest.raises(ArgumentError, match=r"names \['b'\], which are not in features"):
        FeatureSpace({"a": "integer_categorical"}, crosses=[("a", "b")])
    with pytest.raises(ArgumentError, match="reads feature 'b'.*Normalization.*integers or strings"):
        FeatureSpace({"a": "integer_categorical", "b": "float_normalized"}, crosses=[("a", "b")])
    with pytest.raises(ArgumentError, match="two or more features"):
        FeatureSpace.cross(("a",), crossing_dim=4)
    with pytest.raises(ArgumentError, match="crossing_dim.*positive integer"):
        FeatureSpace.cross(("a", "b"), crossing_dim=0)
    with pytest.raises(ArgumentError, match="output_mode must be one of"):
        FeatureSpace.feature("float32", keras.layers.Normalization(), "multi_hot")
    fs = FeatureSpace({"a": FeatureSpace.feature("float32", keras.layers.Rescaling(2.0), "one_hot")})
    with pytest.raises(ArgumentError, match="'a' has output_mode='one_hot'.*must return integers"):
        fs({"a": np.array([1.0])})


def test_data_errors():
    x, y = _data(20)
    fs = _space()
    with pytest.raises(DataError, match="has not been adapted.*adapt"):
        fs(x)
    with pytest.raises(DataError, match="2-tuples.*ds.map"):
        fs.adapt(SliceDataset.from_tensor_slices((x, y)).batch(4))
    with pytest.raises(DataError, match=r"lack the features \['chol'\]"):
        fs.adapt({k: v for k, v in x.items() if k != "chol"})
    fs.adapt(x)
    with pytest.raises(DataError, match=r"missing \['age'\], unknown \['target'\]"):
        fs({"thal": x["thal"], "sex": x["sex"], "chol": x["chol"], "target": y})
    with pytest.raises(DataError, match="'chol' holds float32 numbers.*received values of dtype <U"):
        fs({**x, "chol": x["thal"]})
    with pytest.raises(DataError, match="called on a dict"):
        fs(np.zeros((2, 4)))
    with pytest.raises(DataError, match="get_encoded_features"):
        fs(fs.get_inputs())
    hashed = FeatureSpace({"h": "string_hashed"}, hashing_dim=4)  # nothing to adapt: usable at once
    assert hashed({"h": ["a", "b"]}).shape == (2, 4)


def _heart_csv(path, n=303, seed=0):
    """A heart.csv with the columns of keras.io's example (the Cleveland heart-disease data), synthetic."""
    rng = np.random.default_rng(seed)
    cols = {"age": rng.integers(29, 78, n), "sex": rng.integers(0, 2, n), "cp": rng.integers(0, 5, n),
            "trestbps": rng.integers(94, 200, n), "chol": rng.integers(126, 564, n), "fbs": rng.integers(0, 2, n),
            "restecg": rng.integers(0, 3, n), "thalach": rng.integers(71, 202, n), "exang": rng.integers(0, 2, n),
            "oldpeak": np.round(rng.uniform(0, 6.2, n), 1), "slope": rng.integers(1, 4, n),
            "ca": rng.integers(0, 4, n), "thal": rng.choice(["fixed", "normal", "reversible"], n)}
    score = 1.5 * (cols["thal"] == "reversible") + cols["exang"] + cols["oldpeak"] / 3 - (cols["thalach"] - 150) / 40
    cols["target"] = (score + rng.normal(0, 0.5, n) > 1.6).astype(int)
    lines = [",".join(cols)] + [",".join(str(cols[c][i]) for c in cols) for i in range(n)]
    path.write_text("\n".join(lines) + "\n")


# keras.io's example (examples/structured_data/structured_data_classification_with_feature_space.py), step by
# step with the same calls; only the CSV is a local synthetic file and the last line prints the losses.
SCRIPT = """
import tensorflow as tf
import pandas as pd
from tensorflow import keras

dataframe = pd.read_csv(r"CSV")
print(dataframe.shape)
val_dataframe = dataframe.sample(frac=0.2, random_state=1337)
train_dataframe = dataframe.drop(val_dataframe.index)

def dataframe_to_dataset(dataframe):
    dataframe = dataframe.copy()
    labels = dataframe.pop("target")
    ds = tf.data.Dataset.from_tensor_slices((dict(dataframe), labels))
    return ds.shuffle(buffer_size=len(dataframe))

train_ds = dataframe_to_dataset(train_dataframe)
val_ds = dataframe_to_dataset(val_dataframe)
for x, y in train_ds.take(1):
    print("Input:", x)
    print("Target:", y)
train_ds = train_ds.batch(32)
val_ds = val_ds.batch(32)

from keras.utils import FeatureSpace

feature_space = FeatureSpace(
    features={"sex": "integer_categorical", "cp": "integer_categorical", "fbs": "integer_categorical",
              "restecg": "integer_categorical", "exang": "integer_categorical", "ca": "integer_categorical",
              "thal": "string_categorical", "age": "float_discretized", "trestbps": "float_normalized",
              "chol": "float_normalized", "thalach": "float_normalized", "oldpeak": "float_normalized",
              "slope": "float_normalized"},
    crosses=[("sex", "age"), ("thal", "ca")], crossing_dim=32, output_mode="concat")
feature_space = FeatureSpace(
    features={"sex": FeatureSpace.integer_categorical(num_oov_indices=0),
              "cp": FeatureSpace.integer_categorical(num_oov_indices=0),
              "fbs": FeatureSpace.integer_categorical(num_oov_indices=0),
              "restecg": FeatureSpace.integer_categorical(num_oov_indices=0),
              "exang": FeatureSpace.integer_categorical(num_oov_indices=0),
              "ca": FeatureSpace.integer_categorical(num_oov_indices=0),
              "thal": FeatureSpace.string_categorical(num_oov_indices=0),
              "age": FeatureSpace.float_discretized(num_bins=30),
              "trestbps": FeatureSpace.float_normalized(), "chol": FeatureSpace.float_normalized(),
              "thalach": FeatureSpace.float_normalized(), "oldpeak": FeatureSpace.float_normalized(),
              "slope": FeatureSpace.float_normalized()},
    crosses=[FeatureSpace.cross(feature_names=("sex", "age"), crossing_dim=64),
             FeatureSpace.cross(feature_names=("thal", "ca"), crossing_dim=16)],
    output_mode="concat")

train_ds_with_no_labels = train_ds.map(lambda x, _: x)
feature_space.adapt(train_ds_with_no_labels)
for x, _ in train_ds.take(1):
    preprocessed_x = feature_space(x)
    print("preprocessed_x.shape:", preprocessed_x.shape)
    print("preprocessed_x.dtype:", preprocessed_x.dtype)

preprocessed_train_ds = train_ds.map(lambda x, y: (feature_space(x), y), num_parallel_calls=tf.data.AUTOTUNE)
preprocessed_train_ds = preprocessed_train_ds.prefetch(tf.data.AUTOTUNE)
preprocessed_val_ds = val_ds.map(lambda x, y: (feature_space(x), y), num_parallel_calls=tf.data.AUTOTUNE)
preprocessed_val_ds = preprocessed_val_ds.prefetch(tf.data.AUTOTUNE)

dict_inputs = feature_space.get_inputs()
encoded_features = feature_space.get_encoded_features()
x = keras.layers.Dense(32, activation="relu")(encoded_features)
x = keras.layers.Dropout(0.5)(x)
predictions = keras.layers.Dense(1, activation="sigmoid")(x)
training_model = keras.Model(inputs=encoded_features, outputs=predictions)
training_model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
inference_model = keras.Model(inputs=dict_inputs, outputs=predictions)
history = training_model.fit(preprocessed_train_ds, epochs=20, validation_data=preprocessed_val_ds, verbose=2)

sample = {"age": 60, "sex": 1, "cp": 1, "trestbps": 145, "chol": 233, "fbs": 1, "restecg": 2, "thalach": 150,
          "exang": 0, "oldpeak": 2.3, "slope": 3, "ca": 0, "thal": "fixed"}
input_dict = {name: tf.convert_to_tensor([value]) for name, value in sample.items()}
predictions = inference_model.predict(input_dict)
print(f"This particular patient had a {100 * predictions[0][0]:.2f}% probability "
      "of having a heart disease, as evaluated by our model.")
direct = training_model.predict(feature_space(sample)[None], verbose=0)
print("RESULT", history.history["loss"][0], history.history["loss"][-1], history.history["val_accuracy"][-1],
      predictions[0][0], direct[0][0])
"""


def test_the_keras_io_feature_space_script_under_the_runner(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    pytest.importorskip("pandas")
    root = Path(__file__).resolve().parents[3]
    _heart_csv(tmp_path / "heart.csv")
    script = tmp_path / "feature_space.py"
    script.write_text(SCRIPT.replace("CSV", str(tmp_path / "heart.csv")))
    env = dict(os.environ, PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-m", "flexflow_keras", str(script)], capture_output=True, text=True,
                          env=env, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "preprocessed_x.shape: (32, 136)" in proc.stdout
    line = next(s for s in proc.stdout.splitlines() if s.startswith("RESULT"))
    first, last, val_acc, prob, direct = (float(v) for v in line.split()[1:])
    assert last < 0.8 * first and val_acc > 0.7, line
    assert 0 < prob < 1 and prob == pytest.approx(direct, rel=1e-4)
    assert "probability of having a heart disease" in proc.stdout
