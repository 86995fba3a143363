"""`preprocess_input` on a tensor (an eager layer output, not a NumPy array) as tf.keras 3.15: a new tensor
of the input's dtype, the input untouched; on integer pixels 'caffe' adds the mean cast to that dtype,
wrapping (TensorFlow's cast and add), and 'tf'/'torch' raise TypeError. Hands-On ML ch14 feeds
``Resizing(...)(images)`` (uint8 pixels stay uint8 in Keras 3) to resnet50.preprocess_input. Ours wrote over the
tensor in place (the NumPy rule), so the same images preprocessed twice differed, and gave float32 for
uint8. NumPy arrays are still changed in place, as Keras documents."""

import numpy as np
import pytest

keras_ref = pytest.importorskip("keras")
pytest.importorskip("tensorflow")

import flexflow_keras as ff  # noqa: E402

pytestmark = pytest.mark.tf
RS = np.random.default_rng(0)
U8 = RS.integers(0, 256, (1, 9, 9, 3)).astype("uint8")
F32 = (RS.random((1, 4, 4, 3)) * 255).astype("float32")


@pytest.mark.parametrize("app", ["resnet50", "xception", "densenet", "vgg16"])
def test_float_tensor_as_tf_keras_and_left_untouched(app):
    got = []
    for lib in (ff, keras_ref):
        x = lib.layers.Rescaling(1.0)(F32)
        before = np.array(x)
        out = getattr(lib.applications, app).preprocess_input(x)
        got.append((np.asarray(out), str(np.asarray(out).dtype), np.array_equal(np.asarray(x), before)))
    np.testing.assert_allclose(got[0][0], got[1][0], rtol=1e-6, atol=1e-5)
    assert got[0][1:] == got[1][1:] == ("float32", True)


def test_uint8_tensor_caffe_wraps_as_tf_keras():
    got = []
    for lib in (ff, keras_ref):
        x = lib.ops.convert_to_tensor(U8)
        out = np.asarray(lib.applications.resnet50.preprocess_input(x))
        got.append(out)
        with pytest.raises(TypeError):
            lib.applications.xception.preprocess_input(x)
    assert got[0].dtype == got[1].dtype == np.uint8
    np.testing.assert_array_equal(got[0], got[1])


def test_numpy_floats_are_still_written_over_as_tf_keras():
    for lib in (ff, keras_ref):
        a = F32.copy()
        out = lib.applications.resnet50.preprocess_input(a)
        assert not np.array_equal(a, F32)
        np.testing.assert_allclose(np.asarray(out), a[..., ::-1])  # a view of the reversed channels
