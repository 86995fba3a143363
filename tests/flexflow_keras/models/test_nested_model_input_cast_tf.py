"""A model used as a layer casts the symbolic tensors it is called on to its inputs' dtypes, as Keras 3's
Functional does (``convert_to_tensor(x, dtype=input.dtype)``): keras.io's ShiftViT calls its augmentation
Sequential (Resizing, Rescaling) on the uint8 CIFAR batch inside a subclassed model, and predict() resized
in uint8 (truncated pixels, logits off by 2e-3 relative) where the eager call was right."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
tk = pytest.importorskip("keras")

import flexflow_keras as ff  # noqa: E402

pytestmark = pytest.mark.tf
X = np.random.RandomState(0).randint(0, 256, (4, 5, 5, 2)).astype("uint8")


def _subclassed(K, inner):
    class M(K.Model):
        def __init__(self):
            super().__init__()
            if inner == "sequential":
                self.aug = K.Sequential([K.layers.Resizing(7, 7), K.layers.Rescaling(1 / 3.0)])
            else:
                i = K.Input((5, 5, 2))
                self.aug = K.Model(i, K.layers.Resizing(7, 7)(i) * 0.5)
            self.flat = K.layers.Flatten()

        def call(self, x):
            return self.flat(self.aug(x))

    return M()


def _outer_functional(K):
    inner = K.Sequential([K.Input((5, 5, 2)), K.layers.Resizing(3, 4)])
    i = K.Input((5, 5, 2), dtype="uint8")
    return K.Model(i, K.layers.Flatten()(inner(i)))


@pytest.mark.parametrize("build", ["sequential", "functional", "outer"])
def test_model_as_layer_casts_uint8_inputs_as_tf(build):
    make = (lambda K: _outer_functional(K)) if build == "outer" else (lambda K: _subclassed(K, build))
    ref = make(tk).predict(X, verbose=0)
    got = make(ff).predict(X, verbose=0)
    assert got.dtype == ref.dtype == np.float32
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
