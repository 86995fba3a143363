"""Float class ids that are not whole numbers (keras.io DeepLabV3+'s masks, resized bilinearly) train as in
Keras 3 on TensorFlow: the sparse crossentropy truncates them toward zero (TensorFlow's cast to int64) and
sparse accuracy compares the float labels (so they never count as correct); flexflow_keras warns once per
output instead of refusing the data, as it did before."""

import logging

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
tk = pytest.importorskip("keras")

import flexflow_keras as ff  # noqa: E402
from flexflow_keras.data import checks  # noqa: E402

pytestmark = pytest.mark.tf

rng = np.random.RandomState(0)
X = rng.rand(8, 4, 4, 3).astype("float32")
Y = (rng.rand(8, 4, 4, 1) * 4.99).astype("float32")  # mostly non-integer ids in [0, 5)
Y[:, 0, 0, 0] = 2.0  # a few whole ones, which accuracy can count


def _run(K):
    inp = K.Input((4, 4, 3))
    out = K.layers.Conv2D(5, 1)(K.layers.Conv2D(6, 3, padding="same", activation="relu")(inp))
    model = K.Model(inp, out)
    model.set_weights([np.random.RandomState(i).randn(*np.shape(w)).astype("float32") * 0.5
                       for i, w in enumerate(model.get_weights())])
    model.compile(optimizer=K.optimizers.SGD(0.1), metrics=["accuracy"],
                  loss=K.losses.SparseCategoricalCrossentropy(from_logits=True))
    h = model.fit(X, Y, batch_size=4, epochs=2, shuffle=False, verbose=0)
    return h.history, model.evaluate(X, Y, batch_size=4, verbose=0)


def test_non_integer_class_ids_train_as_tf(caplog):
    checks._WARNED.clear()
    ref_hist, ref_eval = _run(tk)
    with caplog.at_level(logging.WARNING, logger="flexflow_keras"):
        hist, ev = _run(ff)
    for k in ("loss", "accuracy"):
        np.testing.assert_allclose(hist[k], ref_hist[k], rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(ev, ref_eval, rtol=2e-5, atol=1e-6)
    warned = [r.getMessage() for r in caplog.records if "should be integer class ids" in r.getMessage()]
    assert len(warned) == 1 and "truncates" in warned[0] and "method='nearest'" in warned[0]
