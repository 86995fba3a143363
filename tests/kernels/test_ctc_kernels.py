"""The CTC kernels (kernels/ctc.py) against a float64 brute force over every alignment, and their CUDA twin
against the CPU under the simulator."""

import itertools

import numpy as np
import pytest
from cuda_launch_log import run_simulated  # tests/cuda_launch_log.py

from kernels import ctc


def _brute_loss(x, labels, blank, probs):
    """-log of the summed probability of every frame path that collapses to `labels` (float64)."""
    logits = np.log(x + 1e-7) if probs else x
    p = np.exp(logits - logits.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    total = 0.0
    for path in itertools.product(range(x.shape[1]), repeat=x.shape[0]):
        merged = [c for i, c in enumerate(path) if i == 0 or c != path[i - 1]]
        if [c for c in merged if c != blank] == list(labels):
            total += np.prod([p[t, c] for t, c in enumerate(path)])
    return -np.log(total)


@pytest.mark.parametrize("labels, blank, probs", [([1, 1], 0, False), ([2, 1, 2], 0, False), ([], 0, False),
                                                  ([0, 1], 2, True), ([1], 2, True)])
def test_loss_and_gradient_match_every_alignment(labels, blank, probs):
    r = np.random.RandomState(len(labels) + blank)
    frames = 5
    x = r.randn(1, frames, 3)
    if probs:
        x = np.exp(x) / np.exp(x).sum(-1, keepdims=True)
    ids = np.array([labels + [0] * (3 - len(labels))])
    loss, grad = np.empty(1), np.empty_like(x)
    assert ctc.ctc_forward_cpu(x, ids, [len(labels)], [frames], blank, probs, 1e-7, loss, grad) == -1
    assert loss[0] == pytest.approx(_brute_loss(x[0], labels, blank, probs), rel=1e-9)
    h = 1e-6
    for t, k in [(0, 0), (2, 1), (4, 2)]:
        up, down = x.copy(), x.copy()
        up[0, t, k] += h
        down[0, t, k] -= h
        numeric = (_brute_loss(up[0], labels, blank, probs) - _brute_loss(down[0], labels, blank, probs)) / (2 * h)
        assert grad[0, t, k] == pytest.approx(numeric, rel=1e-5, abs=1e-6)


def test_impossible_alignments_short_frames_and_bad_labels():
    x = np.random.RandomState(1).randn(2, 4, 3).astype(np.float32)
    loss, grad = np.empty(2, np.float32), np.empty_like(x)
    # three equal labels need five frames; the second sample reads only 2 of its 4 frames
    assert ctc.ctc_forward_cpu(x, np.array([[1, 1, 1], [2, 0, 0]]), [3, 1], [4, 2], 0, False, 1e-7, loss, grad) == -1
    assert np.isinf(loss[0]) and np.isfinite(loss[1])
    softmax = np.exp(x[0]) / np.exp(x[0]).sum(-1, keepdims=True)
    np.testing.assert_allclose(grad[0], softmax, rtol=1e-5)  # no valid path: the softmax, as TensorFlow's
    assert not grad[1, 2:].any()
    assert ctc.ctc_forward_cpu(x, np.array([[1, 0, 0], [3, 0, 0]]), [1, 1], [4, 4], 0, False, 1e-7, loss, grad) == 1
    dx = np.ones_like(x)
    ctc.ctc_backward_cpu(grad, np.array([2.0, 0.5], np.float32), dx, accumulate=True)
    np.testing.assert_allclose(dx[0], 1 + 2 * grad[0], rtol=1e-6)


def test_cuda_twin_matches_the_cpu(tmp_path):
    out = run_simulated("""
import numpy as np
from numba import cuda
from kernels import ctc
r = np.random.RandomState(0)
x = r.rand(3, 6, 4).astype(np.float32) + 0.05
labels = np.array([[1, 2, 2], [3, 1, 0], [2, 0, 0]], np.int64)
lab, frames = np.array([3, 2, 1], np.int64), np.array([6, 5, 4], np.int64)
loss, grad = np.empty(3, np.float32), np.empty_like(x)
assert ctc.ctc_forward_cpu(x, labels, lab, frames, 0, True, 1e-7, loss, grad) == -1
d_loss, d_grad = cuda.device_array(3, np.float32), cuda.device_array(x.shape, np.float32)
assert ctc.ctc_forward_cuda(cuda.to_device(x), cuda.to_device(labels), cuda.to_device(lab), cuda.to_device(frames),
                            0, True, 1e-7, d_loss, d_grad) == -1
np.testing.assert_allclose(d_loss.copy_to_host(), loss, rtol=1e-5)
np.testing.assert_allclose(d_grad.copy_to_host(), grad, rtol=1e-4, atol=1e-6)
g = np.array([1.0, 0.5, 2.0], np.float32)
dx = np.zeros_like(x)
ctc.ctc_backward_cpu(grad, g, dx)
d_dx = cuda.to_device(np.zeros_like(x))
ctc.ctc_backward_cuda(d_grad, cuda.to_device(g), d_dx)
np.testing.assert_allclose(d_dx.copy_to_host(), dx, rtol=1e-4, atol=1e-6)
bad = ctc.ctc_forward_cuda(cuda.to_device(x), cuda.to_device(np.array([[1, 0, 0]] * 3)), cuda.to_device(lab),
                           cuda.to_device(frames), 0, True, 1e-7, d_loss, d_grad)
print("bad", bad)
""", tmp_path)
    assert "bad 1" in out or "bad 0" in out
