"""tf.linalg.set_diag of a vector is TensorFlow's InvalidArgumentError ('input must be at least 2-dim'),
not Python's 'not enough values to unpack'."""

import numpy as np
import pytest

from flexflow_keras import tf_linalg_ops
from flexflow_keras.tf_compat import InvalidArgumentError


def test_a_vector_input_is_invalid_argument():
    with pytest.raises(InvalidArgumentError, match="at least 2-dim.*received shape \\(3,\\)"):
        tf_linalg_ops.set_diag(np.zeros(3, "float32"), np.ones(1, "float32"))
