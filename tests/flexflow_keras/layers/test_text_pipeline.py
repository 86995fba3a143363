"""Text pipelines as keras.io writes them: text_dataset_from_directory, TextVectorization adapted on a
mapped dataset, training on ds.map(vectorize), an "end-to-end" model on a string Input (layers/
host_prefix.py), lookups on an integer Input, and tf.strings (tf_strings.py) under the runner."""

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras import tf_compat, tf_strings
from flexflow_keras.errors import DataError, GraphError

GOOD, BAD = "good great fine superb".split(), "bad awful poor dull".split()
FILL = "the film was a and plot it".split()


@pytest.fixture()
def folder(tmp_path):
    rng = np.random.default_rng(0)
    for label, words in (("neg", BAD), ("pos", GOOD)):
        (tmp_path / label).mkdir()
        for i in range(40):
            toks = list(rng.choice(FILL, 8)) + list(rng.choice(words, 3))
            rng.shuffle(toks)
            (tmp_path / label / f"{i}.txt").write_text(" ".join(toks).capitalize() + ".<br />The END!")
    (tmp_path / "pos" / "notes.md").write_text("not a text file of the dataset")
    return tmp_path


def test_text_dataset_from_directory(folder):
    train, val = keras.utils.text_dataset_from_directory(folder, batch_size=16, validation_split=0.25,
                                                         subset="both", seed=7)
    assert train.class_names == ["neg", "pos"] and len(train.file_paths) == 60 and len(val.file_paths) == 20
    assert not set(train.file_paths) & set(val.file_paths)
    texts, labels = next(iter(train))
    assert texts.shape == (16,) and isinstance(texts.numpy()[0], bytes) and labels.dtype == np.int32
    by_path = {p: ("pos" in p.split("/")[-2]) for p in train.file_paths}
    assert sum(by_path.values()) == sum(int(v) for _, y in train for v in np.asarray(y))
    short = keras.utils.text_dataset_from_directory(folder, batch_size=None, max_length=5, shuffle=False,
                                                    label_mode="categorical")
    text, label = next(iter(short))
    assert len(text.numpy()) <= 5 and label.shape == (2,)
    (folder / "notes").mkdir()
    (folder / "notes" / "a.md").write_text("markdown")
    with pytest.raises(DataError, match="holds no text files"):
        keras.utils.text_dataset_from_directory(folder / "notes", labels=None)
    with pytest.raises(DataError, match="does not exist"):
        keras.utils.text_dataset_from_directory(folder / "missing")


def _vectorizer():
    return keras.layers.TextVectorization(max_tokens=40, output_sequence_length=16,
                                          standardize=lambda x: np.char.replace(np.char.lower(x), "<br />", " "))


def test_adapt_on_a_mapped_dataset_and_train_on_the_vectorized_one(folder):
    raw = keras.utils.text_dataset_from_directory(folder, batch_size=16, seed=1)
    vec = _vectorizer()
    with pytest.raises(DataError, match=r"map the dataset to them first"):
        vec.adapt(raw)
    vec.adapt(raw.map(lambda x, y: x))
    vocab = vec.get_vocabulary()
    assert vocab[:2] == ["", "[UNK]"] and "good" in vocab and "end!" in vocab
    train = raw.map(lambda x, y: (vec(x), y))
    model = keras.Sequential([keras.Input((16,), dtype="int64"), keras.layers.Embedding(40, 8),
                              keras.layers.GlobalAveragePooling1D(), keras.layers.Dense(1, activation="sigmoid")])
    model.compile(keras.optimizers.Adam(0.02), "binary_crossentropy", metrics=["accuracy"])
    hist = model.fit(train, epochs=12, verbose=0).history
    assert hist["loss"][-1] < hist["loss"][0] - 0.2 and hist["accuracy"][-1] > 0.9


def test_end_to_end_model_on_strings(folder):
    raw = keras.utils.text_dataset_from_directory(folder, batch_size=16, shuffle=False)
    vec = _vectorizer()
    vec.adapt(raw.map(lambda x, y: x))
    inner = keras.Sequential([keras.Input((16,), dtype="int64"), keras.layers.Embedding(40, 8),
                              keras.layers.GlobalAveragePooling1D(), keras.layers.Dense(1, activation="sigmoid")])
    inner.compile("adam", "binary_crossentropy")
    strings = keras.Input(shape=(1,), dtype="string")
    end = keras.Model(strings, inner(vec(strings)))
    end.compile("adam", "binary_crossentropy", metrics=["accuracy"])
    texts = np.array([["a good film"], ["awful and dull"], ["THE END"]])
    want = inner.predict(np.asarray(vec(texts)), verbose=0)
    np.testing.assert_allclose(end.predict(texts, verbose=0), want, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(end(texts)), want, rtol=1e-6)
    on_strings = end.evaluate(raw, verbose=0, return_dict=True)
    on_ids = inner.evaluate(raw.map(lambda x, y: (vec(x), y)), verbose=0)
    assert on_strings["loss"] == pytest.approx(on_ids, rel=1e-6)
    hist = end.fit(raw, epochs=8, verbose=0, validation_data=raw).history  # trains the shared inner model
    assert hist["loss"][-1] < hist["loss"][0] and "val_accuracy" in hist


