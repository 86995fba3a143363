"""Config round trips for every exported layer class, found by looking at `keras.layers` (so a layer
added later is covered, or flagged when it needs constructor arguments nobody wrote down): get_config ->
from_config, layers.serialize -> deserialize (through JSON), and a one-layer model through
`to_json` -> `model_from_json` that computes the same outputs with the same weights. With TensorFlow
installed, tf.keras rebuilds each layer from our config (parity of the config format)."""

import inspect
import json

import numpy as np
import pytest

import flexflow_keras as ff
from flexflow_keras import layers
from flexflow_keras.layers import Layer


@ff.utils.register_keras_serializable(package="layer_config_tests")
def _double(x):
    return x * 2.0


# Constructor arguments of layers that need some. A new layer whose required arguments are not
# guessed by _GUESS fails test_every_layer_can_be_constructed: add a line here.
REQUIRED = {
    "Activation": {"activation": "tanh"},
    "Dense": {"units": 3},
    "Embedding": {"input_dim": 10, "output_dim": 4},
    "Lambda": {"function": _double},
    "Permute": {"dims": (2, 1)},
    "Reshape": {"target_shape": (-1,)},
    "Dropout": {"rate": 0.3},
    "CategoryEncoding": {"num_tokens": 5, "output_mode": "one_hot"},
    "Dot": {"axes": 1},
    "GroupedQueryAttention": {"head_dim": 2, "num_query_heads": 2, "num_key_value_heads": 1},
    "GroupNormalization": {"groups": 2},  # Keras' default 32 groups do not divide the small test inputs
    "Hashing": {"num_bins": 8, "mask_value": "", "salt": [3, 5]},
    "HashedCrossing": {"num_bins": 8},
    "Discretization": {"bin_boundaries": [0.0, 1.5]},
    "EinsumDense": {"equation": "...b,bc->...c", "output_shape": 3, "bias_axes": "c", "activation": "relu"},
}
# Layers wrapping another: the wrapped layer each needs (made fresh for every construction).
WRAPPED = {"Bidirectional": lambda: layers.LSTM(2), "RNN": lambda: layers.LSTMCell(2),
           "StackedRNNCells": lambda: [layers.LSTMCell(2), layers.GRUCell(3)]}
# Cells run inside RNN layers (they take states): no one-layer model applies them to a plain tensor.
POSITIONAL = {"MultiHeadAttention", "GroupedQueryAttention"}  # called as layer(query, value), not on a list
CELLS = {"SimpleRNNCell", "LSTMCell", "GRUCell", "StackedRNNCells"}
HOST = {"IntegerLookup", "StringLookup", "TextVectorization", "Discretization", "HashedCrossing",
        "Hashing"}  # layers/host_layer.py
_GUESS = {"units": 3, "filters": 2, "kernel_size": 3, "rate": 0.3, "pool_size": 2, "size": 2, "n": 2,
          "output_dim": 4, "input_dim": 10, "num_heads": 2, "key_dim": 2, "padding": 1, "cropping": 1,
          "stddev": 0.1, "scale": 2.0, "offset": 0.0, "num_tokens": 5, "depth_multiplier": 1, "axis": -1,
          "target_shape": (-1,), "activation": "relu", "function": _double, "num_classes": 3,
          "mask_value": 0.0, "l1": 0.01, "l2": 0.01, "repeats": 2, "max_value": 6.0, "height": 4, "width": 4,
          "factor": 0.1, "height_factor": 0.1, "width_factor": 0.1}
NOT_LAYERS = {"Layer", "InputLayer", "InputSpec"}  # the base class, the model input, a spec


def _exported():
    out = {}
    for name in dir(layers):
        obj = getattr(layers, name)
        if inspect.isclass(obj) and issubclass(obj, Layer) and name not in NOT_LAYERS and not name.startswith("_"):
            out.setdefault(obj, name)  # aliases (MaxPool2D) share their class
    return sorted(out.items(), key=lambda kv: kv[1])


def _wrapped(cls):
    return WRAPPED.get(cls.__name__, lambda: layers.Dense(2))()


def _args(cls):
    required = REQUIRED.get(cls.__name__)
    if required is not None:
        return dict(required)
    args = {}
    for p in inspect.signature(cls.__init__).parameters.values():
        if p.name == "self" or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.default is not p.empty:
            continue
        if p.name in ("layer", "cell", "forward_layer", "cells"):
            args[p.name] = _wrapped(cls)
        elif p.name in _GUESS:
            args[p.name] = _GUESS[p.name]
        else:
            return None
    return args


CLASSES = _exported()
IDS = [name for _, name in CLASSES]


