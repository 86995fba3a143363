"""Resizing called eagerly on integer images returns their dtype, rounded and saturated, as tf.keras 3.15
(`_saturate_cast` after the resize); ours returned float32. Hands-On ML ch14 resizes uint8 sample images and
passes them on as they are. A model's graph computes in float32, as Keras' does."""

import numpy as np
import pytest

keras_ref = pytest.importorskip("keras")
pytest.importorskip("tensorflow")

import flexflow_keras as ff  # noqa: E402

pytestmark = pytest.mark.tf
X = np.random.default_rng(0).integers(0, 256, (2, 20, 30, 3)).astype("uint8")


@pytest.mark.parametrize("kw", [{}, {"crop_to_aspect_ratio": True}, {"interpolation": "nearest"}])
@pytest.mark.parametrize("dtype", ["uint8", "int32"])
def test_eager_integer_images_keep_their_dtype_as_tf_keras(kw, dtype):
    x = X.astype(dtype)
    got = [np.asarray(lib.layers.Resizing(8, 12, **kw)(x)) for lib in (ff, keras_ref)]
    assert got[0].dtype == got[1].dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got[0], got[1])
    one = [np.asarray(lib.layers.Resizing(8, 12, **kw)(x[0])) for lib in (ff, keras_ref)]
    assert one[0].dtype == one[1].dtype and one[0].shape == (8, 12, 3)


def test_in_a_model_the_output_is_float_as_tf_keras():
    for lib in (ff, keras_ref):
        m = lib.Sequential([lib.layers.Resizing(8, 8)])
        assert np.asarray(m(X)).dtype == np.float32


def test_in_a_dataset_map_the_output_is_float_as_tf_keras():
    # keras.io's transfer-learning guide: ds.map(lambda x, y: (resize(x), y)) over uint8 images
    from flexflow_keras import keras_alias

    got = []
    for tf, lib in ((keras_alias._TensorFlow("tensorflow"), ff), (pytest.importorskip("tensorflow"), keras_ref)):
        resize = lib.layers.Resizing(8, 8)
        ds = tf.data.Dataset.from_tensor_slices((X, np.arange(2))).map(lambda x, y, r=resize: (r(x), y))
        got.append(np.asarray(next(iter(ds))[0]))
    assert got[0].dtype == got[1].dtype == np.float32
    np.testing.assert_allclose(got[0], got[1], rtol=1e-5, atol=1e-4)