def test_host_layers_refuse_what_they_cannot_take():
    vec = keras.layers.TextVectorization(vocabulary=["a"], output_sequence_length=2)
    dense_out = keras.layers.Dense(2)(keras.Input((3,)))
    with pytest.raises(GraphError, match="runs on the host"):
        vec(dense_out)
    strings = keras.Input(shape=(1,), dtype="string")
    with pytest.raises(GraphError, match="holds strings"):
        keras.Model(strings, keras.layers.Dense(1)(keras.Input((3,))))
    with pytest.raises(DataError, match="takes strings"):
        vec(np.array([1, 2]))


@pytest.mark.parametrize("kind", ["functional", "sequential"])
def test_models_with_host_layers_save_and_load(tmp_path, kind):
    """The file holds the string input and the host layers (vocabulary in their config), as Keras writes
    them: loading gives a model that takes strings again (here and in tf.keras)."""
    vec = keras.layers.TextVectorization(max_tokens=20, output_sequence_length=6)
    vec.adapt(np.array(["a good film", "a bad film", "good good"]))
    inner = keras.Sequential([keras.Input((6,), dtype="int64"), keras.layers.Embedding(20, 4),
                              keras.layers.GlobalAveragePooling1D(), keras.layers.Dense(1)])
    if kind == "functional":
        strings = keras.Input(shape=(1,), dtype="string")
        model = keras.Model(strings, inner(vec(strings)))
        texts = np.array([["a good film"], ["bad"]])
    else:
        model = keras.Sequential([vec, inner, keras.layers.Activation("sigmoid")])
        texts = np.array(["a good film", "bad"])
    want = model.predict(texts, verbose=0)
    model.save(tmp_path / "m.keras")
    again = keras.models.load_model(tmp_path / "m.keras")
    np.testing.assert_allclose(again.predict(texts, verbose=0), want, rtol=1e-6)
    host = [la for la in again.layers if isinstance(la, keras.layers.TextVectorization)]
    assert len(host) == 1 and host[0].get_vocabulary() == vec.get_vocabulary()
    tf = pytest.importorskip("tensorflow")
    theirs = pytest.importorskip("keras").models.load_model(tmp_path / "m.keras")
    np.testing.assert_allclose(theirs.predict(tf.constant(texts), verbose=0), want, rtol=1e-5)


def test_integer_lookup_in_front_of_a_model():
    codes = keras.Input(shape=(1,), dtype="int64")
    lookup = keras.layers.IntegerLookup(output_mode="one_hot")
    lookup.adapt(np.array([3, 7, 7, 9, 3, 3]))
    out = keras.layers.Dense(1, activation="sigmoid")(lookup(codes))
    model = keras.Model(codes, out)
    model.compile(keras.optimizers.SGD(0.5), "binary_crossentropy")
    x, y = np.array([[3], [7], [9], [42]] * 8), np.array([1, 0, 1, 0] * 8, np.float32)
    hist = model.fit(x, y, epochs=20, batch_size=8, verbose=0).history
    assert hist["loss"][-1] < 0.4 * hist["loss"][0]
    assert model.predict(np.array([[3], [42]]), verbose=0).shape == (2, 1)


def test_tf_strings():
    assert tf_compat.mapped_call("tf.strings.regex_replace") is tf_strings.regex_replace
    assert tf_compat.mapped_call("tf.strings.no_such") is None
    b = np.array([b"A<br />B\xc3\x89", b"x"], dtype=object)
    out = tf_strings.regex_replace(tf_strings.lower(b), "<br />", " ")
    assert out.numpy().tolist() == [b"a b\xc3\x89", b"x"]  # bytes in, bytes out; ASCII-only lower
    assert tf_strings.lower("É", encoding="utf-8").numpy() == "é".encode()
    assert tf_strings.regex_replace(np.array(["aaa"]), "a", "b", replace_global=False).tolist() == [b"baa"]
    assert tf_strings.regex_replace("ab", "(a)(b)", r"\2\1").numpy() == b"ba"
    assert [p.tolist() for p in tf_strings.split(np.array(["a  b", " c "]))] == [[b"a", b"b"], [b"c"]]
    assert tf_strings.reduce_join(np.array([["a", "b"], ["c", "d"]]), axis=-1, separator="-").tolist() == [b"a-b",
                                                                                                           b"c-d"]
    assert tf_strings.length(np.array(["é", "ab"])).tolist() == [2, 2]
    assert tf_strings.length(np.array(["é"]), unit="UTF8_CHAR").tolist() == [1]
    np.testing.assert_array_equal(tf_strings.to_number(np.array(["1.5", " 2"])), [1.5, 2.0])
    assert tf_strings.strip(np.array([" a\n"])).tolist() == [b"a"]  # str in: bytes out, as TensorFlow's .numpy()
    assert tf_strings.substr(np.array(["hello"]), 1, 3).tolist() == [b"ell"]
    assert tf_strings.join([np.array(["a", "b"]), np.array(["x", "y"])], separator="/").tolist() == [b"a/x", b"b/y"]
    with pytest.raises(TypeError, match="expects strings"):
        tf_strings.lower(np.array([1.0]))