def _make(cls):
    args = _args(cls)
    if args is None:
        pytest.fail(f"{cls.__name__} needs constructor arguments this test cannot guess; add "
                    f"'{cls.__name__}': {{...}} to REQUIRED in {__file__}.")
    return cls(**args)


@pytest.mark.parametrize("cls", [c for c, _ in CLASSES], ids=IDS)
def test_every_layer_can_be_constructed_and_is_registered(cls):
    layer = _make(cls)
    assert layer.get_config()["name"] == layer.name
    entry = layers.serialize(layer)
    again = layers.deserialize(json.loads(json.dumps(entry)))  # found by name: registered in layers/__init__
    assert type(again) is cls


@pytest.mark.parametrize("cls", [c for c, _ in CLASSES], ids=IDS)
def test_get_config_from_config_round_trip(cls):
    layer = _make(cls)
    config = layer.get_config()
    json.dumps(config)  # JSON-serializable as it is
    again = cls.from_config(config)
    assert again.get_config() == config


_SHAPES = [((6,), "float32"), ((5, 4), "float32"), ((6, 6, 3), "float32"), ((4, 4, 4, 2), "float32"),
           ((5,), "int32"), ((5, 4), "int32")]


# Inputs of layers that need a particular kind (otherwise the shapes of _SHAPES are tried in order).
INPUTS = {"Embedding": ((5,), "int32"), "CategoryEncoding": ((4,), "int32"), "Dot": ((5,), "float32"),
          "ConvLSTM3D": ((2, 4, 4, 4, 2), "float32"), "STFTSpectrogram": ((300, 2), "float32")}


def _model_on_some_input(cls):
    """A functional model applying a fresh layer of `cls` to the first input it accepts: one tensor, or
    a list of two (merge layers)."""
    errors = []
    for shape, dtype in [INPUTS[cls.__name__]] if cls.__name__ in INPUTS else _SHAPES:
        for count in (1, 2):
            ff.backend.clear_session()
            layer = _make(cls)
            inputs = [ff.Input(shape, dtype=dtype) for _ in range(count)]
            try:
                out = (layer(*inputs) if cls.__name__ in POSITIONAL else
                       layer(inputs[0] if count == 1 else inputs))
            except (ValueError, TypeError, NotImplementedError) as e:  # this input does not suit the layer
                errors.append(f"{count} x {shape} {dtype}: {str(e).splitlines()[0] if str(e) else type(e).__name__}")
                continue
            return ff.Model(inputs[0] if count == 1 else inputs, out)
    pytest.fail(f"{cls.__name__} accepted none of the inputs tried (add it to INPUTS): {errors}")


def _data(model, rng):
    xs = []
    for t in model.inputs:
        shape = (3,) + tuple(t.shape[1:])
        xs.append(rng.integers(0, 5, shape).astype(t.dtype) if t.dtype.startswith("int")
                  else rng.standard_normal(shape).astype("float32"))
    return xs if len(xs) > 1 else xs[0]


@pytest.mark.parametrize("cls", [c for c, _ in CLASSES], ids=IDS)
def test_model_json_round_trip_computes_the_same(cls):
    if cls.__name__ in CELLS:
        pytest.skip(f"{cls.__name__} is a cell: it runs inside an RNN layer (covered by RNN's case)")
    if cls.__name__ in HOST:
        pytest.skip(f"{cls.__name__} runs on the host in front of the graph and takes strings or ids; models "
                    f"that start with it are saved and loaded in tests/flexflow_keras/layers/test_text_pipeline.py "
                    f"and test_hashing_discretization.py")
    model = _model_on_some_input(cls)
    text = model.to_json()
    again = ff.models.model_from_json(text)
    assert json.loads(again.to_json())["config"]["layers"][-1]["class_name"] == cls.__name__
    again.set_weights(model.get_weights())
    x = _data(model, np.random.default_rng(0))
    np.testing.assert_allclose(again.predict(x, verbose=0), model.predict(x, verbose=0), rtol=1e-6, atol=1e-6)


@pytest.mark.tf
@pytest.mark.parametrize("cls", [c for c, _ in CLASSES], ids=IDS)
def test_tf_keras_rebuilds_our_layer_config(cls):
    keras = pytest.importorskip("keras")
    pytest.importorskip("tensorflow")
    theirs_cls = getattr(keras.layers, cls.__name__, None)
    if theirs_cls is None:
        pytest.skip(f"keras.layers has no {cls.__name__}")
    layer = _make(cls)
    if cls.__name__ == "Lambda":
        pytest.skip("Keras refuses Lambda bytecode in safe mode; covered by our own round trip")
    config = json.loads(json.dumps(layer.get_config()))
    theirs = theirs_cls.from_config(config)
    assert theirs.name == layer.name
