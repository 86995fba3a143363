"""A model that starts with host preprocessing, called on a symbolic string Input inside another model
(keras.io's recommenders: ``keras.Sequential([StringLookup(vocabulary=...), Embedding(...)])(user_input)``):
the outer model records the inner one's host steps in its own prefix and trains on the ids; before, the
outer model refused its string input."""

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras import config, layers

USERS, MOVIES = ["u1", "u2", "u3"], ["m1", "m2", "m3", "m4"]


@pytest.fixture(autouse=True)
def _one_processor(request):
    config.set(data_parallel_degree=1)
    request.addfinalizer(config.reset)


def _encoder(vocabulary, kind):
    lookup = layers.StringLookup(vocabulary=vocabulary, mask_token=None, num_oov_indices=0)
    if kind == "sequential":
        return keras.Sequential([lookup, layers.Embedding(len(vocabulary), 3)])
    inp = keras.Input(shape=(), dtype="string")
    return keras.Model(inp, layers.Embedding(len(vocabulary), 3)(lookup(inp)))


@pytest.mark.parametrize("kind", ["sequential", "functional"])
def test_encoders_called_on_string_inputs_train(kind):
    user, movie = keras.Input(name="user_id", shape=(), dtype="string"), keras.Input(name="movie_id", shape=(),
                                                                                   dtype="string")
    users, movies = _encoder(USERS, kind), _encoder(MOVIES, kind)
    dot = layers.Dot(axes=1)([users(user), movies(movie)])
    model = keras.Model([user, movie], dot)
    u, m = np.array(["u3", "u1", "u2", "u3"]), np.array(["m4", "m1", "m1", "m2"])
    tu, tm = users.get_weights()[0], movies.get_weights()[0]
    ui, mi = [USERS.index(s) for s in u], [MOVIES.index(s) for s in m]
    want = (tu[ui] * tm[mi]).sum(1, keepdims=True)
    np.testing.assert_allclose(model.predict({"user_id": u, "movie_id": m}, verbose=0), want, rtol=1e-5)
    model.compile(optimizer=keras.optimizers.SGD(0.5), loss="mse")
    loss = model.fit({"user_id": u, "movie_id": m}, np.ones((4, 1)), batch_size=4, epochs=1, verbose=0)
    np.testing.assert_allclose(loss.history["loss"][0], np.mean((want - 1) ** 2), rtol=1e-5)
    assert not np.allclose(users.get_weights()[0], tu)  # the inner model's table trained
    np.testing.assert_allclose(np.asarray(users(u)), users.get_weights()[0][ui], rtol=1e-6)  # eager still maps


def test_a_preprocessing_head_called_on_a_dict_of_inputs_as_the_csv_tutorial(tmp_path):
    """TensorFlow's CSV tutorial builds ``titanic_preprocessing = Model(inputs, concatenated)`` over a dict of
    numeric and string Inputs (StringLookup + CategoryEncoding), then calls it on that dict inside another
    model; the call looked the dict up by the graph's inner input names and refused it."""
    rng = np.random.default_rng(0)
    data = {"sex": rng.choice(["male", "female"], 40), "age": rng.uniform(1, 70, 40).astype("float32"),
            "town": rng.choice(["S", "C", "Q"], 40)}
    labels = rng.integers(0, 2, 40)
    inputs = {"sex": keras.Input((1,), name="sex", dtype="string"), "age": keras.Input((1,), name="age"),
              "town": keras.Input((1,), name="town", dtype="string")}
    norm = layers.Normalization()
    norm.adapt(data["age"][:, None])
    parts = [norm(inputs["age"])]
    for name in ("sex", "town"):
        lookup = layers.StringLookup(vocabulary=np.unique(data[name]))
        parts.append(layers.CategoryEncoding(num_tokens=lookup.vocabulary_size())(lookup(inputs[name])))
    head = keras.Model(inputs, layers.Concatenate()(parts))
    first = {k: v[:1] for k, v in data.items()}
    encoded = np.asarray(head(first))
    assert encoded.shape == (1, 1 + 3 + 4)
    body = keras.Sequential([layers.Dense(4, activation="relu"), layers.Dense(1)])
    model = keras.Model(inputs, body(head(inputs)))
    model.compile(loss=keras.losses.BinaryCrossentropy(from_logits=True), optimizer="adam")
    history = model.fit(data, labels, epochs=2, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    np.testing.assert_allclose(np.asarray(model(first)), np.asarray(body(encoded)), rtol=1e-5)
    model.save(tmp_path / "titanic.keras")
    reloaded = keras.models.load_model(tmp_path / "titanic.keras")
    np.testing.assert_allclose(np.asarray(reloaded(first)), np.asarray(model(first)), rtol=1e-6)
