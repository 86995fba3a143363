"""SparseCategoricalCrossentropy(ignore_class=k) called on arrays reduces as Keras 3 does: the ignored
entries are masked out of the weights, and the mean ("sum_over_batch_size") runs over the valid entries only
(Keras' apply_mask scales the mask by total / valid). The eager call divided by every entry: with one of six
labels ignored the loss was 1.2886 where tf.keras gives 1.5463, silently (a compiled loss was already
right). Found sweeping keras.io scripts' losses against tf.keras."""

import numpy as np
import pytest

tk = pytest.importorskip("keras")

import flexflow_keras as ff  # noqa: E402

pytestmark = pytest.mark.tf


def _data(seq):
    rng = np.random.default_rng(5)
    shape = (6, 3) if seq else (6,)
    y = rng.integers(0, 4, shape)
    p = rng.random(shape + (4,)).astype("float32")
    return y, p / p.sum(-1, keepdims=True), rng.random(shape).astype("float32")


@pytest.mark.parametrize("seq", [False, True])
@pytest.mark.parametrize("reduction", ["sum_over_batch_size", "sum", "mean_with_sample_weight", None])
@pytest.mark.parametrize("weighted", [False, True])
def test_ignore_class_loss_on_arrays_matches_tf_keras(seq, reduction, weighted):
    y, p, sw = _data(seq)
    kw = {"ignore_class": int(y.reshape(-1)[0]), "reduction": reduction}
    w = sw if weighted else None
    want = np.asarray(tk.losses.SparseCategoricalCrossentropy(**kw)(y, p, sample_weight=w))
    got = np.asarray(ff.losses.SparseCategoricalCrossentropy(**kw)(y, p, sample_weight=w))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
