"""tf.math.top_k / tf.nn.top_k under the runner (keras.io's miniature GPT samples from
``tf.math.top_k(logits, k=self.k, sorted=True)``; it was refused as raw TensorFlow): TensorFlow's defaults
(k=1), its TopKV2 result and index_type, ties broken by the lower index, against TensorFlow 2.21."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import flexflow_keras as keras  # noqa: E402
from flexflow_keras import config, keras_alias  # noqa: E402
from flexflow_keras.errors import ArgumentError  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")
X = np.array([[1.0, 3.0, 3.0, 0.5, -2.0], [0.0, 0.0, 7.0, 7.0, 7.0]])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("path", ["math", "nn"])
def test_values_indices_and_tuple_match_tf(dtype, path):
    x = X.astype(dtype)
    for kw in ({}, {"k": 3}, {"k": 2, "sorted": True}):
        want = getattr(tf, path).top_k(x, **kw)
        got = getattr(FFTF, path).top_k(x, **kw)
        assert type(got).__name__ == "TopKV2" and got._fields == ("values", "indices")
        assert np.asarray(got.values).dtype == want.values.dtype
        np.testing.assert_array_equal(np.asarray(got.values), want.values.numpy())
        assert np.asarray(got.indices).dtype == np.int32
        np.testing.assert_array_equal(np.asarray(got.indices), want.indices.numpy())
    values, indices = FFTF.math.top_k(x[0], k=2, index_type=FFTF.int64)
    assert np.asarray(indices).dtype == tf.math.top_k(x[0], 2, index_type=tf.int64).indices.dtype == np.int64
    with pytest.raises(ArgumentError, match="index_type"):
        FFTF.math.top_k(x, 2, index_type="float32")


def test_top_k_in_a_model(request):
    request.addfinalizer(config.reset)
    config.set(data_parallel_degree=1)
    inp = keras.Input((5,))
    model = keras.Model(inp, FFTF.math.top_k(inp * 2.0, k=2).values)
    want = tf.math.top_k(X.astype("float32") * 2.0, k=2).values.numpy()
    np.testing.assert_array_equal(model.predict(X.astype("float32"), verbose=0), want)
