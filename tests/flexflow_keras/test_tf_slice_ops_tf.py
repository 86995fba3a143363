"""tf.slice and tf.strided_slice under the runner (tf_array_ops.py) against TensorFlow 2.21: values, dtypes,
shapes, every mask, TensorFlow's InvalidArgumentErrors, gradients through our GradientTape, and symbolic
calls in a model (the batch axis whole; anything else refused)."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import flexflow_keras as keras  # noqa: E402
from flexflow_keras import config, keras_alias  # noqa: E402
from flexflow_keras.tf_compat import InvalidArgumentError  # noqa: E402
from tests.flexflow_keras.tf_compare import check_eager_call  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")
X = np.arange(60, dtype=np.float32).reshape(3, 4, 5)

CASES = [
    ("slice", (X, [1, 0, 2], [2, -1, 3]), {}), ("slice", (X, [0, 1, 0], [-1, 2, -1]), {}),
    ("slice", (X.astype(np.int64), [2, 3, 4], [1, 1, 1]), {}), ("slice", ([[1, 2, 3]], [0, 1], [1, -1]), {}),
    ("strided_slice", (X, [0, 1], [2, 4], [1, 2]), {}),
    ("strided_slice", (X, [0, 3, 0], [0, 0, 5], [1, -1, 2]), {"begin_mask": 1, "end_mask": 3}),
    ("strided_slice", (X, [1, 0], [2, 0], [1, 1]), {"shrink_axis_mask": 1, "ellipsis_mask": 2}),
    ("strided_slice", (X, [0, 0, 2], [0, 0, 3], [1, 1, 1]),
     {"new_axis_mask": 2, "shrink_axis_mask": 4, "begin_mask": 1, "end_mask": 1}),
    ("strided_slice", (X, [-1], [0], [-1]), {"end_mask": 1}),
    ("strided_slice", (X, [0, -2], [0, 100], [1, 1]), {"ellipsis_mask": 1}),
    ("strided_slice", (X, [-10, 1], [10, -1]), {}),
    ("strided_slice", ([[1.0, 2.0, 3.0]], [0, 1], [1, 3]), {"shrink_axis_mask": 1}),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_eager_results_match_tensorflow(case):
    path, args, kwargs = case
    check_eager_call(tf, FFTF, path, args, kwargs)


@pytest.mark.parametrize("path,args,kwargs", [
    ("slice", (X, [0, 0, 4], [1, 1, 2]), {}), ("slice", (X, [0, 0], [1, 1]), {}), ("slice", (X, [4, 0, 0], [1, 1, 1]), {}),
    ("strided_slice", (X, [5], [6]), {"shrink_axis_mask": 1}), ("strided_slice", (X, [0], [1], [0]), {}),
])
def test_errors_are_tensorflows(path, args, kwargs):
    with pytest.raises(tf.errors.InvalidArgumentError) as want:
        getattr(tf, path)(*args, **kwargs)
    with pytest.raises(InvalidArgumentError) as got:
        getattr(FFTF, path)(*args, **kwargs)
    assert str(want.value).split("} ")[-1].split(" [Op")[0] in str(got.value)


def test_gradients_match_tensorflow():
    v, tv = keras.Variable(X), tf.Variable(X)
    with FFTF.GradientTape() as tape:
        loss = FFTF.reduce_sum(FFTF.square(FFTF.slice(v, [1, 0, 1], [2, -1, 3]))) + FFTF.reduce_sum(
            FFTF.strided_slice(v, [0, 3], [0, 0], [1, -2], begin_mask=1, end_mask=1) * 3.0)
    with tf.GradientTape() as ttape:
        tloss = tf.reduce_sum(tf.square(tf.slice(tv, [1, 0, 1], [2, -1, 3]))) + tf.reduce_sum(
            tf.strided_slice(tv, [0, 3], [0, 0], [1, -2], begin_mask=1, end_mask=1) * 3.0)
    np.testing.assert_allclose(np.asarray(tape.gradient(loss, v)), ttape.gradient(tloss, tv).numpy())


def test_symbolic_calls_in_a_model(request):
    request.addfinalizer(config.reset)
    config.set(data_parallel_degree=1)
    inp = keras.Input((4, 5))
    outs = [FFTF.slice(inp, [0, 1, 2], [-1, 2, -1]),
            FFTF.strided_slice(inp, [0, 0, 1], [0, 4, 5], [1, 2, 2], begin_mask=1, end_mask=1),
            FFTF.strided_slice(inp, [0, 3], [0, 0], shrink_axis_mask=2, ellipsis_mask=1),
            FFTF.strided_slice(inp, [0, 0, 0], [0, 0, 2], [1, 1, 1], begin_mask=3, end_mask=3, new_axis_mask=2)]
    model = keras.Model(inp, outs)
    wants = [tf.slice(X, [0, 1, 2], [-1, 2, -1]),
             tf.strided_slice(X, [0, 0, 1], [0, 4, 5], [1, 2, 2], begin_mask=1, end_mask=1),
             tf.strided_slice(X, [0, 3], [0, 0], shrink_axis_mask=2, ellipsis_mask=1),
             tf.strided_slice(X, [0, 0, 0], [0, 0, 2], [1, 1, 1], begin_mask=3, end_mask=3, new_axis_mask=2)]
    for got, want in zip(model.predict(X, verbose=0), wants, strict=True):
        np.testing.assert_array_equal(got, want.numpy())


def test_slicing_a_models_batch_axis_is_refused():
    inp = keras.Input((4,))
    with pytest.raises(keras_alias.RawTensorFlowError, match=r"tf\.slice: .*batch axis whole"):
        FFTF.slice(inp, [1, 0], [-1, 2])
    with pytest.raises(keras_alias.RawTensorFlowError, match=r"tf\.strided_slice: .*batch axis whole"):
        FFTF.strided_slice(inp, [0, 1], [2, 3])
    with pytest.raises(keras_alias.RawTensorFlowError, match=r"tf\.strided_slice: .*batch axis whole"):
        FFTF.strided_slice(inp, [0, 0], [0, 2], new_axis_mask=1)
