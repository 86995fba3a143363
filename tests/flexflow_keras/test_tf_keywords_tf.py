"""The TensorFlow calls mapped straight onto keras.ops (tf_compat's _SAME_OPS) take TensorFlow's parameter
names (tf_keywords.py): keras.io's EANet calls tf.reshape(x, shape=...) and tf.transpose(x, perm=...), which
stopped with 'keras.ops.reshape ... does not take these arguments'. Against TensorFlow 2.21, eagerly and in a
model."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import flexflow_keras as keras  # noqa: E402
from flexflow_keras import config, keras_alias  # noqa: E402
from flexflow_keras.errors import ArgumentError  # noqa: E402
from tests.flexflow_keras.tf_compare import check_eager_call  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")
X = np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 7.0
Y = np.linspace(-2.0, 3.0, 24, dtype=np.float32).reshape(2, 3, 4)

CASES = [
    ("reshape", (), {"tensor": X, "shape": (-1, 4)}), ("reshape", (X,), {"shape": [4, 6], "name": "r"}),
    ("transpose", (X,), {"perm": [0, 2, 1]}), ("transpose", (), {"a": X, "perm": (2, 0, 1), "conjugate": False}),
    ("expand_dims", (), {"input": X, "axis": 1}), ("squeeze", (X[:, :1],), {"axis": 1}),
    ("stack", (), {"values": [X, Y], "axis": 1}), ("unstack", (X,), {"axis": 2}),
    ("tile", (X,), {"multiples": [1, 2, 1]}), ("repeat", (X,), {"repeats": 2, "axis": 0}),
    ("reduce_sum", (), {"input_tensor": X, "axis": 1, "keepdims": True}), ("reduce_max", (X,), {"axis": -1}),
    ("math.reduce_variance", (), {"input_tensor": X, "axis": 0}), ("math.reduce_std", (X,), {"axis": 2}),
    ("add", (), {"x": X, "y": Y}), ("math.multiply", (X,), {"y": Y}), ("maximum", (), {"x": X, "y": 0.0}),
    ("greater", (), {"x": X, "y": Y}), ("math.floormod", (), {"x": X, "y": 3.0}),
    ("ones_like", (), {"input": X}), ("zeros", (), {"shape": (2, 3)}), ("stop_gradient", (), {"input": X}),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}({','.join(c[2])})")
def test_tensorflow_keywords_eagerly(case):
    path, args, kwargs = case
    if path == "unstack":
        want, got = tf.unstack(X, axis=2), FFTF.unstack(X, axis=2)
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(np.asarray(g), w.numpy())
        return
    check_eager_call(tf, FFTF, path, args, kwargs, rtol=1e-6, atol=1e-6)


def test_tensorflow_keywords_in_a_model(request):
    request.addfinalizer(config.reset)
    config.set(data_parallel_degree=1)
    inp = keras.Input((3, 4))
    h = FFTF.reshape(inp, shape=(-1, 3, 2, 2))
    h = FFTF.transpose(h, perm=[0, 2, 1, 3])
    out = FFTF.reduce_sum(input_tensor=FFTF.reshape(h, shape=[-1, 12]), axis=-1, keepdims=True)
    got = keras.Model(inp, out).predict(X, verbose=0)
    want = tf.reduce_sum(tf.reshape(tf.transpose(tf.reshape(X, (-1, 3, 2, 2)), perm=[0, 2, 1, 3]), [-1, 12]),
                         axis=-1, keepdims=True)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-6)


def test_what_tensorflow_has_and_keras_ops_not_is_refused():
    with pytest.raises(ArgumentError, match="conjugate"):
        FFTF.transpose(X, perm=[0, 2, 1], conjugate=True)
    with pytest.raises(keras_alias.RawTensorFlowError, match="new_shape"):  # keras.ops' name is not TensorFlow's
        FFTF.reshape(X, new_shape=(-1,))
