"""Under a GradientTape, Python ints beside an integer tensor keep its dtype, and 0-d integer tensors slice,
as in TensorFlow: keras.io's Zero-DCE illumination smoothness loss slices ``x[:, :h_x - 1]`` with
``h_x = tf.shape(x)[1]`` inside its train_step's tape; ``h_x - 1`` was float32 there (a Python int made a
float for keras.ops) and the slice a TypeError from NumPy."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from flexflow_keras import keras_alias  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")
RNG = np.random.default_rng(0)
X = RNG.standard_normal((2, 5, 4, 3)).astype(np.float32)


def _arith(t, x):
    h = t.shape(x)[1]
    return [h - 1, 1 - h, h + 2, 2 + h, h * 3, 3 * h, h // 2, x[0, 0, 0, 0] + 1, 1 - x[0, 0, 0, 0], x[0, 0, 0, 0] * 2]


@pytest.mark.parametrize("taped", [False, True])
def test_python_ints_beside_int_tensors_keep_the_dtype(taped):
    want = _arith(tf, tf.constant(X))
    with FFTF.GradientTape() if taped else _null():
        got = _arith(FFTF, FFTF.constant(X))
    for g, w in zip(got, want, strict=True):
        assert np.asarray(g).dtype == w.dtype.as_numpy_dtype
        np.testing.assert_allclose(np.asarray(g), w.numpy(), rtol=1e-6)


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _smoothness(t, x):
    """Zero-DCE's illumination smoothness loss, as the example writes it."""
    batch_size, h_x, w_x = t.shape(x)[0], t.shape(x)[1], t.shape(x)[2]
    count_h = (t.shape(x)[2] - 1) * t.shape(x)[3]
    count_w = t.shape(x)[2] * (t.shape(x)[3] - 1)
    h_tv = t.reduce_sum(t.pow((x[:, 1:, :, :] - x[:, : h_x - 1, :, :]), 2))
    w_tv = t.reduce_sum(t.pow((x[:, :, 1:, :] - x[:, :, : w_x - 1, :]), 2))
    batch_size = t.cast(batch_size, dtype=t.float32)
    count_h, count_w = t.cast(count_h, dtype=t.float32), t.cast(count_w, dtype=t.float32)
    return 2 * (h_tv / count_h + w_tv / count_w) / batch_size


def test_zero_dce_smoothness_loss_and_its_gradient_match_tensorflow():
    tv, fv = tf.Variable(X), FFTF.Variable(X)
    with tf.GradientTape() as t:
        want = _smoothness(tf, tv * 1.0)
    with FFTF.GradientTape() as f:
        got = _smoothness(FFTF, fv * 1.0)
    np.testing.assert_allclose(float(got), float(want), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(f.gradient(got, fv)), t.gradient(want, tv).numpy(), rtol=1e-5, atol=1e-7)
    k = tf.constant(3)
    np.testing.assert_array_equal(np.asarray(FFTF.constant(X)[:, :FFTF.constant(3)]), tf.constant(X)[:, :k].numpy())
