"""The image augmentation kernels (kernels.augment) on CUDA against their CPU twins, under
NUMBA_ENABLE_CUDASIM=1 (or on a GPU): the affine resampling in every fill mode and interpolation, its
atomic transpose, and the contrast / brightness shifts with their gradients."""

import numpy as np
import pytest
from cuda_harness import run_pair  # noqa: I001 - test-local helper module

from kernels import augment as kaug


def _mats(rng, n):
    th, s = rng.uniform(-3, 3, n), rng.uniform(0.6, 1.8, n)
    return np.stack([s * np.cos(th), -s * np.sin(th), rng.uniform(-6, 6, n), s * np.sin(th), s * np.cos(th),
                     rng.uniform(-6, 6, n)], axis=1)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("bilinear", [False, True])
def test_affine_forward_and_backward_cuda(dtype, bilinear):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 5, 6, 2)).astype(dtype)
    g = rng.standard_normal((2, 4, 7, 2)).astype(dtype)  # another output size
    mats = _mats(rng, 2)
    for mode in range(len(kaug.FILL_MODES)):
        for window in (None, (1, 2, 3, 4)):  # the whole image, or a window of it as the source
            run_pair(kaug.affine_forward_cpu, kaug.affine_forward_cuda,
                     lambda mode=mode, w=window: [x.copy(), np.zeros_like(g), mats, bilinear, mode, 0.25, w])
            for acc in (False, True):
                run_pair(kaug.affine_backward_cpu, kaug.affine_backward_cuda,
                         lambda mode=mode, acc=acc, w=window: [g.copy(), mats, np.full_like(x, 0.5), bilinear, mode,
                                                               acc, w])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_contrast_and_brightness_cuda(dtype):
    rng = np.random.default_rng(1)
    x = rng.uniform(0, 255, (3, 4, 5, 2)).astype(dtype)
    g = rng.standard_normal(x.shape).astype(dtype)
    f, d = np.array([0.5, 1.3, 1.9]), np.array([-40.0, 10.0, 90.0])
    run_pair(kaug.contrast_forward_cpu, kaug.contrast_forward_cuda, lambda: [x.copy(), np.zeros_like(x), f, 0.0, 255.0],
             rtol=1e-4, atol=1e-3)
    run_pair(kaug.brightness_forward_cpu, kaug.brightness_forward_cuda,
             lambda: [x.copy(), np.zeros_like(x), d, 0.0, 255.0], rtol=1e-4, atol=1e-3)
    for acc in (False, True):
        run_pair(kaug.contrast_backward_cpu, kaug.contrast_backward_cuda,
                 lambda acc=acc: [x.copy(), g.copy(), f, np.full_like(x, 0.5), 0.0, 255.0, acc], rtol=1e-4, atol=1e-4)
        run_pair(kaug.brightness_backward_cpu, kaug.brightness_backward_cuda,
                 lambda acc=acc: [x.copy(), g.copy(), d, np.full_like(x, 0.5), 0.0, 255.0, acc])
