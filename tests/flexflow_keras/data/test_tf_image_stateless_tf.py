"""tf.image's stateless_random_* ops under `python -m flexflow_keras` draw TensorFlow 2.21's values for their
seed (Philox): TensorFlow's data augmentation tutorial shows stateless_random_brightness / contrast / crop with
seeds (i, 0) and builds its augment() from stateless_random_crop and brightness; ours drew from NumPy seeded
with the seed, so the crops and deltas were not TensorFlow's. Flips of one image and of a batch follow
TensorFlow's two rules (below 0.5 flips one image; a batch flips the draws that round to 1)."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from flexflow_keras import keras_alias  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")
IMAGE = np.random.default_rng(0).integers(0, 256, (20, 24, 3)).astype("uint8")
BATCH = np.random.default_rng(1).uniform(0, 1, (6, 5, 7, 3)).astype("float32")
SEEDS = [(0, 0), (1, 0), (2, 0), (7, 3), (123, 456)]


def _cases(t, seed):
    return {
        "brightness": lambda: t.image.stateless_random_brightness(IMAGE, max_delta=0.95, seed=seed),
        "contrast": lambda: t.image.stateless_random_contrast(IMAGE, lower=0.1, upper=0.9, seed=seed),
        "crop": lambda: t.image.stateless_random_crop(IMAGE, size=[10, 15, 3], seed=seed),
        "crop batch": lambda: t.image.stateless_random_crop(BATCH, size=[3, 4, 5, 3], seed=seed),
        "saturation": lambda: t.image.stateless_random_saturation(BATCH[0], 0.5, 1.5, seed=seed),
        "hue": lambda: t.image.stateless_random_hue(BATCH[0], 0.2, seed=seed),
        "flip one": lambda: t.image.stateless_random_flip_left_right(IMAGE, seed=seed),
        "flip batch": lambda: t.image.stateless_random_flip_up_down(BATCH, seed=seed),
    }


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("case", list(_cases(tf, (0, 0))))
def test_stateless_image_ops_as_tf(case, seed):
    theirs = np.asarray(_cases(tf, seed)[case]())
    ours = np.asarray(_cases(FFTF, seed)[case]())
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    np.testing.assert_allclose(ours.astype(float), theirs.astype(float), rtol=1e-5, atol=1e-5)
