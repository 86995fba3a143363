"""TensorFlow's array functions under the runner (tf_array_ops.py): tf.fill, reverse, boolean_mask,
sequence_mask, broadcast_to, roll, rank, size, sort, argsort, meshgrid, linalg.band_part and
nn.embedding_lookup against TensorFlow 2.21: values, dtypes, eager tensors (.numpy()), symbolic calls in
a model, and TensorFlow-only arguments refused."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import flexflow_keras as keras  # noqa: E402
from flexflow_keras import config, keras_alias  # noqa: E402
from flexflow_keras.ops.eager_tensor import EagerTensor  # noqa: E402
from tests.flexflow_keras.tf_compare import check_eager_call, tf_function  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")
X = np.array([[3.0, -1.0, 2.0, 2.0], [0.5, 4.0, -3.0, 0.0], [1.0, 1.0, 7.0, -2.0]], np.float32)
M = np.array([True, False, True])
LENGTHS = np.array([1, 3, 0, 2], np.int32)


CASES = [
    ("fill", ([2, 3], 3.0), {}), ("fill", ((2,), 7), {}), ("fill", ([2, 2], np.float64(1.5)), {}),
    ("fill", ([1, 2], True), {}),
    ("reverse", (X, [1]), {}), ("reverse", (X, [0, 1]), {}), ("reverse", (X,), {"axis": [-1]}),
    ("boolean_mask", (X, M), {}), ("boolean_mask", (X, X > 0), {}),
    ("boolean_mask", (X, np.array([True, False, False, True])), {"axis": 1}),
    ("sequence_mask", (LENGTHS,), {}), ("sequence_mask", (LENGTHS, 5), {}),
    ("sequence_mask", (LENGTHS,), {"maxlen": 4, "dtype": "float32"}),
    ("sequence_mask", (np.array([[1, 2], [0, 3]]), 3), {}),
    ("broadcast_to", (X[0], [2, 4]), {}), ("roll", (X, 1, 1), {}), ("roll", (X, [1, -2], [0, 1]), {}),
    ("rank", (X,), {}), ("size", (X,), {}),
    ("sort", (X,), {}), ("sort", (X,), {"axis": 0, "direction": "DESCENDING"}),
    ("argsort", (X,), {}), ("argsort", (X,), {"direction": "DESCENDING"}),
    ("argsort", (X[0],), {"direction": "DESCENDING", "stable": True}),
    ("argsort", (X[0],), {"stable": True}),
    ("linalg.band_part", (np.ones((4, 4), np.float32), -1, 0), {}),
    ("linalg.band_part", (np.arange(24, dtype=np.float32).reshape(2, 3, 4), 1, 2), {}),
    ("linalg.band_part", (X, 0, -1), {}),
    ("nn.embedding_lookup", (X, np.array([[2, 0], [1, 1]])), {}),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_eager_results_match_tensorflow(case):
    path, args, kwargs = case
    check_eager_call(tf, FFTF, path, args, kwargs)


def test_meshgrid_matches_tensorflow():
    a, b = np.arange(3, dtype=np.float32), np.arange(2, dtype=np.float32)
    for indexing in ("xy", "ij"):
        want, got = tf.meshgrid(a, b, indexing=indexing), FFTF.meshgrid(a, b, indexing=indexing)
        assert len(got) == 2 and all(isinstance(g, EagerTensor) for g in got)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g.numpy(), w.numpy())


def test_size_out_type():
    got, want = FFTF.size(X, out_type=FFTF.int64), tf.size(X, out_type=tf.int64)
    assert got.numpy().dtype == want.dtype.as_numpy_dtype == np.int64 and got.numpy() == want.numpy() == 12


def test_boolean_mask_is_differentiated():
    v, tv = keras.Variable(X), tf.Variable(X)
    with FFTF.GradientTape() as tape:
        loss = FFTF.reduce_sum(FFTF.square(FFTF.boolean_mask(v, X > 0)))
    with tf.GradientTape() as ttape:
        tloss = tf.reduce_sum(tf.square(tf.boolean_mask(tv, X > 0)))
    np.testing.assert_allclose(np.asarray(tape.gradient(loss, v)), ttape.gradient(tloss, tv).numpy())


def test_symbolic_calls_in_a_model(request):
    request.addfinalizer(config.reset)
    config.set(data_parallel_degree=1)
    inp = keras.Input((4,))
    outs = [FFTF.reverse(inp, [1]), FFTF.linalg.band_part(FFTF.expand_dims(inp, 1) * np.ones((4, 1), "float32"), 0, 1),
            FFTF.cast(FFTF.sequence_mask(FFTF.cast(inp[:, 0], "int32"), 3), "float32"), FFTF.roll(inp, 1, 1)]
    model = keras.Model(inp, outs)
    x = np.abs(X)
    wants = [tf.reverse(x, [1]), tf.linalg.band_part(x[:, None, :] * np.ones((4, 1), "float32"), 0, 1),
             tf.cast(tf.sequence_mask(tf.cast(x[:, 0], "int32"), 3), "float32"), tf.roll(x, 1, 1)]
    for got, want in zip(model.predict(x, verbose=0), wants, strict=True):
        np.testing.assert_allclose(got, want.numpy())


def test_refusals_name_the_call():
    with pytest.raises(keras_alias.RawTensorFlowError, match="tf.boolean_mask"):
        FFTF.boolean_mask(keras.Input((3,)), M)
    with pytest.raises(keras_alias.RawTensorFlowError, match="tf.sequence_mask"):
        FFTF.sequence_mask(keras.Input((3,))[:, 0])
    with pytest.raises(keras_alias.RawTensorFlowError, match="max_norm"):  # an argument only TensorFlow's has
        FFTF.nn.embedding_lookup(X, [0], max_norm=1.0)
    with pytest.raises(keras_alias.RawTensorFlowError, match="direction"):
        FFTF.sort(X, direction="UP")


def test_python_lists_convert_as_tensorflow_converts_them():
    for path, args in [("reverse", ([1.0, 2.0, 3.0], [0])), ("boolean_mask", ([1, 2, 3], [True, False, True])),
                       ("sequence_mask", ([1, 2],)), ("roll", ([1, 2, 3], 1, 0)), ("sort", ([3.0, 1.0, 2.0],)),
                       ("argsort", ([3.0, 1.0, 2.0],)), ("broadcast_to", ([1.0, 2.0], [2, 2])),
                       ("linalg.band_part", ([[1.0, 2.0], [3.0, 4.0]], 0, 0))]:
        want, got = tf_function(tf, path)(*args), tf_function(FFTF, path)(*args)
        assert got.numpy().dtype == want.dtype.as_numpy_dtype, path
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_ensure_shape_passes_or_raises_as_tensorflow():
    from flexflow_keras.tf_compat import InvalidArgumentError

    for shape in ([3, 4], [None, 4], [3, None], (None, None), None):
        got = FFTF.ensure_shape(X, shape)
        np.testing.assert_array_equal(np.asarray(got), tf.ensure_shape(X, shape).numpy())
    for shape in ([3, 5], [None], [3, 4, 1]):
        with pytest.raises(tf.errors.InvalidArgumentError) as want:
            tf.ensure_shape(X, shape)
        with pytest.raises(InvalidArgumentError) as got:
            FFTF.ensure_shape(X, shape)
        expected = str(want.value).split("} ")[-1].split(" [Op")[0]
        assert expected in str(got.value)
    inp = keras.Input((4,))
    assert FFTF.ensure_shape(inp, [None, 4]) is inp and FFTF.ensure_shape(inp, [32, 4]) is inp
    with pytest.raises(InvalidArgumentError, match=r"\[\?,4\] is not compatible with expected shape \[\?,3\]"):
        FFTF.ensure_shape(inp, [None, 3])


def test_meshgrid_of_python_lists_converts_as_tensorflow():
    for args in [([1, 2], [3, 4, 5]), ([1.0, 2.0], [3.0])]:
        want, got = tf.meshgrid(*args), FFTF.meshgrid(*args)
        for g, w in zip(got, want, strict=True):
            assert g.numpy().dtype == w.dtype.as_numpy_dtype
            np.testing.assert_array_equal(g.numpy(), w.numpy())
