"""TensorFlow's counting and ordering functions under the runner (tf_count_ops.py) against TensorFlow 2.21:
tf.unique / unique_with_counts (namedtuples, first-appearance order, out_idx), tf.searchsorted (N-D, side,
out_type), tf.math.bincount (weights, minlength, maxlength, dtype, axis, binary_output),
tf.math.confusion_matrix and tf.math.in_top_k (ties, non-finite, out of range): values, dtypes, TensorFlow's
errors, symbolic calls in a model, and refusals."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import flexflow_keras as keras  # noqa: E402
from flexflow_keras import config, keras_alias  # noqa: E402
from flexflow_keras.tf_compat import InvalidArgumentError  # noqa: E402
from tests.flexflow_keras.tf_compare import check_eager_call, tf_function  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")
SEQ = np.array([[1.0, 3.0, 3.0, 7.0], [0.0, 2.0, 4.0, 4.0]], np.float32)
VALS = np.array([[3.0, 0.0, 8.0], [4.0, 1.0, 5.0]], np.float32)
PRED = np.array([[0.1, 0.5, 0.5, 0.2], [3.0, np.nan, 1.0, 2.0], [np.inf, 1.0, 2.0, 0.0]], np.float32)


CASES = [
    ("searchsorted", (SEQ, VALS), {}), ("searchsorted", (SEQ, VALS), {"side": "right"}),
    ("searchsorted", (SEQ[0], VALS[0]), {"out_type": "int64"}), ("searchsorted", ([1, 2, 3], [[2, 5]]), {}),
    ("math.bincount", ([1, 1, 3],), {}), ("math.bincount", ([1, 1, 3],), {"weights": [0.5, 1.0, 2.0]}),
    ("math.bincount", ([1, 1, 3],), {"weights": np.array([0.5, 1.0, 2.0]), "dtype": "float32"}),
    ("math.bincount", ([1, 1, 3],), {"minlength": 6}), ("math.bincount", ([1, 1, 3],), {"minlength": 6, "maxlength": 2}),
    ("math.bincount", (np.array([[1, 1], [3, 0]]),), {"axis": -1}),
    ("math.bincount", (np.array([[1, 1], [3, 0]]),), {"binary_output": True}),
    ("math.bincount", ([1, 1, 3],), {"dtype": "int64"}), ("math.bincount", (np.array([], np.int32),), {"minlength": 2}),
    ("math.confusion_matrix", ([1, 2, 0], [1, 1, 0]), {}),
    ("math.confusion_matrix", ([1, 2, 0], [1, 1, 0]), {"num_classes": 4, "weights": [0.5, 1.0, 2.0],
                                                       "dtype": "float32"}),
    ("math.confusion_matrix", (np.array([1, 2, 0], np.int64), np.array([3, 1, 0])), {}),
    ("math.in_top_k", ([1, 1, 0], PRED, 1), {}), ("math.in_top_k", ([2, 0, 0], PRED, 2), {}),
    ("nn.in_top_k", (np.array([3, 2, 7]), PRED, 3), {}), ("math.in_top_k", ([-1, 3, 1], PRED, 4), {}),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_eager_results_match_tensorflow(case):
    path, args, kwargs = case
    check_eager_call(tf, FFTF, path, args, kwargs)


@pytest.mark.parametrize("x", [[3, 1, 3, 2, 1], np.array([2.5, -1.0, 2.5], np.float32), np.array([7, 7], np.int64)])
def test_unique_matches_tensorflow(x):
    for path, kwargs in (("unique", {}), ("unique_with_counts", {}), ("unique", {"out_idx": "int64"}),
                         ("unique_with_counts", {"out_idx": tf.int64})):
        want = tf_function(tf, path)(x, **kwargs)
        got = tf_function(FFTF, path)(x, **({"out_idx": "int64"} if kwargs else {}))
        assert type(got).__name__ == type(want).__name__ and got._fields == want._fields
        for g, w in zip(got, want, strict=True):
            assert g.numpy().dtype == w.dtype.as_numpy_dtype
            np.testing.assert_array_equal(g.numpy(), w.numpy())
    y, idx = FFTF.unique(x)
    np.testing.assert_array_equal(np.asarray(y)[np.asarray(idx)], np.asarray(x))


def test_tensorflows_errors():
    with pytest.raises(InvalidArgumentError, match="unique expects a 1D vector"):
        FFTF.unique([[1, 2]])
    with pytest.raises(InvalidArgumentError, match="non-negative"):
        FFTF.math.bincount([1, -1, 3])
    with pytest.raises(InvalidArgumentError, match="LowerBound.*float tensor but is a int32 tensor"):
        FFTF.searchsorted([1.0, 2.0, 3.0], [2, 5])
    with pytest.raises(InvalidArgumentError, match="`labels` contains negative values"):
        FFTF.math.confusion_matrix([1, -2, 0], [1, 1, 0])
    with pytest.raises(InvalidArgumentError, match="`labels` out of bound"):
        FFTF.math.confusion_matrix([1, 2, 0], [1, 1, 0], num_classes=2)
    with pytest.raises(InvalidArgumentError, match="mutually exclusive"):
        FFTF.math.bincount([1, 2], weights=[1.0, 1.0], binary_output=True)


def test_symbolic_calls_in_a_model(request):
    request.addfinalizer(config.reset)
    config.set(data_parallel_degree=1)
    pred, targets = keras.Input((4,)), keras.Input((), dtype="int32")
    hit = FFTF.cast(FFTF.math.in_top_k(targets, pred, 2), "float32")
    where = FFTF.cast(FFTF.searchsorted(pred, FFTF.expand_dims(FFTF.cast(targets, "float32"), -1), side="right"),
                      "float32")
    model = keras.Model([pred, targets], [hit, where])
    p = np.array([[0.1, 0.2, 0.5, 0.5], [0.0, 1.0, 2.0, 3.0], [1.0, 1.0, 1.0, 1.0]], np.float32)  # sorted rows
    t = np.array([3, 2, 1], np.int32)
    got = model.predict([p, t], verbose=0)
    np.testing.assert_array_equal(got[0], tf.cast(tf.math.in_top_k(t, p, 2), "float32").numpy())
    want = tf.searchsorted(p, t[:, None].astype("float32"), side="right")
    np.testing.assert_array_equal(got[1], tf.cast(want, "float32").numpy())


def test_refusals_name_the_call():
    with pytest.raises(keras_alias.RawTensorFlowError, match="tf.unique"):
        FFTF.unique(keras.Input((3,))[:, 0])
    with pytest.raises(keras_alias.RawTensorFlowError, match="tf.math.bincount"):
        FFTF.math.bincount(keras.Input((3,), dtype="int32"))
    with pytest.raises(keras_alias.RawTensorFlowError, match="tf.math.bincount.*axis"):
        FFTF.math.bincount(np.ones((2, 2, 2), np.int32), axis=-1)
    with pytest.raises(keras_alias.RawTensorFlowError, match="tf.searchsorted.*side"):
        FFTF.searchsorted([1, 2], [1], side="middle")
    with pytest.raises(keras_alias.RawTensorFlowError, match="tf.math.confusion_matrix"):
        FFTF.math.confusion_matrix([1], [1], dtype="int32", axis=0)
