"""ConvLSTM1D/2D/3D against tf.keras: outputs on copied weights (return_sequences, return_state,
go_backwards, padding, strides, dilation, channels_first), Keras' initial bias, a next-frame model (keras.io's
conv_lstm, whose frames come in over an open time dim) trained 3 steps at data-parallel degrees 1 and 2,
.keras files both ways, and the clear errors for what is not built."""

import numpy as np
import pytest
from ff_layer_harness import run_layer_test

import flexflow_keras as ff
from flexflow_keras import layers


@pytest.mark.parametrize("cls,kwargs,shape,out_shape", [
    ("ConvLSTM2D", dict(filters=3, kernel_size=3), (2, 4, 7, 6, 2), (None, 5, 4, 3)),
    ("ConvLSTM2D", dict(filters=2, kernel_size=(3, 2), padding="same", return_sequences=True, go_backwards=True),
     (2, 3, 5, 6, 2), (None, 3, 5, 6, 2)),
    ("ConvLSTM2D", dict(filters=2, kernel_size=3, strides=2, activation="relu", recurrent_activation="hard_sigmoid"),
     (1, 3, 7, 7, 1), (None, 3, 3, 2)),
    ("ConvLSTM2D", dict(filters=2, kernel_size=2, dilation_rate=(2, 1), padding="same", use_bias=False),
     (2, 3, 6, 5, 3), (None, 6, 5, 2)),
    ("ConvLSTM1D", dict(filters=3, kernel_size=3, padding="same", return_sequences=True), (2, 4, 9, 2),
     (None, 4, 9, 3)),
    ("ConvLSTM3D", dict(filters=2, kernel_size=2), (1, 3, 3, 4, 4, 2), (None, 2, 3, 3, 2)),
])
def test_conv_lstm_matches_tf_keras(cls, kwargs, shape, out_shape, parity):
    layer, _, _ = run_layer_test(getattr(layers, cls), kwargs, input_shape=shape, expected_output_shape=out_shape,
                                 expected_num_weights=2 + kwargs.get("use_bias", True), compare_tf=parity,
                                 tf_layer=cls, atol=2e-5)
    assert [w.name for w in layer.weights][:2] == ["kernel", "recurrent_kernel"]


@pytest.mark.tf
def test_return_state_channels_first_and_the_forget_bias():
    tf = pytest.importorskip("tensorflow")
    x = np.random.default_rng(1).standard_normal((2, 3, 2, 5, 4)).astype("float32")  # channels_first frames
    kw = dict(filters=2, kernel_size=3, padding="same", return_state=True)
    # tf.keras on the frames moved to channels_last (its CPU Conv2D takes NCHW only where oneDNN is on: AVX-512
    # hosts); the kernels' layout is the same in both formats
    ours, theirs = layers.ConvLSTM2D(data_format="channels_first", **kw), tf.keras.layers.ConvLSTM2D(**kw)
    last = np.moveaxis(x, 2, -1)
    ours(x), theirs(last)
    np.testing.assert_array_equal(ours.get_weights()[2], theirs.get_weights()[2])  # 0 for i, 1 for f, 0 for c, o
    theirs.set_weights(ours.get_weights())
    for a, b in zip(ours(x), theirs(last), strict=True):
        np.testing.assert_allclose(a, np.moveaxis(np.asarray(b), -1, 1), rtol=1e-5, atol=1e-5)


def _next_frame(k, seed=0):
    """keras.io's conv_lstm model, smaller: frames in over an open time dim, a frame out per step."""
    L = k.layers
    inp = L.Input(shape=(None, 8, 8, 1))
    x = L.ConvLSTM2D(4, (3, 3), padding="same", return_sequences=True, activation="relu",
                     kernel_initializer=k.initializers.GlorotUniform(seed),
                     recurrent_initializer=k.initializers.Orthogonal(seed=seed))(inp)
    x = L.BatchNormalization()(x)
    x = L.ConvLSTM2D(3, (1, 1), padding="same", return_sequences=True, activation="relu",
                     kernel_initializer=k.initializers.GlorotUniform(seed + 1),
                     recurrent_initializer=k.initializers.Orthogonal(seed=seed + 1))(x)
    x = L.Conv3D(1, (3, 3, 3), activation="sigmoid", padding="same",
                 kernel_initializer=k.initializers.GlorotUniform(seed + 2))(x)
    return k.Model(inp, x)


