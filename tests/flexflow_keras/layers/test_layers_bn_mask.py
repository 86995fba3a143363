"""BatchNormalization with a mask (Keras 3): training statistics over the unmasked positions only, every
position normalised, the mask passed on; an Embedding(mask_zero=True) -> BatchNormalization -> LSTM model
against tf.keras (predict and one training step, moving statistics included). The op's gradients:
tests/flexflow_keras/ops/test_batch_norm_mask_op.py."""

import numpy as np
import pytest
from ff_layer_harness import make_data, tf_keras

from flexflow_keras import layers, optimizers

IDS = np.array([[1, 2, 0, 0, 0], [3, 0, 4, 5, 0], [6, 7, 8, 9, 1], [2, 2, 0, 0, 0]], "int32")


def test_mask_restricts_the_training_statistics_and_passes_on():
    inp = layers.Input((5,), dtype="int32")
    x = layers.Embedding(10, 3, mask_zero=True)(inp)
    y = layers.BatchNormalization()(x)
    assert y._keras_mask is x._keras_mask
    data = make_data((4, 5, 3))
    data[IDS == 0] = 100.0  # huge values at the masked steps must not move the statistics
    bn = layers.BatchNormalization(momentum=0.0)
    out = np.asarray(bn(data, mask=IDS != 0, training=True))
    kept = data[IDS != 0]
    np.testing.assert_allclose(bn.moving_mean.numpy(), kept.mean(0), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(out[IDS != 0], (kept - kept.mean(0)) / np.sqrt(kept.var(0) + 1e-3), rtol=1e-4,
                               atol=1e-4)
    with pytest.raises(ValueError, match="a mask needs the channels on the last axis"):
        layers.BatchNormalization(axis=1)(data, mask=IDS != 0, training=True)


@pytest.mark.tf
def test_masked_model_matches_tf(request):
    k = tf_keras()
    if k is None:
        pytest.skip("TensorFlow is not installed")
    import flexflow_keras as ff

    y = make_data((4, 1), seed=3)

    def build(lib):
        inp = lib.layers.Input((5,), dtype="int32")
        x = lib.layers.Embedding(10, 4, mask_zero=True)(inp)
        x = lib.layers.BatchNormalization(momentum=0.5)(x)
        return lib.Model(inp, lib.layers.Dense(1)(lib.layers.LSTM(3)(x)))

    ours, theirs = build(ff), build(k)
    theirs.set_weights(ours.get_weights())
    np.testing.assert_allclose(ours.predict(IDS, verbose=0), np.asarray(theirs(IDS)), rtol=1e-5, atol=1e-6)
    ff.config.set(only_data_parallel=True)  # one step: no strategy search
    request.addfinalizer(ff.config.reset)
    ours.compile(optimizer=optimizers.SGD(0.5), loss="mse")
    theirs.compile(optimizer=k.optimizers.SGD(0.5), loss="mse")
    l_ours = ours.fit(IDS, y, batch_size=4, epochs=1, verbose=0, shuffle=False).history["loss"][0]
    l_theirs = theirs.fit(IDS, y, batch_size=4, epochs=1, verbose=0, shuffle=False).history["loss"][0]
    assert l_ours == pytest.approx(l_theirs, rel=1e-5)
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