def test_sequential_export_model_as_the_tensorflow_tutorial_writes_it():
    vec = keras.layers.TextVectorization(max_tokens=20, output_sequence_length=6)
    vec.adapt(np.array(["a good film", "a bad film", "good good"]))
    model = keras.Sequential([keras.layers.Embedding(20, 4), keras.layers.GlobalAveragePooling1D(),
                              keras.layers.Dense(1)])
    model.compile("adam", "mse")
    texts = np.array(["a good film", "bad"])
    logits = model.predict(np.asarray(vec(texts)), verbose=0)
    export = keras.Sequential([vec, model, keras.layers.Activation("sigmoid")])
    export.compile(loss="binary_crossentropy", optimizer="adam", metrics=["accuracy"])
    probs = 1 / (1 + np.exp(-logits))
    np.testing.assert_allclose(export.predict(texts, verbose=0), probs, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(export(texts)), probs, rtol=1e-5)
    loss, acc = export.evaluate(texts, np.array([1, 0]), verbose=0)
    want = -np.mean(np.log([probs[0, 0], 1 - probs[1, 0]]))
    assert loss == pytest.approx(want, rel=1e-5)


SCRIPT = """
import re, string
import numpy as np
import tensorflow as tf
from tensorflow import keras

def standardize(x):
    x = tf.strings.regex_replace(tf.strings.lower(x), "<br />", " ")
    return tf.strings.regex_replace(x, f"[{re.escape(string.punctuation)}]", "")

raw = keras.utils.text_dataset_from_directory(r"FOLDER", batch_size=16, seed=3)
vec = keras.layers.TextVectorization(max_tokens=40, output_sequence_length=16, standardize=standardize)
vec.adapt(raw.map(lambda x, y: x))
train = raw.map(lambda x, y: (vec(tf.expand_dims(x, -1)), y))
inp = keras.Input(shape=(None,), dtype="int64")
h = keras.layers.GlobalAveragePooling1D()(keras.layers.Embedding(40, 8)(inp))
model = keras.Model(inp, keras.layers.Dense(1, activation="sigmoid")(h))
model.compile(optimizer=keras.optimizers.Adam(0.02), loss="binary_crossentropy", metrics=["accuracy"])
model.fit(train, epochs=10, verbose=0)
strings = keras.Input(shape=(1,), dtype=tf.string)
end = keras.Model(strings, model(vec(strings)))
p = end.predict(tf.constant([["A superb, GREAT film"], ["awful and dull<br />"]]), verbose=0)
print("RESULT", float(p[0, 0]), float(p[1, 0]), vec.get_vocabulary()[2])
"""


