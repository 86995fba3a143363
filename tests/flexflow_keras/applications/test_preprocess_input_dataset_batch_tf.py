"""`preprocess_input` on a batch of `image_dataset_from_directory` leaves the batch untouched and returns new
images, as tf.keras 3.15 does (its batches are tensors). Deep Learning with Python (2nd ed.) ch. 8 extracts
VGG16 features with ``preprocess_input(images)`` over the dataset's batches; ours took the batch (an ndarray
underneath) for a NumPy array and subtracted the ImageNet mean from it in place (up to 124 per pixel)."""

import numpy as np
import pytest

keras_ref = pytest.importorskip("keras")
pytest.importorskip("tensorflow")
Image = pytest.importorskip("PIL.Image")

import flexflow_keras as ff  # noqa: E402

pytestmark = pytest.mark.tf


@pytest.fixture
def folder(tmp_path):
    rng = np.random.default_rng(0)
    for cls in ("a", "b"):
        (tmp_path / cls).mkdir()
        for i in range(3):
            pixels = rng.integers(0, 256, (12, 10, 3)).astype("uint8")
            Image.fromarray(pixels).save(tmp_path / cls / f"{i}.png")
    return tmp_path


@pytest.mark.parametrize("app", ["vgg16", "resnet50", "xception", "mobilenet_v2"])
def test_dataset_batch_untouched_and_preprocessed_as_tf_keras(folder, app):
    got = []
    for lib in (ff, keras_ref):
        ds = lib.utils.image_dataset_from_directory(folder, image_size=(8, 8), batch_size=6, shuffle=False)
        images, _ = next(iter(ds))
        before = np.array(images, copy=True)
        out = getattr(lib.applications, app).preprocess_input(images)
        got.append(np.asarray(out))
        np.testing.assert_array_equal(np.asarray(images), before, err_msg=f"{lib.__name__} changed the batch")
    np.testing.assert_allclose(got[0], got[1], rtol=1e-6, atol=1e-4)
