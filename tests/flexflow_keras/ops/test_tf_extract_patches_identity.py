"""The runner's tf.image.extract_patches (TensorFlow's [1, h, w, 1] sizes / strides / rates, SAME and VALID
padding, strides and rates above 1 together) and tf.identity, eager against TensorFlow and inside a layer's
call (keras.io's involution: patches of the input times generated kernels, one SGD step as tf.keras')."""

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras import config
from flexflow_keras.errors import ArgumentError
from flexflow_keras.tf_compat import mapped_call

tf = pytest.importorskip("tensorflow")
pytestmark = pytest.mark.tf

patches = mapped_call("tf.image.extract_patches")
X = np.random.default_rng(0).normal(size=(2, 7, 6, 3)).astype("float32")


@pytest.mark.parametrize(("k", "s", "r", "pad"), [(3, 1, 1, "SAME"), (2, 2, 1, "VALID"), (3, 2, 1, "SAME"),
                                                    (2, 3, 2, "VALID"), (3, 2, 2, "SAME"), ((2, 3), (1, 2), 1, "SAME")])
def test_extract_patches_as_tensorflow(k, s, r, pad):
    kh, kw = (k, k) if isinstance(k, int) else k
    sh, sw = (s, s) if isinstance(s, int) else s
    args = {"sizes": [1, kh, kw, 1], "strides": [1, sh, sw, 1], "rates": [1, r, r, 1], "padding": pad}
    np.testing.assert_allclose(np.asarray(patches(images=X, **args)),
                               tf.image.extract_patches(images=X, **args).numpy(), rtol=0, atol=0)


def test_extract_patches_errors():
    with pytest.raises(ArgumentError, match=r"sizes as \[1, rows, cols, 1\]"):
        patches(X, [3, 3], [1, 1, 1, 1], [1, 1, 1, 1], "SAME")
    with pytest.raises(ArgumentError, match="padding 'SAME' or 'VALID'"):
        patches(X, [1, 3, 3, 1], [1, 1, 1, 1], [1, 1, 1, 1], "FULL")


def test_identity_is_a_copy():
    ident = mapped_call("tf.identity")
    np.testing.assert_array_equal(np.asarray(ident(X)), X)
    inp = keras.Input((3,))
    out = ident(inp)
    assert out is not inp and out.shape == inp.shape


def test_involution_step_as_tf_keras(request):
    """A layer whose call multiplies TF-style patches by a generated kernel trains as under tf.keras."""
    request.addfinalizer(config.reset)
    config.set(data_parallel_degree=1)

    def build(lib, patch_fn, ident):
        class Inv(lib.layers.Layer):
            def build(self, shape):
                self.gen = lib.layers.Conv2D(9, 1)
                self.pass_through = ident

            def call(self, x):
                kernel = lib.ops.reshape(self.gen(self.pass_through(x)), (-1, 6, 6, 9, 1))
                p = lib.ops.reshape(patch_fn(images=x, sizes=[1, 3, 3, 1], strides=[1, 1, 1, 1],
                                             rates=[1, 1, 1, 1], padding="SAME"), (-1, 6, 6, 9, 2))
                return lib.ops.sum(kernel * p, axis=3)

        inp = lib.Input((6, 6, 2))
        out = lib.layers.Dense(1)(lib.layers.Flatten()(Inv()(inp)))
        return lib.Model(inp, out)

    ff, ref = build(keras, patches, mapped_call("tf.identity")), build(tf.keras, tf.image.extract_patches, tf.identity)
    ff.set_weights(ref.get_weights())
    x = np.random.default_rng(1).normal(size=(8, 6, 6, 2)).astype("float32")
    y = np.random.default_rng(2).normal(size=(8, 1)).astype("float32")
    np.testing.assert_allclose(ff.predict(x, verbose=0), ref.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
    for m, lib in ((ff, keras), (ref, tf.keras)):
        m.compile(optimizer=lib.optimizers.SGD(0.05), loss="mse")
        m.fit(x, y, batch_size=8, epochs=1, verbose=0, shuffle=False)
    for a, b in zip(ff.get_weights(), ref.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
