"""Building layers leaves Python's global `random` where tf.keras 3.15 leaves it. Keras 3 takes the seed of
every unseeded random initializer, SeedGenerator and random layer from ``random.randint(1, 10**9)``
(`make_default_seed`), so a script's own ``random.shuffle`` / ``random.sample`` after building a model (of
its file list, its validation split) depends on how many draws the model made. Ours drew none: the same
script split its data otherwise than under tf.keras (the reviewer's leftover of stop 49). The weights
themselves still come from our generator (utils/rng.py)."""

import random

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
tk = pytest.importorskip("keras")

import flexflow_keras as ff  # noqa: E402

pytestmark = pytest.mark.tf

X2 = np.ones((2, 3), np.float32)
X3 = np.ones((2, 4, 3), np.float32)
X4 = np.ones((2, 6, 6, 3), np.float32)


def _draws(build) -> int:
    """How many randint(1, 10**9) draws of Python's random `build()` made."""
    random.seed(123)
    build()
    state = random.getstate()
    random.seed(123)
    for k in range(40):
        if random.getstate() == state:
            return k
        random.randint(1, int(1e9))
    raise AssertionError("Python's random moved by something other than 0-39 randint draws")


CASES = {
    "Dense": lambda K: K.layers.Dense(3),
    "Dense called": lambda K: K.layers.Dense(3)(X2),
    "Dense random bias": lambda K: K.layers.Dense(3, bias_initializer="random_normal"),
    "Dense seeded": lambda K: K.layers.Dense(3, kernel_initializer=K.initializers.HeNormal(seed=1)),
    "Conv2D called": lambda K: K.layers.Conv2D(2, 3)(X4),
    "SeparableConv2D": lambda K: K.layers.SeparableConv2D(2, 3),
    "Embedding": lambda K: K.layers.Embedding(10, 3),
    "BatchNormalization": lambda K: K.layers.BatchNormalization(),
    "Dropout": lambda K: K.layers.Dropout(0.5),
    "Dropout rate 0": lambda K: K.layers.Dropout(0.0),
    "Dropout seeded": lambda K: K.layers.Dropout(0.5, seed=3),
    "SpatialDropout2D": lambda K: K.layers.SpatialDropout2D(0.5),
    "GaussianNoise": lambda K: K.layers.GaussianNoise(0.1),
    "GaussianNoise 0": lambda K: K.layers.GaussianNoise(0.0),
    "GaussianDropout": lambda K: K.layers.GaussianDropout(0.1),
    "AlphaDropout": lambda K: K.layers.AlphaDropout(0.1),
    "LSTM": lambda K: K.layers.LSTM(3),
    "GRU called": lambda K: K.layers.GRU(3)(X3),
    "Bidirectional LSTM": lambda K: K.layers.Bidirectional(K.layers.LSTM(3)),
    "ConvLSTM2D": lambda K: K.layers.ConvLSTM2D(2, 3),
    "MultiHeadAttention": lambda K: K.layers.MultiHeadAttention(2, 4),
    "MultiHeadAttention called": lambda K: K.layers.MultiHeadAttention(2, 4)(X3, X3),
    "MultiHeadAttention dropout": lambda K: K.layers.MultiHeadAttention(2, 4, dropout=0.1)(X3, X3),
    "MultiHeadAttention random bias": lambda K: K.layers.MultiHeadAttention(
        2, 4, bias_initializer="random_normal")(X3, X3),
    "MultiHeadAttention seeded": lambda K: K.layers.MultiHeadAttention(
        2, 4, kernel_initializer=K.initializers.GlorotUniform(seed=3))(X3, X3),
    "GroupQueryAttention gate": lambda K: K.layers.GroupQueryAttention(4, 2, 2, use_gate=True, dropout=0.1)(X3, X3),
    "Attention": lambda K: K.layers.Attention(),
    "Attention dropout": lambda K: K.layers.Attention(dropout=0.1),
    "RandomFlip": lambda K: K.layers.RandomFlip(),
    "RandomRotation": lambda K: K.layers.RandomRotation(0.1),
    "RandomCrop": lambda K: K.layers.RandomCrop(4, 4),
    "CenterCrop": lambda K: K.layers.CenterCrop(4, 4),
    "Resizing": lambda K: K.layers.Resizing(4, 4),
    "GlorotUniform": lambda K: K.initializers.GlorotUniform(),
    "initializers.get": lambda K: K.initializers.get("orthogonal"),
    "SeedGenerator": lambda K: K.random.SeedGenerator(),
    "Sequential": lambda K: K.Sequential([K.Input((3,)), K.layers.Dense(4, activation="relu"), K.layers.Dropout(0.2),
                                          K.layers.Dense(2)]),
    "clone_model": lambda K: K.models.clone_model(K.Sequential([K.Input((3,)), K.layers.Dense(2)])),
    "clone_model RandomCrop": lambda K: K.models.clone_model(K.Sequential([K.Input((8, 8, 3)), K.layers.RandomCrop(4, 4)])),
    "RandomCrop from_config": lambda K: K.layers.RandomCrop.from_config(K.layers.RandomCrop(4, 4).get_config()),
}


@pytest.mark.parametrize("name", list(CASES))
def test_python_random_draws_as_tf_keras(name):
    want = _draws(lambda: CASES[name](tk))
    assert _draws(lambda: CASES[name](ff)) == want


def test_a_split_after_building_a_model_matches_tf_keras():
    """A notebook's order: seed, build and compile the model, then shuffle its file list."""
    def split(K):
        random.seed(42)
        model = K.Sequential([K.Input((8,)), K.layers.Dense(16, activation="relu"), K.layers.Dropout(0.3),
                              K.layers.Dense(4, activation="softmax")])
        model.compile("adam", "categorical_crossentropy")
        files = [f"img_{i}.png" for i in range(20)]
        random.shuffle(files)
        return files[:5]

    assert split(ff) == split(tk)


def test_the_weights_still_follow_our_seed():
    """The draws only move Python's random: a re-seed gives the same weights however it was left."""
    ff.utils.set_random_seed(7)
    a = ff.layers.Dense(3)
    a.build((None, 2))
    ff.utils.set_random_seed(7)
    random.seed(99)  # Python's state alone differs
    b = ff.layers.Dense(3)
    b.build((None, 2))
    np.testing.assert_array_equal(a.get_weights()[0], b.get_weights()[0])


def test_random_crop_keeps_its_drawn_seed_in_its_config_as_tf_keras():
    """Keras' RandomCrop(seed=None) stores the seed it drew as its config's `seed`; ours gave None, so its
    clones drew two more seeds from Python's random than tf.keras'. Ours is the seed it crops with."""
    layer = ff.layers.RandomCrop(4, 4)
    assert isinstance(tk.layers.RandomCrop(4, 4).get_config()["seed"], int)
    assert layer.get_config()["seed"] == layer._seed
    assert ff.layers.RandomCrop(4, 4, seed=3).get_config()["seed"] == 3
