"""summary(): Keras 3's table, compared character for character with tf.keras where installed."""

import numpy as np
import pytest

import flexflow_keras as ff
from flexflow_keras import layers, models


@pytest.fixture(autouse=True)
def _width(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")  # Keras and we both size the table from the terminal width


def capture(model, **kwargs):
    out = []
    model.summary(print_fn=out.append, **kwargs)
    assert len(out) == 1
    return out[0]


def seq(k):
    L = k.layers
    return k.Sequential([k.Input((28, 28, 1), name="img"), L.Conv2D(8, 3, activation="relu", name="conv"),
                         L.BatchNormalization(name="bn"), L.MaxPooling2D(name="pool"), L.Flatten(name="flat"),
                         L.Dropout(0.5, name="drop"), L.Dense(10, activation="softmax", name="probs")],
                        name="cnn")


def func(k):
    L = k.layers
    a, b = k.Input((32,), name="left"), k.Input((16,), name="right")
    shared = L.Dense(8, name="shared_dense_with_a_long_name")
    inner = k.Sequential([k.Input((16,)), L.Dense(8, name="inner_dense"), L.ReLU(name="inner_relu")], name="inner")
    h = L.concatenate([shared(a), L.Dense(8, name="db")(inner(b))], name="concat")
    return k.Model([a, b], [L.Dense(2, name="out1")(h), L.Dense(1, name="out2")(h)], name="two_heads")


def test_sequential_summary_text():
    text = capture(seq(ff))
    lines = text.splitlines()
    assert lines[0] == 'Model: "cnn"'
    assert lines[1] == "┏" + "━" * 33 + "┳" + "━" * 24 + "┳" + "━" * 15 + "┓"
    assert lines[2] == "┃ Layer (type)                    ┃ Output Shape           ┃       Param # ┃"
    assert "│ conv (Conv2D)                   │ (None, 26, 26, 8)      │            80 │" in lines
    assert "│ probs (Dense)                   │ (None, 10)             │        13,530 │" in lines
    assert lines[-3] == " Total params: 13,642 (53.29 KB)"
    assert lines[-2] == " Trainable params: 13,626 (53.23 KB)"
    assert lines[-1] == " Non-trainable params: 16 (64.00 B)"
    assert text.endswith("\n")


def test_functional_summary_has_connections_and_wraps():
    text = capture(func(ff))
    assert "┃ Layer (type)        ┃ Output Shape      ┃    Param # ┃ Connected to      ┃" in text
    assert "│ concat              │ (None, 16)        │          0 │ shared_dense_wit… │" in text
    assert "│ left (InputLayer)   │ (None, 32)        │          0 │ -                 │" in text


def test_summary_prints_to_stdout_and_unbuilt(capsys):
    m = models.Sequential([layers.Dense(4, name="a"), layers.Dense(2, name="b")], name="lazy")
    m.summary()
    out = capsys.readouterr().out
    assert 'Model: "lazy"' in out and "│ a (Dense)                       │ ?                      │   0 (unbuilt) │" in out
    assert " Total params: 0 (0.00 B)" in out


def test_summary_of_subclassed_model_and_options():
    class Net(models.Model):
        def __init__(self):
            super().__init__(name="net")
            self.d1 = layers.Dense(4, name="d1")
            self.d2 = layers.Dense(2, name="d2")

        def call(self, x):
            return self.d2(self.d1(x))

    net = Net()
    net(np.ones((1, 3), "float32"))
    text = capture(net, show_trainable=True)
    assert "Trai…" in text and "d1 (Dense)" in text and " Total params: 26 (104.00 B)" in text
    text = capture(seq(ff), layer_range=["conv", "pool"], line_length=60)
    assert "flat" not in text and "pool (MaxPooling2D)" in text
    assert max(len(line) for line in text.splitlines()) == 60


@pytest.mark.tf
@pytest.mark.parametrize("build", [seq, func])
@pytest.mark.parametrize("kwargs", [{}, {"show_trainable": True}, {"line_length": 70}, {"expand_nested": True}])
def test_summary_matches_tf_keras(build, kwargs):
    tf = pytest.importorskip("tensorflow")
    ours, theirs = build(ff), build(tf.keras)
    ours.layers[1].trainable = False
    theirs.layers[1].trainable = False
    assert capture(ours, **kwargs) == capture(theirs, **kwargs)
