"""A masking-aware layer called on a list of masked tensors (keras.io's TransformerDecoder([x, encoder_out])):
call() receives the list of masks and the output carries the first input's mask, so the loss skips padded
steps, as in Keras 3."""

import numpy as np
import pytest


def _model(keras):
    layers, ops = keras.layers, keras.ops

    class PE(layers.Layer):
        def __init__(self, **kw):
            super().__init__(**kw)
            self.e = layers.Embedding(10, 4)

        def call(self, x):
            return self.e(x)

        def compute_mask(self, x, mask=None):
            return ops.not_equal(x, 0)

    class Dec(layers.Layer):
        def __init__(self, **kw):
            super().__init__(**kw)
            self.supports_masking = True
            self.seen = None

        def call(self, inputs, mask=None):
            self.seen = mask
            a, b = inputs
            return a + b

    ei, di = keras.Input(shape=(6,), dtype="int64"), keras.Input(shape=(6,), dtype="int64")
    dec = Dec()
    d = dec([PE()(di), PE()(ei)])
    out = layers.Dense(10, activation="softmax")(d)
    return keras.Model([ei, di], out), dec, d


ENC = np.array([[3, 4, 5, 6, 7, 0], [1, 2, 3, 4, 0, 0]] * 4)
DEC = np.array([[3, 4, 5, 0, 0, 0], [1, 2, 0, 0, 0, 0]] * 4)
Y = np.array([[4, 5, 6, 0, 0, 0], [2, 3, 0, 0, 0, 0]] * 4)


def test_call_gets_the_list_of_masks_and_the_loss_skips_padding():
    import flexflow_keras as keras

    model, dec, d = _model(keras)
    assert isinstance(dec.seen, list) and len(dec.seen) == 2 and all(m is not None for m in dec.seen)
    assert getattr(d, "_keras_mask", None) is not None
    model.compile("rmsprop", "sparse_categorical_crossentropy")
    probs = model.predict([ENC, DEC], verbose=0)
    picked = np.take_along_axis(probs, Y[..., None], axis=-1)[..., 0]
    want = -np.log(picked)[DEC != 0].mean()  # the decoder's real steps only
    assert model.evaluate([ENC, DEC], Y, verbose=0) == pytest.approx(want, rel=1e-5)


def test_as_keras_computes_it():
    keras = pytest.importorskip("keras")
    pytest.importorskip("tensorflow")
    import flexflow_keras as ff

    ours, _, _ = _model(ff)
    theirs, _, _ = _model(keras)
    rng = np.random.default_rng(0)
    weights = [rng.normal(size=w.shape).astype("float32") for w in ours.get_weights()]
    ours.set_weights(weights)
    theirs.set_weights(weights)
    for m in (ours, theirs):
        m.compile("rmsprop", "sparse_categorical_crossentropy")
    assert ours.evaluate([ENC, DEC], Y, verbose=0) == pytest.approx(theirs.evaluate([ENC, DEC], Y, verbose=0),
                                                                     rel=1e-5)