def test_a_keras_io_text_script_under_the_runner(folder, tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    script = tmp_path / "text.py"
    script.write_text(SCRIPT.replace("FOLDER", str(folder)))
    env = dict(os.environ, PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-m", "flexflow_keras", str(script)], capture_output=True, text=True,
                          env=env, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    line = next(s for s in proc.stdout.splitlines() if s.startswith("RESULT"))
    good, bad, word = line.split()[1:]
    assert float(good) > 0.7 > 0.3 > float(bad) and word in FILL + ["end"]


def test_structured_data_with_lookups_on_named_inputs():
    """keras.io's structured data classification: a dict dataset, StringLookup / IntegerLookup adapted on
    one feature each (output_mode="binary", Keras 2's name), Normalization, named Inputs of (1,)."""
    from flexflow_keras.data.slices import SliceDataset

    rng = np.random.default_rng(0)
    n = 96
    thal = rng.choice(["normal", "fixed", "reversible"], n)
    sex = rng.integers(0, 2, n)
    age = rng.normal(50, 10, n).astype("float32")
    y = ((thal == "fixed") | (sex == 1)).astype("float32")
    ds = SliceDataset.from_tensor_slices(({"thal": thal, "sex": sex, "age": age}, y)).batch(16)

    def encode(feature, name, cls):
        lookup = cls(output_mode="binary")
        lookup.adapt(ds.map(lambda x, _y: x[name]).map(lambda x: np.expand_dims(x, -1)))
        return lookup(feature)

    inputs = {"thal": keras.Input((1,), name="thal", dtype="string"), "sex": keras.Input((1,), name="sex",
                                                                                     dtype="int64"),
              "age": keras.Input((1,), name="age")}
    norm = keras.layers.Normalization()
    norm.adapt(age[:, None])
    feats = keras.layers.concatenate([encode(inputs["thal"], "thal", keras.layers.StringLookup),
                                      encode(inputs["sex"], "sex", keras.layers.IntegerLookup), norm(inputs["age"])])
    model = keras.Model(list(inputs.values()), keras.layers.Dense(1, activation="sigmoid")(feats))
    model.compile(keras.optimizers.Adam(0.05), "binary_crossentropy", metrics=["accuracy"])
    hist = model.fit(ds, epochs=15, verbose=0).history
    assert hist["accuracy"][-1] > 0.95
    p = model.predict({"thal": np.array(["fixed", "normal"]), "sex": np.array([0, 0]), "age": np.array([50.0, 50.0])},
                      verbose=0)
    assert p[0, 0] > 0.5 > p[1, 0]


def test_host_models_on_reiterables_dict_keys_and_predict_on_batch():
    lookup = keras.layers.StringLookup(vocabulary=["red", "blue"], output_mode="one_hot")
    color, size = keras.Input((1,), dtype="string", name="color_in"), keras.Input((1,), name="size_in")
    model = keras.Model({"color": color, "size": size},
                        keras.layers.Dense(1)(keras.layers.concatenate([lookup(color), size])))
    model.compile("sgd", "mse")
    x = {"color": np.array([["red"], ["blue"], ["green"], ["red"]]), "size": np.ones((4, 1), "float32")}
    want = model.predict(x, verbose=0)  # keyed as the model's dict, not by Input name
    np.testing.assert_allclose(model.predict_on_batch(x), want, rtol=1e-6)

    class Batches:  # re-iterable, not a PyDataset: one pass per epoch
        def __iter__(self):
            return iter([(x, np.zeros((4, 1), "float32"))] * 2)

    assert len(model.fit(Batches(), epochs=3, steps_per_epoch=2, verbose=0).history["loss"]) == 3


def test_text_vectorization_without_split_reads_a_1d_input_as_one_document():
    vec = keras.layers.TextVectorization(standardize="lower", split=None, output_mode="multi_hot",
                                         vocabulary=["a", "b", "c"])
    np.testing.assert_array_equal(np.asarray(vec(np.array(["A", "c", "z"]))), [1, 1, 0, 1])


def test_only_the_host_calls_a_model_reads_are_its_prefix():
    vec = keras.layers.TextVectorization(vocabulary=["a", "b"], output_sequence_length=3)
    model = keras.Sequential()
    for layer in (keras.Input((1,), dtype="string"), vec, keras.layers.Embedding(4, 2),
                  keras.layers.GlobalAveragePooling1D(), keras.layers.Dense(1)):
        model.add(layer)  # each add rebuilds the stack and calls vec again
    assert len(model._host_prefix.steps) == 1 and len(model._inputs) == 1
    strings = keras.Input((1,), dtype="string")
    vec(strings)  # a stale call (a notebook cell run twice)
    m = keras.Model(strings, keras.layers.Dense(1)(vec(strings)))
    assert len(m._host_prefix.steps) == 1
    assert m.predict(np.array([["a b"]]), verbose=0).shape == (1, 1)


def test_tf_keras_files_with_adapted_lookups_load_with_their_vocabularies(tmp_path):
    """tf.keras writes an adapted layer's vocabulary as an asset file (the config says None)."""
    tk = pytest.importorskip("keras")
    tf = pytest.importorskip("tensorflow")
    vec = tk.layers.TextVectorization(max_tokens=20, output_mode="multi_hot")
    vec.adapt(["a good film", "a bad film", "good good"])
    ids = tk.layers.StringLookup()
    ids.adapt(["x", "y", "x"])
    text, word = tk.Input(shape=(1,), dtype="string"), tk.Input(shape=(1,), dtype="string")
    out = tk.layers.Dense(1)(vec(text))
    theirs = tk.Model(text, out)
    theirs.save(tmp_path / "t.keras")
    tk.Model(word, ids(word)).save(tmp_path / "ids.keras")
    ours = keras.models.load_model(tmp_path / "t.keras")
    texts = np.array([["a good film"], ["bad bad"]])
    np.testing.assert_allclose(ours.predict(texts, verbose=0), theirs.predict(tf.constant(texts), verbose=0),
                               rtol=1e-5)
    lookup = keras.models.load_model(tmp_path / "ids.keras")
    np.testing.assert_array_equal(lookup.predict(np.array([["y"], ["x"], ["q"]]), verbose=0).ravel(), [2, 1, 0])
