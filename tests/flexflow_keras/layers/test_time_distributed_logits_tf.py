"""TimeDistributed(Dense(activation="softmax")) does not hand its softmax's logits to the crossentropies:
Keras 3 applies the layer step by step and stacks the outputs, which leaves the ``_keras_logits`` of the
softmax behind, so its loss and crossentropy metrics read the (clipped) probabilities. We apply Dense
to all steps as one op whose output is the softmax's, and took its logits: with saturated outputs and a
mask_zero Embedding, the loss read 6.61 and (since the metrics read logits too) the metric as well, where
tf.keras 3.15 gives 6.00 for both."""

import numpy as np
import pytest

import flexflow_keras

RS = np.random.RandomState(0)
SEQ = RS.randint(0, 5, (13, 5))
SEQ[:, 3:] = 0
SEQ[:, 0] = np.maximum(SEQ[:, 0], 1)
YS = RS.randint(0, 3, (13, 5))


def _run(lib, activation):
    layers = lib.layers
    inp = lib.Input((5,), dtype="int32")
    e = layers.Embedding(5, 4, mask_zero=True)(inp)
    if activation == "softmax":
        out = layers.TimeDistributed(layers.Dense(3, activation="softmax"))(e)
    else:
        out = layers.TimeDistributed(layers.Activation("softmax"))(layers.Dense(3)(e))
    m = lib.Model(inp, out)
    rs = np.random.RandomState(1)
    m.set_weights([rs.randn(*v.shape).astype("float32") * 2 for v in m.get_weights()])  # saturated outputs
    m.compile(lib.optimizers.SGD(0.01), "sparse_categorical_crossentropy",
              metrics=["sparse_categorical_crossentropy", "accuracy"])
    before = m.evaluate(SEQ, YS, batch_size=13, verbose=0)
    hist = m.fit(SEQ, YS, batch_size=4, epochs=2, verbose=0, shuffle=False).history
    return before, hist, m.get_weights()


@pytest.mark.parametrize("activation", ["softmax", "layer"])
def test_time_distributed_softmax_reads_probabilities_as_tf_keras(activation):
    keras = pytest.importorskip("keras")
    pytest.importorskip("tensorflow")
    ours, theirs = _run(flexflow_keras, activation), _run(keras, activation)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-5)
    for key in theirs[1]:
        np.testing.assert_allclose(ours[1][key], theirs[1][key], rtol=1e-5, err_msg=key)
    for a, b in zip(ours[2], theirs[2], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