@pytest.mark.tf
@pytest.mark.parametrize("degree", [1, 2])
def test_keras_io_next_frame_model_trains_as_tf_keras(degree):
    tf = pytest.importorskip("tensorflow")
    rng = np.random.default_rng(2)
    x = rng.uniform(0, 1, (8, 5, 8, 8, 1)).astype("float32")
    y = np.roll(x, -1, axis=1)
    ours, theirs = _next_frame(ff), _next_frame(tf.keras)
    theirs.set_weights(ours.get_weights())
    np.testing.assert_allclose(ours.predict(x, verbose=0), theirs.predict(x, verbose=0), rtol=1e-4, atol=1e-5)
    ours.compile(loss="binary_crossentropy", optimizer=ff.optimizers.Adam(0.01))
    theirs.compile(loss="binary_crossentropy", optimizer=tf.keras.optimizers.Adam(0.01))
    ff.config.set(only_data_parallel=True, cpus=2, data_parallel_degree=degree)
    try:
        got = ours.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0).history["loss"]
    finally:
        ff.config.reset()
    want = theirs.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0).history["loss"]
    np.testing.assert_allclose(got, want, rtol=1e-4)
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-4)


@pytest.mark.tf
@pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword:DeprecationWarning")
def test_keras_files_interchange_with_tf_keras(tmp_path):
    tf = pytest.importorskip("tensorflow")
    x = np.random.default_rng(3).uniform(0, 1, (2, 4, 8, 8, 1)).astype("float32")
    ours = _next_frame(ff)
    ours.save(tmp_path / "ours.keras")
    theirs = tf.keras.models.load_model(tmp_path / "ours.keras")
    np.testing.assert_allclose(np.asarray(theirs(x)), ours.predict(x, verbose=0), rtol=1e-4, atol=1e-5)
    tf_model = _next_frame(tf.keras, seed=5)
    tf_model.save(tmp_path / "theirs.keras")
    back = ff.models.load_model(tmp_path / "theirs.keras")
    np.testing.assert_allclose(back.predict(x, verbose=0), np.asarray(tf_model(x)), rtol=1e-4, atol=1e-5)
    tf_model.save_weights(tmp_path / "w.weights.h5")
    fresh = _next_frame(ff, seed=9)
    fresh.load_weights(tmp_path / "w.weights.h5")
    np.testing.assert_allclose(fresh.predict(x, verbose=0), np.asarray(tf_model(x)), rtol=1e-4, atol=1e-5)


def test_what_is_not_built_is_a_clear_error():
    with pytest.raises(ValueError, match="dropout=0.2 is not implemented .* SpatialDropout3D"):
        layers.ConvLSTM2D(2, 3, dropout=0.2)
    with pytest.raises(ValueError, match="stateful=True is not implemented"):
        layers.ConvLSTM2D(2, 3, stateful=True)
    with pytest.raises(ValueError, match="initial_state is not implemented"):
        layers.ConvLSTM2D(2, 3)(np.zeros((1, 2, 4, 4, 1), "float32"), initial_state=[None, None])
    with pytest.raises(ValueError, match="a mask .* is not implemented"):
        layers.ConvLSTM2D(2, 3)(np.zeros((1, 2, 4, 4, 1), "float32"), mask=np.ones((1, 2), bool))
    with pytest.raises(ValueError, match="strides=.* cannot be combined with dilation_rate"):
        layers.ConvLSTM2D(2, 3, strides=2, dilation_rate=2)
