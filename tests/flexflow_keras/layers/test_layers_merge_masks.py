"""Keras 3's mask rules for the merge layers: the output's mask (seen through a masked
GlobalAveragePooling1D) and the masked values of Maximum / Minimum / Multiply, against tf.keras on copied
weights, with both inputs masked and with one unmasked input."""

import numpy as np
import pytest
from ff_layer_harness import tf_keras

A = np.array([[1, 2, 0, 0], [3, 0, 4, 5], [6, 7, 8, 9]], "int32")
B = np.array([[0, 2, 3, 0], [3, 4, 0, 0], [0, 0, 0, 1]], "int32")
MERGES = ["Add", "Subtract", "Multiply", "Maximum", "Minimum", "Average", "Concatenate", "Concatenate1"]


def _build(lib, merge: str, second_masked: bool):
    ia, ib = lib.layers.Input((4,), dtype="int32"), lib.layers.Input((4,), dtype="int32")
    a = lib.layers.Embedding(10, 3, mask_zero=True)(ia)
    b = lib.layers.Embedding(10, 3, mask_zero=second_masked)(ib)
    layer = lib.layers.Concatenate(axis=1) if merge == "Concatenate1" else getattr(lib.layers, merge)()
    m = layer([a, b])
    return lib.Model([ia, ib], [m, lib.layers.GlobalAveragePooling1D()(m)])


@pytest.mark.parametrize("second_masked", [True, False], ids=["both-masked", "one-masked"])
@pytest.mark.parametrize("merge", MERGES)
def test_merge_masks(merge, second_masked, parity):
    import flexflow_keras as ff

    ours = _build(ff, merge, second_masked)
    rng = np.random.default_rng(0)
    ours.set_weights([rng.standard_normal(w.shape).astype("float32") for w in ours.get_weights()])
    values, pooled = ours.predict([A, B], verbose=0)
    ea, eb = ours.get_weights()
    ma, mb = A != 0, (B != 0) if second_masked else np.ones_like(B, bool)
    if merge == "Concatenate1":
        mask = np.concatenate([ma, mb], axis=1)
    elif merge == "Concatenate":
        mask = ma | mb
    else:
        mask = (ma | mb) if second_masked else None
    want = values.mean(1) if mask is None else (values * mask[..., None]).sum(1) / mask.sum(1)[:, None]
    np.testing.assert_allclose(pooled, want, rtol=1e-5, atol=1e-6)
    if merge == "Maximum" and second_masked:  # a masked step never wins over the other input's value
        x, y = ea[A], eb[B]
        y = np.where(mb[..., None], y, x)  # Keras: the second input's masked steps take the first's value
        ref = np.maximum(np.where(ma[..., None], x, y), y)
        np.testing.assert_allclose(values, ref, rtol=1e-6)
    if parity:
        theirs = _build(tf_keras(), merge, second_masked)
        theirs.set_weights(ours.get_weights())
        t_values, t_pooled = [np.asarray(t) for t in theirs([A, B])]
        np.testing.assert_allclose(values, t_values, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(pooled, t_pooled, rtol=1e-5, atol=1e-6)
