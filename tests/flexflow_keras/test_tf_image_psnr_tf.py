"""tf.image.psnr under the runner (tf_image_ops.psnr) against TensorFlow 2.21: per-image values of float and
uint8 batches and of single images, and as a compiled metric function of a model (keras.io's EDSR:
``tf.image.psnr(high, super, max_val=255)[0]``) with tf.keras 3.15's logged values."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import flexflow_keras as keras  # noqa: E402
from flexflow_keras import config, keras_alias  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")
RNG = np.random.default_rng(0)


@pytest.mark.parametrize(("shape", "dtype", "top"), [((3, 5, 4, 3), "float32", 255.0), ((6, 7, 1), "float32", 1.0),
                                                     ((2, 4, 4, 3), "uint8", 255), ((2, 2, 4, 4, 3), "float64", 2.0)])
def test_values_match_tensorflow(shape, dtype, top):
    a = (RNG.uniform(0, 1, shape) * (255 if dtype == "uint8" else top)).astype(dtype)
    b = (RNG.uniform(0, 1, shape) * (255 if dtype == "uint8" else top)).astype(dtype)
    want = tf.image.psnr(a, b, max_val=top).numpy()
    got = np.asarray(FFTF.image.psnr(a, b, max_val=top))
    assert got.shape == want.shape and got.dtype == want.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_shapes_or_dtypes_that_differ_are_refused():
    a = np.zeros((2, 4, 4, 3), np.float32)
    with pytest.raises(ValueError, match="of one shape"):
        FFTF.image.psnr(a, a[:, :3], 1.0)
    with pytest.raises(ValueError, match="of one dtype"):
        FFTF.image.psnr(a, a.astype(np.float64), 1.0)


def test_as_a_metric_it_logs_what_tf_keras_logs(request):
    request.addfinalizer(config.reset)

    def make(k, t):
        def PSNR(super_resolution, high_resolution):
            return t.image.psnr(high_resolution, super_resolution, max_val=255)[0]

        inp = k.Input((4, 4, 3))
        m = k.Model(inp, k.layers.Rescaling(255.0)(k.layers.Dense(3)(inp)))
        m.compile(optimizer=k.optimizers.SGD(0.01), loss="mae", metrics=[PSNR])
        return m

    theirs, ours = make(tf.keras, tf), make(keras, FFTF)
    ours.set_weights(theirs.get_weights())
    x = RNG.uniform(0, 1, (8, 4, 4, 3)).astype(np.float32)
    y = RNG.uniform(0, 255, (8, 4, 4, 3)).astype(np.float32)
    want = theirs.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0).history
    got = ours.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0).history
    assert sorted(got) == sorted(want) == ["loss", "psnr"]  # Keras names a function metric in snake case
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, err_msg=name)
