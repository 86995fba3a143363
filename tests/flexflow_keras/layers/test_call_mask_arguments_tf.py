"""Which mask arguments a layer's call gets (layers/mask_hooks.call_masks), as Keras 3's Layer.__call__: the
one tensor argument's mask in `mask`; with several tensor arguments only `<name>_mask` parameters, and no
`mask` (keras.io's TransformerDecoder called on (x, encoder_outputs); an LSTM given initial_state tensors
runs unmasked in Keras 3)."""

import numpy as np
import pytest

import flexflow_keras as ffk

IDS = np.array([[1, 2, 3, 0, 0], [4, 0, 0, 0, 0], [5, 6, 7, 8, 9]], "int32")
STATE = np.full((3, 4), 0.1, "float32")


def _layers(keras):
    class Shift(keras.layers.Layer):
        def call(self, x):
            return keras.ops.expand_dims(keras.ops.cast(x, "float32"), -1) + 1.0

        def compute_mask(self, x, mask=None):
            return keras.ops.not_equal(x, 0)

    class Two(keras.layers.Layer):  # Keras 3 leaves `mask` None: two tensor arguments
        def call(self, x, y, mask=None):
            if mask is not None:
                x = x * keras.ops.expand_dims(keras.ops.cast(mask, "float32"), -1)
            return x + y

    class TwoNamed(keras.layers.Layer):  # ... and fills `x_mask`
        def call(self, x, y, x_mask=None, y_mask=None):
            if x_mask is not None:
                x = x * keras.ops.expand_dims(keras.ops.cast(x_mask, "float32"), -1)
            if y_mask is not None:
                x = x * 100.0
            return x + y

    class One(keras.layers.Layer):  # one tensor argument: its mask
        def call(self, x, scale=2.0, mask=None):
            if mask is not None:
                x = x * keras.ops.expand_dims(keras.ops.cast(mask, "float32"), -1)
            return x * scale

    return Shift, Two, TwoNamed, One


def _custom_model(keras):
    Shift, Two, TwoNamed, One = _layers(keras)
    ids, other = keras.Input((5,), dtype="int32"), keras.Input((5, 1))
    e = Shift()(ids)
    out = keras.layers.Concatenate()([Two()(e, other), TwoNamed()(e, other), One()(e)])
    return keras.Model([ids, other], out)


def _rnn_model(keras):
    ids, h0, c0 = keras.Input((5,), dtype="int32"), keras.Input((4,)), keras.Input((4,))
    e = keras.layers.Embedding(10, 3, mask_zero=True)(ids)
    outs = [keras.layers.LSTM(4)(e, initial_state=[h0, c0]),
            keras.layers.LSTM(4)(e),
            keras.layers.GRU(4, return_sequences=True)(e, initial_state=h0),
            keras.layers.Bidirectional(keras.layers.SimpleRNN(2))(e, initial_state=[h0[:, :2], c0[:, :2]]),
            keras.layers.Bidirectional(keras.layers.SimpleRNN(2))(e)]
    return keras.Model([ids, h0, c0], outs)


def test_custom_layers_get_masks_as_keras_without_tf():
    model = _custom_model(ffk)
    got = np.asarray(model.predict([IDS, np.ones((3, 5, 1), "float32")], verbose=0))
    shifted = IDS[..., None] + 1.0
    kept = shifted * (IDS[..., None] != 0)
    np.testing.assert_allclose(got[..., 0], (shifted + 1)[..., 0])  # Two: no mask
    np.testing.assert_allclose(got[..., 1], (kept + 1)[..., 0])  # TwoNamed: x_mask only
    np.testing.assert_allclose(got[..., 2], (2 * kept)[..., 0])  # One: mask


def test_rnn_with_initial_state_runs_unmasked_without_tf():
    model = _rnn_model(ffk)
    a = model.predict([IDS, STATE, STATE], verbose=0)
    embedding = next(layer for layer in model.layers if isinstance(layer, ffk.layers.Embedding))
    table = embedding.get_weights()[0]
    table[0] += 0.5  # the padding id's vector: read only by the calls that run unmasked
    embedding.set_weights([table])
    b = model.predict([IDS, STATE, STATE], verbose=0)
    for k, unmasked in enumerate([True, False, True, True, False]):
        assert (not np.allclose(a[k], b[k], atol=1e-7)) == unmasked, k


@pytest.mark.parametrize("build", [_custom_model, _rnn_model])
def test_masks_match_tf(build):
    keras = pytest.importorskip("keras")
    pytest.importorskip("tensorflow")
    theirs, ours = build(keras), build(ffk)
    ours.set_weights(theirs.get_weights())
    data = [IDS, np.ones((3, 5, 1), "float32")] if build is _custom_model else [IDS, STATE, STATE]
    expected = theirs.predict(data, verbose=0)
    got = ours.predict(data, verbose=0)
    for e, g in zip(expected if isinstance(expected, list) else [expected],
                    got if isinstance(got, list) else [got], strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)
