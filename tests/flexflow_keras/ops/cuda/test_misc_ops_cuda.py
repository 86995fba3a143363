"""The misc layers' ops with backend "cuda" (device arrays, under the simulator) against backend "cpu"."""

import numpy as np
import pytest
from test_ops_cuda import check_cuda, r

from flexflow_keras.ops.base import KernelContext
from flexflow_keras.ops.einsum_dense import ProjectionOp
from flexflow_keras.ops.encoding import CategoryEncodingOp
from flexflow_keras.ops.noise import ActivityRegularizationOp, AlphaDropoutOp, GaussianNoiseOp


@pytest.mark.parametrize("multiplicative", [False, True])
def test_gaussian_noise(multiplicative):
    check_cuda(GaussianNoiseOp(0.7, 5, multiplicative), [r(3, 2, 4)], training=True)
    check_cuda(GaussianNoiseOp(0.7, 5, multiplicative), [r(3, 4)], training=False)


def test_alpha_dropout():
    check_cuda(AlphaDropoutOp(0.4, 2), [r(4, 5)], training=True)
    check_cuda(AlphaDropoutOp(0.4, 2, (None, 1, 3)), [r(3, 2, 3)], training=True)


def test_activity_regularization():
    check_cuda(ActivityRegularizationOp(0.2, 0.5), [r(3, 4)], training=True)


@pytest.mark.parametrize("mode,ids", [("one_hot", [[1], [4], [0]]), ("multi_hot", [[1, 1, 3], [0, 4, 4]]),
                                      ("count", [[1, 1, 3], [0, 4, 4]])])
def test_category_encoding(mode, ids):
    check_cuda(CategoryEncodingOp(5, mode), [np.array(ids)], grad=False)


def test_category_encoding_bad_id():
    from numba import cuda

    from kernels.gpu import checks

    op = CategoryEncodingOp(5, "count")
    out = cuda.to_device(np.zeros((2, 5), np.float32))
    # the bad id stays on the device (kernels/gpu/checks.py) until values are read
    op.forward(KernelContext(backend="cuda"), [cuda.to_device(np.array([[1, 2, 3], [4, 9, 0]]))], [], [out], [], [])
    with pytest.raises(ValueError, match="id 9 at flat position 4"):
        checks.raise_failures()


@pytest.mark.parametrize("n,xshape,kshape", [(1, (2, 3, 4), (4, 2, 3)), (2, (2, 3, 2, 3), (2, 3, 4))])
def test_projection(n, xshape, kshape):
    check_cuda(ProjectionOp(n), [r(*xshape)], [r(*kshape), r(*kshape[n:])])
