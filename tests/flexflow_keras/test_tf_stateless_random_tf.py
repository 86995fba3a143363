"""tf.random.stateless_uniform / normal / truncated_normal / categorical under the runner
(tf_stateless_random.py) against TensorFlow 2.21: TensorFlow's own Philox values for several seeds, shapes
and dtypes (uniforms and integers exactly, normals to a few float32 ulps), its dtypes, shapes and errors."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from flexflow_keras import keras_alias  # noqa: E402
from flexflow_keras.keras_alias import RawTensorFlowError  # noqa: E402
from flexflow_keras.tf_compat import InvalidArgumentError  # noqa: E402
from tests.flexflow_keras.tf_compare import check_eager_call  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")
SEEDS = [[1, 2], [0, 0], [12345, -7], np.array([2**40 + 3, 9], np.int64), np.array([-1, 5], np.int32)]
SHAPES = [(), (1,), (7,), (3, 5), (2, 3, 4)]


@pytest.mark.parametrize("seed", SEEDS, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("kwargs", [{}, {"dtype": "float64"}, {"dtype": "float16"}, {"minval": -2.0, "maxval": 3.5},
                                    {"minval": -3, "maxval": 17, "dtype": "int32"},
                                    {"minval": -(2**33), "maxval": 2**34 + 1, "dtype": "int64"}], ids=str)
def test_uniform_is_tensorflows(seed, shape, kwargs):
    check_eager_call(tf, FFTF, "random.stateless_uniform", (shape, seed), kwargs)


@pytest.mark.parametrize("path", ["random.stateless_normal", "random.stateless_truncated_normal"])
@pytest.mark.parametrize("seed", SEEDS, ids=str)
@pytest.mark.parametrize("shape", SHAPES + [(9, 11)], ids=str)
@pytest.mark.parametrize("kwargs", [{}, {"dtype": "float64"}, {"dtype": "float16"},
                                    {"mean": 1.5, "stddev": 0.25}], ids=str)
def test_normals_are_tensorflows(path, seed, shape, kwargs):
    tol = {"float64": 1e-12, "float16": 1e-3}.get(kwargs.get("dtype"), 5e-6)  # sin, cos, log: NumPy's, not libm's
    check_eager_call(tf, FFTF, path, (shape, seed), kwargs, rtol=tol, atol=tol)


@pytest.mark.parametrize("seed", SEEDS, ids=str)
@pytest.mark.parametrize("logits", [np.log([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]]).astype(np.float32),
                                    np.array([[0.0, -np.inf, 1.0, 2.0]], np.float32),
                                    np.random.default_rng(0).normal(size=(6, 10))], ids=lambda a: str(a.shape))
@pytest.mark.parametrize("kwargs", [{}, {"dtype": "int32"}], ids=str)
def test_categorical_is_tensorflows(seed, logits, kwargs):
    check_eager_call(tf, FFTF, "random.stateless_categorical", (logits, 8, seed), kwargs)


@pytest.mark.parametrize("call, args, kwargs, error", [
    ("stateless_uniform", ((2,), [1, 2, 3]), {}, InvalidArgumentError),
    ("stateless_uniform", ((2,), [1.0, 2.0]), {}, InvalidArgumentError),
    ("stateless_uniform", ((2,), [1, 2]), {"dtype": "int32"}, ValueError),
    ("stateless_uniform", ((2,), [1, 2]), {"minval": 3, "maxval": 3, "dtype": "int32"}, InvalidArgumentError),
    ("stateless_normal", ((2,), [1, 2]), {"dtype": "int32"}, (ValueError, TypeError)),
    ("stateless_categorical", (np.zeros(3, np.float32), 2, [1, 2]), {}, InvalidArgumentError),
])
def test_errors_are_tensorflows(call, args, kwargs, error):
    with pytest.raises(tf.errors.InvalidArgumentError if error is InvalidArgumentError else error):
        getattr(tf.random, call)(*args, **kwargs)
    with pytest.raises(error):
        getattr(FFTF.random, call)(*args, **kwargs)


def test_unmapped_variants_are_refused():
    with pytest.raises(RawTensorFlowError, match="threefry"):
        FFTF.random.stateless_uniform((2,), [1, 2], alg="threefry")
    # full-range integers (minval=maxval=None) are mapped since; test_tf_random_split_tf.py checks their values
