"""tf.nn.depth_to_space / space_to_depth under the runner (tf_space_ops.py) and keras.ops.depth_to_space /
space_to_depth (ops/space_depth.py) against TensorFlow 2.21 and Keras 3.15: values for several block sizes
and dtypes, both data formats of keras.ops, tape gradients, TensorFlow's errors (NCHW on the CPU, block
size, depth), and keras.io EDSR's use: called on a model's tensors with open heights and widths, trained."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import flexflow_keras as keras  # noqa: E402
from flexflow_keras import config, keras_alias  # noqa: E402
from flexflow_keras.tf_compat import InvalidArgumentError, NotFoundError  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")
RNG = np.random.default_rng(0)


@pytest.mark.parametrize(("shape", "b", "dtype"), [((2, 3, 4, 8), 2, "float32"), ((1, 2, 3, 18), 3, "float32"),
                                                   ((2, 2, 2, 16), 4, "int32"), ((1, 1, 1, 4), 2, "float64")])
def test_tf_nn_functions_give_tensorflows_values(shape, b, dtype):
    x = (RNG.standard_normal(shape) * 10).astype(dtype)
    got, want = FFTF.nn.depth_to_space(x, b), tf.nn.depth_to_space(x, b).numpy()
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(FFTF.nn.space_to_depth(want, b), tf.nn.space_to_depth(want, b).numpy())
    np.testing.assert_array_equal(FFTF.compat.v1.depth_to_space(x, b, None, "NHWC"), want)


@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
def test_keras_ops_give_keras_values_in_both_formats(data_format):
    import keras as tk

    x = RNG.standard_normal((2, 8, 3, 5) if data_format == "channels_first" else (2, 3, 5, 8)).astype(np.float32)
    want = tk.ops.convert_to_numpy(tk.ops.depth_to_space(x, 2, data_format=data_format))
    got = keras.ops.depth_to_space(x, 2, data_format=data_format)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(keras.ops.nn.space_to_depth(want, 2, data_format=data_format),
                                  tk.ops.convert_to_numpy(tk.ops.space_to_depth(want, 2, data_format=data_format)))
    sym = keras.ops.depth_to_space(keras.Input(x.shape[1:]), 2, data_format=data_format)
    assert tuple(sym.shape) == (None, *want.shape[1:])
    with pytest.raises(ValueError, match="block_size` must be at least 2"):
        keras.ops.space_to_depth(x, 1)


def test_tape_gradients_match_tensorflow():
    x = RNG.standard_normal((2, 4, 6, 8)).astype(np.float32)
    w = RNG.standard_normal((1, 8, 12, 2)).astype(np.float32)  # weighs each rearranged value differently

    ox, tx = keras.Variable(x), tf.Variable(x)
    with FFTF.GradientTape() as tape:
        lo = FFTF.reduce_sum(FFTF.square(FFTF.nn.depth_to_space(ox * 1.5, 2)) * w)
    with tf.GradientTape() as ttape:
        lt = tf.reduce_sum(tf.square(tf.nn.depth_to_space(tx * 1.5, 2)) * w)
    np.testing.assert_allclose(float(lo), float(lt), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(tape.gradient(lo, ox)), ttape.gradient(lt, tx).numpy(), rtol=1e-5,
                               atol=1e-6)


def test_tensorflows_errors():
    x = np.zeros((2, 2, 3, 8), np.float32)
    for fn in ("depth_to_space", "space_to_depth"):
        with pytest.raises(tf.errors.NotFoundError):
            getattr(tf.nn, fn)(x, 2, data_format="NCHW")
        with pytest.raises(NotFoundError, match="Could not find device for node.*NCHW.*'NHWC' only"):
            getattr(FFTF.nn, fn)(x, 2, data_format="NCHW")
        with pytest.raises(InvalidArgumentError, match="'block_size' of 1 must be at least minimum 2"):
            getattr(FFTF.nn, fn)(x, 1)
    assert FFTF.errors.NotFoundError is NotFoundError
    with pytest.raises(InvalidArgumentError, match="Input depth dimension 8 should be divisible by: 9"):
        FFTF.nn.depth_to_space(x, 3)
    with pytest.raises(InvalidArgumentError, match="Image width 3 and height 2 should be divisible by block_size: 2"):
        FFTF.nn.space_to_depth(x, 2)
    with pytest.raises(ValueError, match="evenly divisible by 4 but is 6"):
        FFTF.nn.depth_to_space(keras.Input((None, None, 6)), 2)


def _edsr_like(k, up):
    """Conv2D -> depth_to_space -> Conv2D on images of any size, as EDSR's Upsampling block."""
    inp = k.Input((None, None, 3))
    x = k.layers.Conv2D(12, 3, padding="same")(inp)
    x = up(x)
    return k.Model(inp, k.layers.Conv2D(3, 3, padding="same")(x))


@pytest.mark.parametrize(("how", "degree"), [("raw", 1), ("lambda", 2), ("subclass", 1)])
def test_a_model_using_it_trains_as_tf_keras(request, how, degree):
    request.addfinalizer(config.reset)
    config.set(data_parallel_degree=degree)  # 2: each half of the batch rearranged on its own processor

    class Shuffle(keras.layers.Layer):
        def call(self, x):
            return FFTF.nn.depth_to_space(x, 2)

    ups = {"raw": lambda t: FFTF.nn.depth_to_space(t, 2),
           "lambda": keras.layers.Lambda(lambda t: FFTF.nn.depth_to_space(t, 2)), "subclass": Shuffle()}
    theirs = _edsr_like(tf.keras, tf.keras.layers.Lambda(lambda t: tf.nn.depth_to_space(t, 2)))
    ours = _edsr_like(keras, ups[how])
    ours.set_weights(theirs.get_weights())
    x = RNG.standard_normal((8, 5, 6, 3)).astype(np.float32)
    y = RNG.standard_normal((8, 10, 12, 3)).astype(np.float32)
    for m in (ours, theirs):
        m.compile(optimizer=m is ours and keras.optimizers.SGD(0.05) or tf.keras.optimizers.SGD(0.05), loss="mae")
    h1 = ours.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0).history["loss"]
    h2 = theirs.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0).history["loss"]
    np.testing.assert_allclose(h1, h2, rtol=1e-5)
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ours.predict(x[:2, :4, :3], verbose=0), theirs.predict(x[:2, :4, :3], verbose=0),
                               rtol=1e-4, atol=1e-5)
